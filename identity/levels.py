"""Link levels: how sure we are that a channel identity is a given customer.

Ordered ``verified > asserted > inferred > anonymous``. The enum is deliberately not a ``str``
subclass: comparing levels must use the rank, never alphabetical order of the names.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

__all__ = ["LinkLevel", "at_least", "strongest", "weakest"]

_RANKS = {"anonymous": 0, "inferred": 1, "asserted": 2, "verified": 3}


class LinkLevel(enum.Enum):
    """Strength of the evidence linking a channel identity to a customer, weakest to strongest."""

    ANONYMOUS = "anonymous"
    INFERRED = "inferred"
    ASSERTED = "asserted"
    VERIFIED = "verified"

    @property
    def rank(self) -> int:
        """0 for anonymous up to 3 for verified."""
        return _RANKS[self.value]

    @classmethod
    def parse(cls, text: str) -> LinkLevel:
        """The level named ``text`` (case-insensitive); ``ValueError`` for anything else."""
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise ValueError(f"unknown link level {text!r}") from None

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, LinkLevel):
            return NotImplemented
        return self.rank < other.rank

    def __le__(self, other: object) -> bool:
        if not isinstance(other, LinkLevel):
            return NotImplemented
        return self.rank <= other.rank

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, LinkLevel):
            return NotImplemented
        return self.rank > other.rank

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, LinkLevel):
            return NotImplemented
        return self.rank >= other.rank


def strongest(levels: Iterable[LinkLevel], default: LinkLevel = LinkLevel.ANONYMOUS) -> LinkLevel:
    """The highest level in ``levels``, or ``default`` when there is none."""
    return max(levels, key=lambda level: level.rank, default=default)


def weakest(levels: Iterable[LinkLevel], default: LinkLevel = LinkLevel.ANONYMOUS) -> LinkLevel:
    """The lowest level in ``levels``, or ``default`` when there is none."""
    return min(levels, key=lambda level: level.rank, default=default)


def at_least(level: LinkLevel, minimum: LinkLevel) -> bool:
    """Whether ``level`` is as strong as ``minimum`` or stronger."""
    return level.rank >= minimum.rank
