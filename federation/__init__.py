"""fedctl's controller: registry, scheduling, propagation, quota, failover, API and CLI.

The package is layered (docs/architecture.md, enforced by `make lint`): the API and CLI sit
on the runtime, which runs the controllers, which read through the cache and queues, which
sit on the registry and the member connectors.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
