"""`GET /`: a small landing page for whoever opens the gateway's address, pointing at the web
chat widget (`/chat`), the operator console (`/console`, with the command that creates its
first account), the HTTP API's description (`/openapi.json`) and the guides.

One HTML document with its style inline and no script, font or image: it renders offline. The
guides are the Markdown files of `docs/` beside the source (a checkout or an editable install):
`GET /docs/{name}.md` answers them as plain text, their relative links resolving under
`/docs/` as they do in the repository. An install without that folder serves none, and the page
then says where the guides live instead of linking them.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from html import escape
from pathlib import Path

from aiohttp import web

from gateway.http.errors import NotFound

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"
# A guide's name: lowercase words and dashes, at most one folder deep, ending in `.md`. Only
# names found in the folder at start are served, so a request never names a path of its own.
GUIDE_NAME = re.compile(r"[a-z0-9][a-z0-9-]*(?:/[a-z0-9][a-z0-9-]*)?\.md")
GUIDES_INDEX = "index.md"

STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 3rem auto;
       padding: 0 1rem; color: #1d232a; background: #fafbfc; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
p.tagline { margin-top: 0; color: #4a5560; }
ul { list-style: none; padding: 0; }
li { margin: 0.9rem 0; padding: 0.8rem 1rem; background: #fff; border: 1px solid #d8dee4;
     border-radius: 6px; }
a { color: #0b5cad; font-weight: 600; }
code { white-space: nowrap; background: #eef1f4; padding: 0.1rem 0.3rem; border-radius: 3px; }
"""


@dataclass(frozen=True, slots=True)
class LandingPage:
    """The page's bytes and the style hash its Content-Security-Policy allows."""

    body: bytes
    style_hash: str


def find_guides(directory: Path = DOCS_DIR) -> dict[str, Path]:
    """The guides under `directory` by the name `/docs/` serves them under."""
    if not directory.is_dir():
        return {}
    found: dict[str, Path] = {}
    for path in sorted(directory.rglob("*.md")):
        name = path.relative_to(directory).as_posix()
        if GUIDE_NAME.fullmatch(name):
            found[name] = path
    return found


def render_landing(guides_served: bool) -> LandingPage:
    """The landing page; the guides are a link when this process serves them."""
    if guides_served:
        guides = (
            f'<a href="/docs/{GUIDES_INDEX}">Guides</a>: connecting WhatsApp (Twilio or '
            "Meta's Cloud API), Telegram and the call center; operators; production."
        )
    else:
        guides = (
            "Guides: <code>docs/index.md</code> in the source of this release "
            "(connecting WhatsApp, Telegram and the call center; operators; production)."
        )
    html = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Relaydesk</title>
<style>{STYLE}</style>
</head>
<body>
<h1>Relaydesk</h1>
<p class="tagline">A multichannel chatbot gateway: one customer across WhatsApp, Telegram,
web chat and phone calls.</p>
<ul>
<li><a href="/chat">Web chat</a>: the widget your customers write in. Try it here.</li>
<li><a href="/console">Operator console</a>: conversations, customers, handoff.
No account yet? Create the first one on the server with
<code>{escape("relaydesk operator add NAME --admin")}</code>.</li>
<li>{guides}</li>
<li><a href="/openapi.json">HTTP API</a>: its OpenAPI description;
<a href="/healthz">health</a>.</li>
</ul>
</body>
</html>
"""
    digest = hashlib.sha256(STYLE.encode()).digest()
    return LandingPage(
        body=html.encode("utf-8"), style_hash=f"sha256-{base64.b64encode(digest).decode()}"
    )


def _headers(page: LandingPage) -> dict[str, str]:
    return {
        "Content-Type": "text/html; charset=utf-8",
        "Cache-Control": "no-cache",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Content-Security-Policy": (
            f"default-src 'none'; style-src '{page.style_hash}'; base-uri 'none'; "
            "form-action 'none'; frame-ancestors 'none'"
        ),
    }


def landing_handler(page: LandingPage) -> Handler:
    async def landing(request: web.Request) -> web.StreamResponse:
        return web.Response(body=page.body, headers=_headers(page))

    return landing


def guide_handler(guides: Mapping[str, Path]) -> Handler:
    async def guide(request: web.Request) -> web.StreamResponse:
        path = guides.get(request.match_info["name"])
        if path is None:
            raise NotFound("no such guide")
        return web.FileResponse(
            path,
            headers={
                "Content-Type": "text/plain; charset=utf-8",
                "Cache-Control": "no-cache",
                "X-Content-Type-Options": "nosniff",
            },
        )

    return guide


def add_routes(app: web.Application, docs: Path = DOCS_DIR) -> None:
    guides = find_guides(docs)
    app.router.add_get("/", landing_handler(render_landing(GUIDES_INDEX in guides)))
    if guides:
        app.router.add_get("/docs/{name:.+}", guide_handler(guides))
