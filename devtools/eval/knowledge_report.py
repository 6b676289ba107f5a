"""The knowledge evaluation's figures per method, its table and its one-line JSON summary."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from devtools.eval.faq import KnowledgeCorpus
from devtools.eval.knowledge import KnowledgeOutcome, Method
from devtools.eval.report import EmbeddingCost

__all__ = ["KnowledgeFigures", "KnowledgeReport", "knowledge_figures", "summarize_knowledge"]


@dataclass(frozen=True, slots=True)
class KnowledgeFigures:
    """One method over every question. Shares are of the questions, but ``citations_right``
    (of the genuine citations made) and ``gold_cited`` (of the questions whose slice held the
    gold document)."""

    method: Method
    questions: int
    hit_rate: float  # the gold document among the slice's chunks
    hit_at_1: float  # the gold document's chunk ranked first
    mrr: float  # mean of 1 / the gold's rank in the slice's ranking (0 when absent)
    lines_mean: float
    tokens_median: float
    citations: int
    citations_right: float
    gold_cited: float
    forged_dropped: float
    verified_lines: int  # verified chunks in verified customers' windows, over the run
    anonymous_leaks: int  # verified chunks in anonymous visitors' windows, over the run


def _share(count: int, total: int) -> float:
    return round(count / total, 3) if total else 0.0


def knowledge_figures(method: Method, outcomes: Sequence[KnowledgeOutcome]) -> KnowledgeFigures:
    mine = [outcome for outcome in outcomes if outcome.method == method]
    total = len(mine)
    hits = [outcome for outcome in mine if outcome.hit]
    cited = [outcome for outcome in mine if outcome.citation.cited is not None]
    return KnowledgeFigures(
        method=method,
        questions=total,
        hit_rate=_share(len(hits), total),
        hit_at_1=_share(sum(outcome.rank == 1 for outcome in mine), total),
        mrr=round(sum(1 / o.rank for o in mine if o.rank) / total, 3) if total else 0.0,
        lines_mean=round(statistics.fmean(o.lines for o in mine), 2) if mine else 0.0,
        tokens_median=statistics.median(o.tokens for o in mine) if mine else 0.0,
        citations=len(cited),
        citations_right=_share(sum(o.citation.right_document for o in cited), len(cited)),
        gold_cited=_share(sum(o.citation.gold for o in hits), len(hits)),
        forged_dropped=_share(sum(o.citation.forged_dropped for o in mine), total),
        verified_lines=sum(outcome.verified_lines for outcome in mine),
        anonymous_leaks=sum(outcome.anonymous_leaks for outcome in mine),
    )


@dataclass(frozen=True, slots=True)
class KnowledgeReport:
    corpus: str
    documents: int
    chunks: int
    budget: int
    figures: tuple[KnowledgeFigures, ...]
    seconds: float
    embedding: EmbeddingCost | None = None  # None: no hybrid ranking in the run

    def table(self) -> str:
        lines = [
            f"knowledge: {self.corpus}: {self.documents} documents, {self.chunks} chunks; "
            f"slice of {self.budget} tokens",
            f"{'method':<8} {'n':>4} {'hit':>6} {'hit@1':>6} {'MRR':>6} {'lines':>6} "
            f"{'tokens':>7} {'cites ok':>9} {'gold ok':>8} {'forged out':>11} "
            f"{'verified':>9} {'leaks':>6}",
        ]
        for f in self.figures:
            lines.append(
                f"{f.method:<8} {f.questions:>4} {f.hit_rate:>6.3f} {f.hit_at_1:>6.3f} "
                f"{f.mrr:>6.3f} {f.lines_mean:>6.2f} {f.tokens_median:>7g} "
                f"{f.citations_right:>9.3f} {f.gold_cited:>8.3f} {f.forged_dropped:>11.3f} "
                f"{f.verified_lines:>9} {f.anonymous_leaks:>6}"
            )
        timing = f"time {self.seconds:.1f} s"
        if self.embedding is not None:
            cost = self.embedding
            timing += (
                f"; vectors {cost.seconds:g} s, {cost.computed} computed, "
                f"{cost.cached} from the cache"
            )
        lines.append(timing)
        return "\n".join(lines)

    def json_line(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def summarize_knowledge(
    corpus: KnowledgeCorpus,
    outcomes: Sequence[KnowledgeOutcome],
    *,
    methods: Sequence[Method],
    budget: int,
    seconds: float,
    embedding: EmbeddingCost | None = None,
) -> KnowledgeReport:
    return KnowledgeReport(
        corpus=corpus.name,
        documents=corpus.documents,
        chunks=len(corpus.chunks),
        budget=budget,
        figures=tuple(knowledge_figures(method, outcomes) for method in methods),
        seconds=round(seconds, 1),
        embedding=embedding,
    )
