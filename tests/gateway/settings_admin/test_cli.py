"""`relaydesk settings …` on a database file: keys set and unset by dotted name, files
validated, imported and exported per level, refusals that name the key, every change audited."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from gateway.cli import main
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.repositories import audit, tenants


@pytest.fixture
async def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'settings.db'}"
    monkeypatch.setenv("RELAYDESK_DATABASE_URL", url)
    monkeypatch.setenv("RELAYDESK_AUTO_MIGRATE", "true")
    monkeypatch.delenv("RELAYDESK_REDIS_URL", raising=False)
    yield url


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["settings", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def _stored(url: str, **level: str | None) -> tuple[dict[str, object], list[str]]:
    engine = make_engine(url)
    try:
        async with make_sessionmaker(engine)() as session:
            stored = await tenants.stored_level(session, domain="default", **level) or {}
            entries = await audit.list_audit(session, action="settings_changed")
    finally:
        await engine.dispose()
    return stored, [entry.subject_id for entry in entries]


async def test_set_unset_and_show_a_level(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    host = ("--host", "shop.example.com")
    code, out, _ = await asyncio.to_thread(
        _run, capsys, "set", "rate_limits.model_calls_per_customer", "30/minute", *host
    )
    assert code == 0 and "changed rate_limits.model_calls_per_customer" in out
    await asyncio.to_thread(_run, capsys, "set", "window", "16384", *host)
    await asyncio.to_thread(_run, capsys, "set", "model", "123", "--string", *host)
    code, out, _ = await asyncio.to_thread(
        _run, capsys, "set", "handoff_message", "Um momento", *host, "--channel", "webchat"
    )
    assert code == 0
    stored, audited = await _stored(database, host="shop.example.com")
    assert stored == {
        "rate_limits": {"model_calls_per_customer": "30/minute"},
        "window": 16384,
        "model": "123",
        "channels": {"webchat": {"handoff_message": "Um momento"}},
    }
    assert len(audited) == 4

    code, out, _ = await asyncio.to_thread(_run, capsys, "unset", "window", *host)
    assert code == 0 and "changed window" in out
    code, out, _ = await asyncio.to_thread(_run, capsys, "show", *host)
    assert code == 0 and "window" not in yaml.safe_load(out)
    code, out, _ = await asyncio.to_thread(
        _run, capsys, "show", *host, "--channel", "webchat", "--effective", "--json"
    )
    effective = json.loads(out)
    assert effective["handoff_message"] == "Um momento"
    assert effective["rate_limits"]["model_calls_per_customer"] == "30/minute"
    assert effective["window"] == 8192


async def test_a_bad_value_is_refused_naming_its_key(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await asyncio.to_thread(_run, capsys, "set", "window", "100")
    assert code == 2 and "window:" in err and "1024" in err
    code, _, err = await asyncio.to_thread(_run, capsys, "set", "handoff_phrasess", '["x"]')
    assert code == 2 and "handoff_phrasess:" in err
    stored, audited = await _stored(database)
    assert stored == {} and audited == []


async def test_files_are_validated_imported_and_exported(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "shop.toml"
    good.write_text(
        'instruction = "Shoes only."\n'
        "[rate_limits]\n"
        'visitor_ids_per_address = "10/hour"\n'
        "[channels.whatsapp]\n"
        "window = 4096\n",
        encoding="utf-8",
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("rate_limits:\n  webchat_frames_per_visitor: often\n", encoding="utf-8")

    code, out, _ = await asyncio.to_thread(_run, capsys, "validate", str(good))
    assert code == 0 and "valid" in out
    code, _, err = await asyncio.to_thread(_run, capsys, "validate", str(bad))
    assert code == 2 and "rate_limits.webchat_frames_per_visitor:" in err

    code, _, _ = await asyncio.to_thread(_run, capsys, "import", str(good), "--reason", "launch")
    assert code == 0
    exported = tmp_path / "exported.yaml"
    code, _, _ = await asyncio.to_thread(_run, capsys, "export", "--output", str(exported))
    assert code == 0
    assert yaml.safe_load(exported.read_text(encoding="utf-8")) == {
        "instruction": "Shoes only.",
        "rate_limits": {"visitor_ids_per_address": "10/hour"},
        "channels": {"whatsapp": {"window": 4096}},
    }
    # The export imports back into another level as it is.
    code, _, _ = await asyncio.to_thread(
        _run, capsys, "import", str(exported), "--host", "other.example.org"
    )
    assert code == 0
    stored, audited = await _stored(database, host="other.example.org")
    assert stored["instruction"] == "Shoes only."
    assert audited == ["domain/default/host/other.example.org", "domain/default"]


async def test_the_schema_is_printed_as_json_schema(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = await asyncio.to_thread(_run, capsys, "schema")
    schema = json.loads(out)
    assert code == 0 and schema["$schema"].endswith("2020-12/schema")
    assert schema["properties"]["window"]["minimum"] == 1024
