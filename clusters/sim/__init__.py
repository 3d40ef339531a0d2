"""Simulated member clusters: a Kubernetes API server plus a cut-down control plane.

Each simulated cluster is an aiohttp app over an `ObjectStore` (`store.py`), served on its
own loopback port so `kubernetes_asyncio` and kubectl reach it exactly as they reach a real
cluster. This package stands alone: it imports nothing from `federation` or `policies`.
"""

__all__: list[str] = []
