"""Console accounts and logins: hashing, login/logout, no access without a login, CSRF,
expiry."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from gateway.cli import main as cli_main
from gateway.operators.logins import COOKIE
from gateway.runtime.clock import utcnow
from gateway.storage.models import OperatorSession
from tests.support.console import AUTH, PASSWORD, USERNAME, csrf_of, log_in, seed
from tests.support.stack import Stack

CONSOLE_PAGES = [
    "/console",
    "/console/audit",
    "/console/customers/{c}",
    "/console/customers/{c}/preview?identity={i}&message=oi",
    "/console/customers/{c}/messages/1",
]
CONSOLE_POSTS = [
    "/console/logout",
    "/console/customers/{c}/links/{l}/confirm",
    "/console/customers/{c}/links/{l}/reject",
    "/console/customers/{c}/merge",
    "/console/customers/{c}/split",
    "/console/customers/{c}/facts/{f}/correct",
    "/console/customers/{c}/facts/{f}/pin",
    "/console/customers/{c}/facts/{f}/unpin",
    "/console/customers/{c}/facts/{f}/retract",
    "/console/customers/{c}/rebuild",
]
API_ROUTES = [
    ("GET", "/v1/operator/pending-links"),
    ("POST", "/v1/operator/pending-links/{l}/confirm"),
    ("POST", "/v1/operator/pending-links/{l}/reject"),
    ("POST", "/v1/operator/customers/merge"),
    ("POST", "/v1/operator/customers/{c}/split"),
    ("GET", "/v1/operator/customers/{c}"),
    ("GET", "/v1/operator/audit"),
    ("GET", "/v1/operator/customers?q=5511"),
    ("GET", "/v1/operator/customers/{c}/facts"),
    ("POST", "/v1/operator/customers/{c}/facts/{f}/correct"),
    ("POST", "/v1/operator/customers/{c}/facts/{f}/pin"),
    ("POST", "/v1/operator/customers/{c}/facts/{f}/unpin"),
    ("POST", "/v1/operator/customers/{c}/facts/{f}/retract"),
    ("POST", "/v1/operator/customers/{c}/rebuild"),
    ("POST", "/v1/operator/customers/{c}/context-preview"),
]


async def test_every_console_page_and_api_route_needs_a_login(stack: Stack) -> None:
    seeded = await seed(stack)
    ids = {
        "c": seeded.customer_id,
        "i": seeded.whatsapp_identity_id,
        "l": seeded.pending_link_id,
        "f": str(seeded.email_fact_id),
    }
    client = stack.client
    for path in CONSOLE_PAGES:
        response = await client.get(path.format(**ids), allow_redirects=False)
        assert response.status == 303, path
        assert response.headers["Location"] == "/console/login"
    for path in CONSOLE_POSTS:
        response = await client.post(
            path.format(**ids), data={"reason": "x", "value": "y"}, allow_redirects=False
        )
        assert response.status == 303, path
        assert response.headers["Location"] == "/console/login"
    for method, path in API_ROUTES:
        response = await client.request(
            method, path.format(**ids), json={"reason": "x", "value": "y"}
        )
        assert response.status == 401, (method, path)
        assert (await response.json())["error"] == "unauthorized"
    # Nothing changed: the link still waits, no audit entry was written.
    links = await (await client.get("/v1/operator/pending-links", headers=AUTH)).json()
    assert [link["id"] for link in links["pending_links"]] == [seeded.pending_link_id]
    audit = await (await client.get("/v1/operator/audit", headers=AUTH)).json()
    assert audit["audit"] == []


async def test_login_logout_and_wrong_password(stack: Stack) -> None:
    client = stack.client
    form = await client.get("/console/login")
    assert "Content-Security-Policy" in form.headers
    wrong = await client.post(
        "/console/login",
        data={"csrf_token": csrf_of(await form.text()), "username": USERNAME, "password": "nope"},
        allow_redirects=False,
    )
    assert wrong.status == 401
    assert COOKIE not in {cookie.key for cookie in client.session.cookie_jar}
    unknown = await client.post(
        "/console/login",
        data={"csrf_token": csrf_of(await wrong.text()), "username": "eve", "password": PASSWORD},
        allow_redirects=False,
    )
    assert unknown.status == 401

    token = await log_in(client)
    cookie = next(c for c in client.session.cookie_jar if c.key == COOKIE)
    assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/"
    async with stack.sessions()() as session:
        stored = list(await session.scalars(select(OperatorSession)))
    # Only the token's hash is stored.
    assert len(stored) == 1 and stored[0].token_sha256 != cookie.value
    page = await client.get("/console")
    assert f"signed in as {USERNAME}" in await page.text()

    out = await client.post("/console/logout", data={"csrf_token": token}, allow_redirects=False)
    assert out.status == 303 and out.headers["Location"] == "/console/login"
    again = await client.get("/console", allow_redirects=False)
    assert again.status == 303
    async with stack.sessions()() as session:
        assert list(await session.scalars(select(OperatorSession))) == []


async def test_login_form_needs_its_csrf_token(stack: Stack) -> None:
    client = stack.client
    await client.get("/console/login")
    response = await client.post(
        "/console/login",
        data={"username": USERNAME, "password": PASSWORD},
        allow_redirects=False,
    )
    assert response.status == 403
    assert COOKIE not in {cookie.key for cookie in client.session.cookie_jar}


async def test_a_form_post_without_the_csrf_token_is_refused(stack: Stack) -> None:
    seeded = await seed(stack)
    client = stack.client
    token = await log_in(client)
    base = f"/console/customers/{seeded.customer_id}"
    for data in ({"reason": "checked"}, {"reason": "checked", "csrf_token": token[::-1]}):
        refused = await client.post(
            f"{base}/links/{seeded.pending_link_id}/confirm", data=data, allow_redirects=False
        )
        assert refused.status == 403
        assert "CSRF" in await refused.text()
        correction = await client.post(
            f"{base}/facts/{seeded.email_fact_id}/correct",
            data={**data, "value": "ana@new.example"},
            allow_redirects=False,
        )
        assert correction.status == 403
    # The JSON API with the login cookie needs the header too.
    api = await client.post(
        f"/v1/operator/pending-links/{seeded.pending_link_id}/confirm", json={"reason": "checked"}
    )
    assert api.status == 403 and (await api.json())["error"] == "csrf_failed"
    links = await (await client.get("/v1/operator/pending-links")).json()
    assert [link["id"] for link in links["pending_links"]] == [seeded.pending_link_id]
    audit = await (await client.get("/v1/operator/audit")).json()
    assert audit["audit"] == []


async def test_an_expired_login_is_refused(stack: Stack) -> None:
    client = stack.client
    await log_in(client)
    async with stack.sessions().begin() as session:
        await session.execute(
            update(OperatorSession).values(expires_at=utcnow() - timedelta(seconds=1))
        )
    page = await client.get("/console", allow_redirects=False)
    assert page.status == 303 and page.headers["Location"] == "/console/login"
    api = await client.get("/v1/operator/audit")
    assert api.status == 401


def test_cli_operator_add_reads_the_password_from_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setenv("RELAYDESK_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setattr("sys.stdin", io.StringIO("a long enough password\n"))
    assert cli_main(["operator", "add", "carla", "--password-stdin"]) == 0
    assert "operator carla added" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert cli_main(["operator", "add", "dave", "--password-stdin"]) == 2
    monkeypatch.setattr("sys.stdin", io.StringIO("a long enough password\n"))
    assert cli_main(["operator", "add", "carla", "--password-stdin"]) == 2
    assert "already exists" in capsys.readouterr().err
