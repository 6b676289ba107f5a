"""`relaydesk bench context` at tiny sizes: the JSON contract, windows within budget, and the
synthetic data keeping the ingest invariants. No timing assertions; PostgreSQL is not used."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

from context import TiktokenCounter, load_encoding
from devtools.bench import BaselineUnavailable, BenchOptions, run_context_bench
from devtools.bench.baselines import TrimMessagesBaseline
from devtools.bench.history import compaction_pointer, count_tokens, make_history
from devtools.bench.populate import populate
from gateway.cli import main
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.migrate import upgrade
from gateway.storage.models import Episode, EpisodeSummary, Message
from gateway.storage.repositories import facts, messages
from gateway.tenants import TenantSettings

# Serial: a benchmark: its figures are timings.
pytestmark = pytest.mark.serial

SIZES = (50, 200)
MEASURED = (
    "ours_assemble_sqlite",
    "ours_build_window",
    "trim_messages",
    "naive",
    "e2e_sqlite",
)
POSTGRES = ("ours_assemble_postgres", "e2e_postgres")
COUNTER = TiktokenCounter(load_encoding())


async def test_json_holds_every_median_and_windows_stay_within_budget() -> None:
    result = await run_context_bench(BenchOptions(sizes=SIZES, repeat=2, postgres_url=None))
    line = result.json_line()
    assert "\n" not in line
    data = json.loads(line)

    assert data["sizes"] == list(SIZES)
    assert set(data["medians_ms"]) == {str(size) for size in SIZES}
    for medians in data["medians_ms"].values():
        assert set(medians) == {*MEASURED, *POSTGRES}
        for method in MEASURED:
            assert isinstance(medians[method], float) and medians[method] > 0, method
        assert all(medians[method] is None for method in POSTGRES)
    assert data["postgres_skipped"]
    # 10k, 1k and 100k were not measured: no ratios, no verdicts.
    assert data["speedup_vs_trim_messages_10k"] is None
    assert data["flatness_100k_over_1k"] is None
    assert data["ours"] == "ours_build_window"
    assert {target["met"] for target in data["targets"].values()} == {None}

    budget = data["input_budget"]
    assert budget == 8192 - 800 - 192
    for windows in data["window_tokens"].values():
        for method in MEASURED:
            assert 0 < windows[method] <= budget, method
        # The same inputs give the same window, however they reach the builder.
        assert windows["ours_assemble_sqlite"] == windows["ours_build_window"]
        assert windows["ours_assemble_sqlite"] == windows["e2e_sqlite"]

    table = result.table()
    assert "LangChain trim_messages" in table
    assert "like for like with trim_messages" in table


async def test_populate_keeps_the_ingest_invariants(tmp_path: Path) -> None:
    settings = TenantSettings()
    history = make_history(600)
    tokens = count_tokens(history, COUNTER)
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'bench.db'}")
    try:
        await upgrade(engine)
        sessions = make_sessionmaker(engine)
        seeded = await populate(sessions, history, tokens, settings, COUNTER)
        customer_id = seeded.identity.customer_id
        async with sessions() as session:
            stored = (
                await session.execute(
                    select(Message.episode_id, func.count(), func.sum(Message.token_count))
                    .where(Message.customer_id == customer_id)
                    .group_by(Message.episode_id)
                )
            ).all()
            totals = dict(
                (
                    await session.execute(
                        select(Episode.id, Episode.token_total).where(
                            Episode.customer_id == customer_id
                        )
                    )
                ).all()
            )
            assert len(stored) == len(history.episodes)
            assert sum(count for _, count, _ in stored) == 600
            assert {episode: total for episode, _, total in stored} == totals
            assert await messages.history_token_total(session, customer_id) == seeded.history_tokens
            summarized = await session.scalar(
                select(func.count())
                .select_from(EpisodeSummary)
                .where(EpisodeSummary.customer_id == customer_id)
            )
            assert summarized is not None and summarized >= len(history.episodes) - 1
            current = {fact.key for fact in await facts.current_facts(session, customer_id)}
            assert {"last_order", "pix_key", "email", "preferred_name"} <= current
    finally:
        await engine.dispose()


def test_histories_are_deterministic_and_exactly_sized() -> None:
    history = make_history(1_000)
    assert history == make_history(1_000)
    assert sum(len(episode.messages) for episode in history.episodes) == 1_000
    assert history.episodes[-1].is_open and history.episodes[-1].channel == "whatsapp"
    assert {episode.channel for episode in history.episodes} == {
        "whatsapp",
        "telegram",
        "webchat",
        "phone",
    }
    assert not any(episode.is_open for episode in history.episodes[:-1])


def test_compaction_pointer_leaves_a_tail_under_the_threshold() -> None:
    tokens = [40] * 500
    pointer = compaction_pointer(tokens, threshold=3000, low_water=1500, keep_recent=8)
    assert pointer is not None
    tail = tokens[pointer + 1 :]
    assert len(tail) >= 8 and sum(tail) <= 3000
    assert compaction_pointer([40] * 10, threshold=3000, low_water=1500, keep_recent=8) is None


def test_without_langchain_the_baseline_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core.messages", None)
    with pytest.raises(BaselineUnavailable, match="relaydesk\\[bench\\]"):
        TrimMessagesBaseline(load_encoding(), "system", [("user", "oi")], "oi", 100)


def test_cli_prints_the_table_then_the_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["bench", "context", "--sizes", "20", "--repeat", "1", "--postgres-url", "", "--json"])
        == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("relaydesk bench context")
    assert json.loads(lines[-1])["sizes"] == [20]
