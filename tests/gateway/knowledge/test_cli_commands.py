"""`relaydesk knowledge …` on a database file: a file added (its format from its name), read
again without a rewrite, replaced at its URL, listed per tenant with its chunk count, removed
with its chunks, each change audited, and refusals that say what to fix."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.repositories import audit, knowledge

URL = "https://shop.example.com/help/returns"


@pytest.fixture
async def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'knowledge.db'}"
    monkeypatch.setenv("RELAYDESK_DATABASE_URL", url)
    monkeypatch.setenv("RELAYDESK_AUTO_MIGRATE", "true")
    monkeypatch.delenv("RELAYDESK_REDIS_URL", raising=False)
    yield url


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["knowledge", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def _stored(url: str, tenant: str) -> tuple[list[knowledge.DocumentRecord], list[str]]:
    engine = make_engine(url)
    try:
        async with make_sessionmaker(engine)() as session:
            documents = await knowledge.list_documents(session, tenant)
            entries = await audit.list_audit(session)
    finally:
        await engine.dispose()
    return documents, [e.action for e in entries if e.subject_type == "knowledge_document"]


async def test_add_list_replace_and_remove(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    returns = tmp_path / "returns.md"
    returns.write_text("# Returns\n\nThirty days.\n\n## Refunds\n\nTo your card.\n")
    shop = ("--tenant", "shop.example.com")

    code, out, err = await asyncio.to_thread(
        _run, capsys, "add", str(returns), "--audience", "customers", "--url", URL, *shop
    )
    assert code == 0, err
    assert out.startswith("added ") and "Returns (2 chunks, customers)" in out
    document_id = out.split()[1].rstrip(":")

    code, out, _ = await asyncio.to_thread(
        _run, capsys, "add", str(returns), "--audience", "customers", "--url", URL, *shop
    )
    assert code == 0 and out.startswith(f"unchanged {document_id}:")
    returns.write_text("# Returns\n\nSixty days.\n")
    code, out, _ = await asyncio.to_thread(
        _run, capsys, "add", str(returns), "--audience", "customers", "--url", URL, *shop
    )
    assert code == 0 and out.startswith(f"replaced {document_id}:") and "(1 chunks" in out

    notes = tmp_path / "notes.txt"
    notes.write_text("Escalate refunds over 500 to Ana.")
    code, out, _ = await asyncio.to_thread(
        _run, capsys, "add", str(notes), "--audience", "operators", "--title", "Escalations"
    )
    assert code == 0 and "Escalations (1 chunks, operators)" in out

    code, out, _ = await asyncio.to_thread(_run, capsys, "list", *shop)
    assert code == 0
    [line] = out.splitlines()
    assert line.startswith(document_id) and "1 chunks" in line and f"<{URL}>" in line
    code, out, _ = await asyncio.to_thread(_run, capsys, "list", "--json")
    listed = json.loads(out)
    assert [(d["title"], d["audience"], d["chunk_count"]) for d in listed] == [
        ("Escalations", "operators", 1)
    ]

    # Removing needs the document's tenant.
    code, _, err = await asyncio.to_thread(_run, capsys, "remove", document_id)
    assert code == 1 and "no document" in err
    code, out, _ = await asyncio.to_thread(_run, capsys, "remove", document_id, *shop)
    assert code == 0 and out.startswith(f"removed {document_id}")

    documents, actions = await _stored(database, "default/shop.example.com")
    assert documents == []
    assert sorted(actions) == [
        "knowledge.document_deleted",
        *["knowledge.document_stored"] * 4,
    ]


async def test_refusals_say_what_to_fix(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unnamed = tmp_path / "README"
    unnamed.write_text("Plain words.")
    code, _, err = await asyncio.to_thread(
        _run, capsys, "add", str(unnamed), "--audience", "public"
    )
    assert code == 2 and "--format" in err

    empty = tmp_path / "empty.md"
    empty.write_text("   \n\n")
    code, _, err = await asyncio.to_thread(_run, capsys, "add", str(empty), "--audience", "public")
    assert code == 2 and err.startswith("relaydesk: ")

    code, _, err = await asyncio.to_thread(
        _run, capsys, "add", str(tmp_path / "missing.md"), "--audience", "public"
    )
    assert code == 2 and "missing.md" in err

    code, _, err = await asyncio.to_thread(
        _run,
        capsys,
        "add",
        str(unnamed),
        "--audience",
        "public",
        "--format",
        "text",
        "--updated-at",
        "2026-12-01T10:00:00",
    )
    assert code == 2 and "offset" in err

    code, _, err = await asyncio.to_thread(
        _run, capsys, "add", str(empty), "--audience", "public", "--url", "file:///etc/passwd"
    )
    assert code == 2 and "--url" in err

    documents, _ = await _stored(database, "default")
    assert documents == []
