"""The web chat widget page: `GET /chat` and its assets under `/chat/static/`.

The page is plain HTML, CSS and JavaScript shipped inside the package (`webchat/static/`), with
no build step and no third-party resources. It speaks the websocket protocol described in
`gateway.webchat.routes`, with a visitor id it asks of `POST /webchat/visitors` (same origin,
allowed by `connect-src 'self'`) and keeps in localStorage.

Who may frame it: `RELAYDESK_WEBCHAT_ALLOWED_ORIGINS`. Whoever frames the widget sees nothing
of it, but may hand it an identity token, and what the visitor then types is stored under that
account. So `frame-ancestors` names this origin and the listed ones only (none by default), and
the same list is rendered into the page (`<meta name="relaydesk-allowed-origins">`): the script
takes a token posted by its parent only from one of them, and tells only them it is ready.

Headers: the page is rendered once when the app is built and revalidated on every load
(`Cache-Control: no-cache`, answered with 304 while its ETag holds); a Content-Security-Policy
allows scripts, styles and connections to this origin only (plus the websocket to this host).
"""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Handler

from gateway.keys import SETTINGS

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


@dataclass(frozen=True, slots=True)
class ChatPage:
    """The rendered widget page and the origins it was rendered for."""

    body: bytes
    etag: str
    allowed_origins: tuple[str, ...]


def render_page(allowed_origins: tuple[str, ...], directory: Path = STATIC_DIR) -> ChatPage:
    """The page naming `allowed_origins` (validated origins; escaped all the same)."""
    template = Template((directory / PAGE).read_text(encoding="utf-8"))
    text = template.substitute(allowed_origins=html.escape(" ".join(allowed_origins)))
    body = text.encode()
    return ChatPage(body, hashlib.sha256(body).hexdigest()[:32], allowed_origins)


def content_security_policy(host: str | None, allowed_origins: tuple[str, ...] = ()) -> str:
    """Self only; `connect-src` names the websocket of `host` too, for browsers whose `'self'`
    does not cover ws:// and wss://; `frame-ancestors` adds the allowed origins."""
    connect = ["'self'"]
    if host and _HOST.match(host):
        connect += [f"ws://{host}", f"wss://{host}"]
    ancestors = ["'self'", *allowed_origins]
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            f"connect-src {' '.join(connect)}",
            f"frame-ancestors {' '.join(ancestors)}",
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


def page_handler(page: ChatPage) -> Handler:
    async def chat_page(request: web.Request) -> web.StreamResponse:
        headers = _common_headers()
        headers["Content-Security-Policy"] = content_security_policy(
            request.host, page.allowed_origins
        )
        headers["ETag"] = f'"{page.etag}"'
        if any(tag.value in (page.etag, "*") for tag in request.if_none_match or ()):
            return web.Response(status=304, headers=headers)
        headers["Content-Type"] = "text/html; charset=utf-8"
        return web.Response(body=page.body, headers=headers)

    return chat_page


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
    page = render_page(app[SETTINGS].webchat_allowed_origins)
    app.router.add_get("/chat", page_handler(page))
    app.router.add_get("/chat/static/{name}", asset_handler(static_assets()))
