"""Routes for the dashboard: `GET /` (the page) and `GET /ui/<asset>` (its script and style).

Fed by the files in `static/`; feeds the browser. Only the named assets are served (no
directory listing, no path from the request reaches the file system), with a strict
Content-Security-Policy: scripts, styles and requests go to this origin only, so nothing
is ever loaded from a CDN and an injected string cannot run as script.

Why these paths need no token: the page holds no data; every call it makes to the API
carries the bearer token the user pasted, so authentication applies there.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

__all__ = ["PUBLIC_PATHS", "routes"]

STATIC = Path(__file__).resolve().parent / "static"
PUBLIC_PATHS = ("/", "/ui/")
_ASSETS = {
    "index.html": "text/html",
    "app.js": "text/javascript",
    "api.js": "text/javascript",
    "dom.js": "text/javascript",
    "drills.js": "text/javascript",
    "editor.js": "text/javascript",
    "views.js": "text/javascript",
    "app.css": "text/css",
}
_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        " connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
}


def _asset(name: str) -> web.Response:
    ctype = _ASSETS.get(name)
    if ctype is None:
        raise web.HTTPNotFound(text=f"no dashboard asset {name!r}")
    body = (STATIC / name).read_bytes()
    return web.Response(body=body, content_type=ctype, charset="utf-8", headers=_HEADERS)


async def _index(_: web.Request) -> web.Response:
    return _asset("index.html")


async def _static(request: web.Request) -> web.Response:
    return _asset(request.match_info["name"])


def routes() -> list[web.RouteDef]:
    """The dashboard's routes, for `build_app` to add beside the API."""
    return [web.get("/", _index), web.get("/ui/{name}", _static)]
