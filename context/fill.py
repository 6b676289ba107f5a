"""Slice accounting and the greedy fill of optional members.

A ``Ledger`` tracks one slice through a build: its own budget, the surplus it received from the
slice before, what it used, what it was granted in the second pass and what it ceded. A ``Pool``
holds the optional members of a system-message slice (state extras, facts, knowledge,
summaries) in fill
priority and records every choice as a ``Pick``, so the build can give choices back in reverse
order if the whole window turns out larger than its line-by-line estimate.

Both are mutable and live only inside one ``build_window`` call; what leaves the call is the
frozen ``SliceReport``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from context.report import SliceReport

__all__ = ["Ledger", "Pick", "PickKind", "Pool"]

PickKind = Literal["state", "fact", "knowledge", "summary", "episode_summary", "turn"]


@dataclass(slots=True)
class Ledger:
    """Running accounting of one slice."""

    name: str
    budget: int
    received: int = 0
    used: int = 0
    granted: int = 0
    ceded: int = 0

    @property
    def allowance(self) -> int:
        """What the first pass may use: the slice's own budget plus the surplus received."""
        return self.budget + self.received

    def close_first_pass(self) -> int:
        """Cede what the first pass left unused; returns it for the next slice to receive."""
        self.ceded = self.allowance - self.used
        return self.ceded

    def give_back(self, pick: Pick) -> None:
        """Undo ``pick``'s charge (the build is shrinking the window)."""
        self.used -= pick.cost
        if pick.second_pass:
            self.granted -= pick.cost

    def freeze(self) -> SliceReport:
        return SliceReport(
            self.name, self.budget, self.used, self.received, self.granted, self.ceded
        )


@dataclass(frozen=True, slots=True)
class Pick:
    """One optional member chosen into the window; ``ref`` indexes its source sequence."""

    kind: PickKind
    ref: int
    cost: int
    second_pass: bool = False


@dataclass(slots=True)
class Pool:
    """Optional members of one system-message slice; ``costs[ref]`` in fill priority.

    ``header_cost`` is charged with the first member chosen (the block title and separator).
    """

    ledger: Ledger
    kind: PickKind
    header_cost: int
    costs: tuple[int, ...]
    chosen: set[int] = field(default_factory=set)

    def fill(self, allowance: int, picks: list[Pick], *, second_pass: bool) -> int:
        """Choose greedily in priority order within ``allowance``, skipping a member that does
        not fit so that smaller ones after it still can; returns the tokens charged."""
        used = 0
        for ref, cost in enumerate(self.costs):
            if ref in self.chosen:
                continue
            total = cost + (0 if self.chosen else self.header_cost)
            if used + total > allowance:
                continue
            used += total
            self.chosen.add(ref)
            picks.append(Pick(self.kind, ref, total, second_pass))
        self.ledger.used += used
        if second_pass:
            self.ledger.granted += used
        return used

    def give_back(self, pick: Pick) -> None:
        """Remove ``pick`` from the pool. Picks are given back newest first, so the member that
        paid the header is the last of its pool to go."""
        self.chosen.discard(pick.ref)
        self.ledger.give_back(pick)
