"""Member connector over the Kubernetes API: the same code for real and simulated members.

`kubeconfig` turns a Connection (path or inline, optional context) into a client
configuration; `transport` sends every request through kubernetes_asyncio's ApiClient with
a timeout, retries and error translation; `connector` is the `clusters.member.Member`
implementation the controllers use.
"""

__all__ = ["connector", "kubeconfig", "transport"]
