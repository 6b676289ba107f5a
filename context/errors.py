"""Errors raised by the context engine.

One shallow tree; each class exists because a caller handles it differently::

    ContextError                  base; carries a stable ``code`` and a human ``detail``
    ├── BudgetError               the request is valid but cannot fit the budget (HTTP 422)
    ├── ContextInputError         the caller passed inconsistent input (a bug upstream, HTTP 500)
    │   └── ScopeViolation        a fact outside the allowed scopes reached the builder
    └── EncodingUnavailable       no tokenizer could be loaded (start-up failure)
"""

from __future__ import annotations

__all__ = [
    "BudgetError",
    "ContextError",
    "ContextInputError",
    "EncodingUnavailable",
    "ScopeViolation",
]


class ContextError(Exception):
    """Base of every error the context engine raises; ``code`` is stable, ``detail`` is prose."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


class BudgetError(ContextError):
    """The window cannot be built within the budget without a silent cut.

    Codes: ``fixed_context_exceeds_budget`` (instruction + anchored messages exceed their slice),
    ``mandatory_context_exceeds_budget`` (state core, current message or the last user/assistant
    turns cannot fit what their slices may use).
    """


class ContextInputError(ContextError):
    """The request contradicts the builder's contract (e.g. a turn from another channel)."""


class ScopeViolation(ContextInputError):
    """A fact whose scope the identity link does not allow was handed to the builder.

    The policy filters facts before the builder; reaching here means a filter was skipped, so the
    build is refused rather than leaking the fact into a prompt.
    """

    def __init__(self, fact_id: str, scope: str) -> None:
        super().__init__("fact_scope_not_allowed", f"fact {fact_id!r} has scope {scope!r}")
        self.fact_id = fact_id
        self.scope = scope


class EncodingUnavailable(ContextError):
    """Neither tiktoken's own loader nor the bundled offline file produced an encoding."""
