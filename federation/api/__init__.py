"""The controller's REST API (aiohttp): objects, watch streams, apply, health, OpenAPI.

Every CLI command that changes the federation and the dashboard speak to this API; it
stores through the registry and never reaches a member cluster itself.
"""

__all__ = ["app"]
