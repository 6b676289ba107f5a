"""`/.well-known/jwks.json`: the public key business APIs verify action calls' identity
assertions with (`gateway.tools.assertion`); an empty set when the deployment signs with a
shared key only (or not at all)."""

from __future__ import annotations

from aiohttp import web

from gateway.http.openapi import document
from gateway.tools.assertion import AssertionSigner

SIGNER = web.AppKey("identity_signer", AssertionSigner)


async def jwks(request: web.Request) -> web.Response:
    return web.json_response(
        request.app[SIGNER].jwks, headers={"Cache-Control": "public, max-age=300"}
    )


def add_routes(app: web.Application, signer: AssertionSigner) -> None:
    app[SIGNER] = signer
    app.router.add_get("/.well-known/jwks.json", jwks)


document(
    "GET",
    "/.well-known/jwks.json",
    "The public key of action calls' identity assertions (JSON Web Key Set)",
    responses={200: "the key set (empty: assertions are signed with a shared key)"},
    secured=False,
)
