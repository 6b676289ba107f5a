"""The web chat widget page: `GET /chat` and its assets under `/chat/static/`.

The page is plain HTML, CSS and JavaScript shipped inside the package (`webchat/static/`), with
no build step and no third-party resources. It speaks the websocket protocol described in
`gateway.webchat.routes`, with a visitor id it asks of `POST /webchat/visitors` (same origin,
allowed by `connect-src 'self'`) and keeps in localStorage.

Headers: the page is revalidated on every load (`Cache-Control: no-cache`; the file response
answers conditional requests with 304), and a Content-Security-Policy allows scripts, styles
and connections to this origin only (plus the websocket to this host). `frame-ancestors` is
deliberately left open: the widget is meant to be framed by the customer's own site.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Handler

STATIC_DIR: Final = Path(__file__).parent / "static"
PAGE: Final = "chat.html"
ASSET_TYPES: Final = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
_ASSET_NAME: Final = re.compile(r"^[a-z0-9][a-z0-9_-]*\.(?:js|css|svg)$")
# A Host header is only echoed into the policy when it is a plain host[:port].
_HOST: Final = re.compile(r"^[A-Za-z0-9.-]+(?::[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?$")


def content_security_policy(host: str | None) -> str:
    """Self only; `connect-src` names the websocket of `host` too, for browsers whose `'self'`
    does not cover ws:// and wss://."""
    connect = ["'self'"]
    if host and _HOST.match(host):
        connect += [f"ws://{host}", f"wss://{host}"]
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            f"connect-src {' '.join(connect)}",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )


def _common_headers() -> dict[str, str]:
    return {
        "Cache-Control": "no-cache",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }


async def chat_page(request: web.Request) -> web.StreamResponse:
    headers = _common_headers()
    headers["Content-Type"] = "text/html; charset=utf-8"
    headers["Content-Security-Policy"] = content_security_policy(request.host)
    return web.FileResponse(STATIC_DIR / PAGE, headers=headers)


def static_assets(directory: Path = STATIC_DIR) -> dict[str, Path]:
    """The servable assets by name (read once when the app is built, not per request)."""
    return {
        path.name: path
        for path in directory.iterdir()
        if _ASSET_NAME.match(path.name) and path.is_file()
    }


def asset_handler(assets: dict[str, Path]) -> Handler:
    async def chat_asset(request: web.Request) -> web.StreamResponse:
        path = assets.get(request.match_info["name"])
        if path is None:
            raise web.HTTPNotFound()
        headers = _common_headers()
        headers["Content-Type"] = ASSET_TYPES[path.suffix]
        return web.FileResponse(path, headers=headers)

    return chat_asset


def add_routes(app: web.Application) -> None:
    app.router.add_get("/chat", chat_page)
    app.router.add_get("/chat/static/{name}", asset_handler(static_assets()))
