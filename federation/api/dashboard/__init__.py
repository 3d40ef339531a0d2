"""The dashboard the controller serves at `/`: static pages that speak only to the REST API.

Fed by nothing at build time (plain files, no front-end build step); feeds the browser,
which then reads the same `/apis/fedctl.io/v1alpha1/...` routes as the CLI and follows
them on one multiplexed watch per tab (`federation.api.watch`: a browser's six connections
per host are shared by all its tabs).
"""

from federation.api.dashboard.routes import PUBLIC_PATHS, routes

__all__ = ["PUBLIC_PATHS", "routes"]
