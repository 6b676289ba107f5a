"""``relaydesk eval locomo``: does the window we build still hold the evidence and the answer?

For each conversation of the split: a fresh SQLite database in a temporary folder, the
conversation stored and compacted by `devtools.eval.ingest`, then every question of categories
1–4 asked as the current message of a new web chat episode of the same customer (a verified web
identity; no episode is stored for it, so later questions do not see earlier ones):
`assemble_context` builds the window at ``--window`` tokens with the default tenant settings.

Measures, per question and method:

* evidence coverage — every evidence turn is in the window: its line verbatim
  (``Speaker: text``, whitespace collapsed), or it is the source of a fact whose value is in the
  window, or of a summary sentence whose text is in the window. Questions whose evidence names
  no turn of the conversation are left out of this figure;
* answer in window — the normalized answer (lowercase, punctuation and articles removed,
  numbers as text) occurs in the normalized window, the question itself excluded;
* tokens — our window's ``estimated_tokens``; the baselines are given the same count per
  question.

Our window is built with lexical recall (``relaydesk``), hybrid recall (``hybrid``: the same
window with the lexical ranking fused with the offline model's similarities,
`context.recall_fusion`), or both side by side (``recall``: ``lexical``, ``hybrid``, ``both``).
Hybrid recall goes the shipped way: the background embedder stores every message's vector
(`gateway.embeddings.background`), then each question is embedded and ranked against them
on the reply's path (`gateway.embeddings.similarity`), through the ``embedder`` given (the
evaluation's is cached on disk, `devtools.eval.vectors`); the baselines get the first window's
tokens.

Baselines render raw turns as ``[session date] Speaker: text`` (cl100k tokens per line, plus
one for the newline): ``recency`` keeps the newest turns that fit, ``bm25`` the best-scoring turns
for the question (``context.relevance`` BM25) that fit, in chronological order; ``full`` is
the whole history. ``token_ratio_to_full`` is the median of tokens ÷ the full history's tokens.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from context import TiktokenCounter, TokenCounter, load_encoding
from context.relevance import bm25_scores, terms
from devtools.eval.ingest import Ingested, ingest
from devtools.eval.locomo import Conversation, Question
from gateway.embeddings.background import BackgroundEmbedder
from gateway.embeddings.base import Embedder
from gateway.embeddings.similarity import HybridSimilarity, QueryBudget, RecallVectors
from gateway.memory.recall import RecallCache
from gateway.memory.service import sentences_from
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.migrate import upgrade
from gateway.storage.repositories import facts, summaries
from gateway.tenants import TenantSettings
from gateway.turns.window import assemble_context

__all__ = [
    "CATEGORIES",
    "HYBRID",
    "LEXICAL",
    "METHODS",
    "RecallMode",
    "Outcome",
    "collapse",
    "evaluate",
    "normalize",
]

CATEGORIES: Final = (1, 2, 3, 4)
LEXICAL: Final = "relaydesk"
HYBRID: Final = "hybrid"
METHODS: Final = (LEXICAL, "recency", "bm25", "full")
# Every method a report may hold, in the order it shows them.
ALL_METHODS: Final = (LEXICAL, HYBRID, *METHODS[1:])

RecallMode = Literal["lexical", "hybrid", "both"]
DEFAULT_WINDOW: Final = 8192
# How long a question waits for its vector: an evaluation measures the ranking, not the
# deadline a reply keeps (a vector never misses it here).
EMBED_WAIT_S: Final = 600.0

_PUNCT: Final = re.compile(r"[^\w\s]")
_ARTICLES: Final = re.compile(r"\b(?:a|an|the)\b")

Progress = Callable[[str], None]


def collapse(text: str) -> str:
    return " ".join(text.split())


def normalize(text: str) -> str:
    """Lowercase, punctuation and articles removed, whitespace collapsed."""
    plain = _PUNCT.sub(" ", text.casefold())
    return collapse(_ARTICLES.sub(" ", plain))


def contains_answer(answer: str, normalized_text: str) -> bool:
    wanted = normalize(answer)
    return bool(wanted) and f" {wanted} " in f" {normalized_text} "


@dataclass(frozen=True, slots=True)
class Outcome:
    """One question under one method."""

    sample_id: str
    category: int
    method: str
    covered: bool | None  # None: no usable evidence ids
    answer_in_window: bool
    tokens: int
    full_tokens: int


@dataclass(slots=True)
class _History:
    """The conversation's raw turns rendered the baselines' way."""

    lines: list[str]
    costs: list[int]
    ids: list[str]
    terms: list[tuple[str, ...]]
    full_tokens: int = 0
    normalized: list[str] = field(default_factory=list)


def _history(conversation: Conversation, counter: TokenCounter) -> _History:
    lines, ids = [], []
    for session in conversation.sessions:
        for turn in session.turns:
            lines.append(f"[{session.date_text}] {turn.speaker}: {turn.text}")
            ids.append(turn.dia_id)
    costs = [counter.count(line) + 1 for line in lines]
    return _History(
        lines=lines,
        costs=costs,
        ids=ids,
        terms=[terms(line.split("] ", 1)[1]) for line in lines],
        full_tokens=sum(costs),
        normalized=[normalize(line) for line in lines],
    )


def _take(order: Sequence[int], costs: Sequence[int], budget: int) -> list[int]:
    chosen, used = [], 0
    for index in order:
        if used + costs[index] <= budget:
            chosen.append(index)
            used += costs[index]
    return sorted(chosen)


def _baseline(
    method: str, history: _History, question: Question, budget: int
) -> tuple[set[str], str, int]:
    count = len(history.lines)
    if method == "full":
        chosen = list(range(count))
    elif method == "recency":
        chosen = _take(range(count - 1, -1, -1), history.costs, budget)
    else:
        scores = bm25_scores(terms(question.question), history.terms)
        order = sorted(range(count), key=lambda i: (-scores[i], -i))
        chosen = _take([i for i in order if scores[i] > 0], history.costs, budget)
    text = " ".join(history.normalized[i] for i in chosen)
    return {history.ids[i] for i in chosen}, text, sum(history.costs[i] for i in chosen)


@dataclass(frozen=True, slots=True)
class _Sources:
    """What can stand for a stored message in a window: fact values and summary sentences."""

    facts: dict[int, list[str]]
    sentences: dict[int, list[str]]


async def _sources(session: AsyncSession, customer_id: str) -> _Sources:
    by_fact: dict[int, list[str]] = {}
    for fact in await facts.current_facts(session, customer_id):
        by_fact.setdefault(fact.source_message_id, []).append(collapse(fact.value))
    by_sentence: dict[int, list[str]] = {}
    for record in await summaries.customer_summaries(session, customer_id, limit=10_000):
        for sentence in sentences_from(list(record.sentences)):
            by_sentence.setdefault(sentence.source_message_id, []).append(collapse(sentence.text))
    return _Sources(by_fact, by_sentence)


def _covered(
    question: Question,
    window: str,
    conversation: Conversation,
    stored: Ingested,
    sources: _Sources,
) -> bool | None:
    if not question.evidence:
        return None
    turns = {turn.dia_id: turn for turn in conversation.turns}
    for dia_id in question.evidence:
        turn = turns[dia_id]
        if f"{turn.speaker}: {collapse(turn.text)}" in window:
            continue
        message_id = stored.message_ids[dia_id]
        if any(v in window for v in sources.facts.get(message_id, ()) if v):
            continue
        if any(s in window for s in sources.sentences.get(message_id, ()) if s):
            continue
        return False
    return True


def _systems(
    mode: RecallMode, similarity: HybridSimilarity | None
) -> list[tuple[str, RecallCache]]:
    """Our windows to build, each with its own recall cache (hybrid: one that fuses)."""
    systems: list[tuple[str, RecallCache]] = []
    if mode in ("lexical", "both"):
        systems.append((LEXICAL, RecallCache()))
    if mode in ("hybrid", "both"):
        if similarity is None:
            raise ValueError("hybrid recall needs an embedder")
        systems.append((HYBRID, RecallCache(similarity=RecallVectors(similarity))))
    return systems


async def _evaluate_one(
    conversation: Conversation,
    index: int,
    window: int,
    counter: TokenCounter,
    settings: TenantSettings,
    directory: Path,
    mode: RecallMode,
    embedder: Embedder | None,
) -> list[Outcome]:
    engine = make_engine(f"sqlite+aiosqlite:///{directory / f'{conversation.sample_id}.db'}")
    try:
        await upgrade(engine)
        sessions = make_sessionmaker(engine)
        stored = await ingest(sessions, conversation, counter, index=index)
        if embedder is not None:
            # As a gateway has them once its background caught up: every message's vector
            # stored, then ranked on the reply's path (`gateway.embeddings.similarity`).
            await BackgroundEmbedder(sessions, embedder).drain()
        similarity = (
            HybridSimilarity(
                embedder,
                embedder.name,
                deadline_s=EMBED_WAIT_S,
                budget=QueryBudget.unlimited(),
            )
            if embedder is not None
            else None
        )
        systems = _systems(mode, similarity)
        history = _history(conversation, counter)
        outcomes: list[Outcome] = []
        async with sessions() as session:
            sources = await _sources(session, stored.customer_id)
            for question in conversation.questions:
                if question.category not in CATEGORIES:
                    continue
                answer = question.answer or ""
                first_tokens: int | None = None
                # As a gateway serves a customer: the recall index is built once and reused
                # while the customer's other episodes are unchanged (they are, question after
                # question).
                for method, recall_cache in systems:
                    assembled = await assemble_context(
                        session,
                        identity=stored.web,
                        settings=settings,
                        counter=counter,
                        message=question.question,
                        window=window,
                        recall_cache=recall_cache,
                    )
                    built = assembled.window
                    # The question itself is the last message: it is not evidence of anything.
                    shown = collapse("\n".join(m.content for m in built.messages[:-1]))
                    tokens = built.report.estimated_tokens
                    if first_tokens is None:
                        first_tokens = tokens
                    outcomes.append(
                        Outcome(
                            conversation.sample_id,
                            question.category,
                            method,
                            _covered(question, shown, conversation, stored, sources),
                            contains_answer(answer, normalize(shown)),
                            tokens,
                            history.full_tokens,
                        )
                    )
                tokens = first_tokens or 0
                for method in METHODS[1:]:
                    ids, text, used = _baseline(method, history, question, tokens)
                    outcomes.append(
                        Outcome(
                            conversation.sample_id,
                            question.category,
                            method,
                            set(question.evidence) <= ids if question.evidence else None,
                            contains_answer(answer, text),
                            used,
                            history.full_tokens,
                        )
                    )
        return outcomes
    finally:
        await engine.dispose()


def _silent(_: str) -> None:
    return None


async def evaluate(
    conversations: Sequence[Conversation],
    *,
    window: int = DEFAULT_WINDOW,
    counter: TokenCounter | None = None,
    settings: TenantSettings | None = None,
    progress: Progress = _silent,
    recall: RecallMode = "lexical",
    embedder: Embedder | None = None,
) -> list[Outcome]:
    """Every outcome of every question of categories 1–4 of ``conversations``; hybrid recall
    (``recall``: ``hybrid`` or ``both``) needs an ``embedder``."""
    counter = counter or TiktokenCounter(load_encoding())
    settings = settings or TenantSettings()
    if recall != "lexical" and embedder is None:
        raise ValueError("hybrid recall needs an embedder")
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="relaydesk-locomo-") as directory:
        for index, conversation in enumerate(conversations):
            started = time.perf_counter()
            outcomes.extend(
                await _evaluate_one(
                    conversation,
                    index,
                    window,
                    counter,
                    settings,
                    Path(directory),
                    recall,
                    embedder if recall != "lexical" else None,
                )
            )
            progress(f"{conversation.sample_id}: {time.perf_counter() - started:.1f} s")
    return outcomes
