"""`relaydesk operator add|list|disable|enable|reset-password|remove` through `relaydesk`'s
own entry point on a SQLite file: what each prints, what a login can do afterwards, the
refusals (exit 2, why on stderr) and the audit entries."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from gateway.cli import main as cli_main
from gateway.http.errors import Unauthorized
from gateway.operators import logins
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.records import AuditRecord
from gateway.storage.repositories import audit

PASSWORD = "a long enough password"
NEW_PASSWORD = "another long password"


@pytest.fixture
def database_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'operators.db'}"
    monkeypatch.setenv("RELAYDESK_DATABASE_URL", url)
    return url


def _relaydesk(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *argv: str,
    stdin: str = "",
) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = cli_main(["operator", *argv])
    captured = capsys.readouterr()
    return code, captured.out.strip(), captured.err.strip()


def _can_log_in(url: str, username: str, password: str) -> bool:
    async def attempt() -> bool:
        engine = make_engine(url)
        try:
            async with make_sessionmaker(engine).begin() as session:
                await logins.log_in(session, username, password)
            return True
        except Unauthorized:
            return False
        finally:
            await engine.dispose()

    return asyncio.run(attempt())


def _audit(url: str) -> list[AuditRecord]:
    async def read() -> list[AuditRecord]:
        engine = make_engine(url)
        try:
            async with make_sessionmaker(engine)() as session:
                return await audit.list_audit(session)
        finally:
            await engine.dispose()

    return asyncio.run(read())


def test_every_account_action_from_the_command_line(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
        return _relaydesk(monkeypatch, capsys, *argv, stdin=stdin)

    assert run("list") == (
        0,
        "no operator accounts; create one with: relaydesk operator add NAME --admin",
        "",
    )
    code, out, _ = run("add", "zoe", "--admin", "--password-stdin", stdin=f"{PASSWORD}\n")
    assert code == 0 and out.startswith("operator zoe added (") and out.endswith(", admin)")
    code, out, _ = run("add", "ana", "--password-stdin", stdin=f"{PASSWORD}\n")
    assert code == 0 and out.endswith(", agent)")
    assert run("list") == (0, "ana\tagent\tactive\nzoe\tadmin\tactive", "")

    assert run("disable", "ana") == (0, "operator ana disabled", "")
    code, out, _ = run("list")
    assert out.splitlines()[0].startswith("ana\tagent\tdisabled since ")
    assert not _can_log_in(database_url, "ana", PASSWORD)

    assert run("enable", "ana") == (0, "operator ana enabled", "")
    assert _can_log_in(database_url, "ana", PASSWORD)

    code, out, _ = run("reset-password", "ana", "--password-stdin", stdin=f"{NEW_PASSWORD}\n")
    assert (code, out) == (0, "operator ana: password reset, open logins ended")
    assert not _can_log_in(database_url, "ana", PASSWORD)
    assert _can_log_in(database_url, "ana", NEW_PASSWORD)

    assert run("remove", "ana") == (0, "operator ana removed", "")
    assert run("list") == (0, "zoe\tadmin\tactive", "")
    assert not _can_log_in(database_url, "ana", NEW_PASSWORD)

    actions = [(e.action, e.actor, e.details["username"]) for e in _audit(database_url)]
    assert sorted(actions) == sorted(
        [
            ("operator.added", "command-line", "zoe"),
            ("operator.added", "command-line", "ana"),
            ("operator.disabled", "command-line", "ana"),
            ("operator.enabled", "command-line", "ana"),
            ("operator.password_reset", "command-line", "ana"),
            ("operator.removed", "command-line", "ana"),
        ]
    )


def test_the_command_line_refuses_what_would_lock_everyone_out(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
        return _relaydesk(monkeypatch, capsys, *argv, stdin=stdin)

    assert run("add", "zoe", "--admin", "--password-stdin", stdin=f"{PASSWORD}\n")[0] == 0
    last_admin = (
        "relaydesk: 'zoe' is the last active admin: make another admin first"
        " (relaydesk operator add NAME --admin)"
    )
    assert run("disable", "zoe") == (2, "", last_admin)
    assert run("remove", "zoe") == (2, "", last_admin)
    assert _can_log_in(database_url, "zoe", PASSWORD)
    assert run("disable", "nobody") == (2, "", "relaydesk: no operator account 'nobody'")
    code, _, err = run("reset-password", "zoe", "--password-stdin", stdin="short\n")
    assert (code, err) == (2, "relaydesk: a password has at least 10 characters")
    code, _, err = run("add", "zoe", "--password-stdin", stdin=f"{PASSWORD}\n")
    assert (code, err) == (2, "relaydesk: operator 'zoe' already exists")
    # A second admin lets the first be disabled.
    assert run("add", "bia", "--admin", "--password-stdin", stdin=f"{PASSWORD}\n")[0] == 0
    assert run("disable", "zoe") == (0, "operator zoe disabled", "")
    assert not _can_log_in(database_url, "zoe", PASSWORD)
