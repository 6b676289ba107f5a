"""Who a knowledge-base document may be told to: the same rule as fact scopes, by link level.

public     → anyone, an anonymous visitor included
customers  → a customer linked at asserted or better
verified   → a verified customer only
operators  → never a customer; the console's operators only
"""

from __future__ import annotations

import enum

from identity.levels import LinkLevel

__all__ = ["Audience", "audiences_for", "may_see"]


class Audience(enum.Enum):
    PUBLIC = "public"
    CUSTOMERS = "customers"
    VERIFIED = "verified"
    OPERATORS = "operators"

    @classmethod
    def parse(cls, text: str) -> Audience:
        """The audience named ``text`` (case-insensitive); ``ValueError`` for anything else."""
        try:
            return cls(text.strip().lower())
        except ValueError:
            names = ", ".join(a.value for a in cls)
            raise ValueError(f"unknown audience {text!r} (one of {names})") from None


_LEAST_LEVEL = {
    Audience.PUBLIC: LinkLevel.ANONYMOUS,
    Audience.CUSTOMERS: LinkLevel.ASSERTED,
    Audience.VERIFIED: LinkLevel.VERIFIED,
}


def may_see(level: LinkLevel, audience: Audience) -> bool:
    """Whether a channel identity linked at ``level`` may be told a chunk for ``audience``."""
    least = _LEAST_LEVEL.get(audience)
    return least is not None and level.rank >= least.rank


def audiences_for(level: LinkLevel) -> frozenset[Audience]:
    """Every audience a channel identity at ``level`` may be told (never ``operators``)."""
    return frozenset(a for a in Audience if may_see(level, a))
