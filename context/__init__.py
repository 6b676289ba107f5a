"""Pure context engine: token counting, budgets, window assembly and budget reports.

No I/O: the gateway loads the inputs from storage, calls ``build_window`` and sends the result.
Typical use::

    counter = TiktokenCounter(load_encoding())          # once, at start-up
    window = build_window(request, Budget.for_window(8192), counter)
    window.messages_as_dicts(), window.report.to_dict()
"""

from __future__ import annotations

from context.budget import DEFAULT_WINDOW, SLICE_NAMES, Budget
from context.errors import (
    BudgetError,
    ContextError,
    ContextInputError,
    EncodingUnavailable,
    ScopeViolation,
)
from context.inputs import (
    TRANSCRIPT_CHANNELS,
    AnchoredMessage,
    ContextRequest,
    CurrentEpisode,
    FactItem,
    Instruction,
    Modality,
    OperationalState,
    Role,
    SummaryItem,
    Turn,
)
from context.relevance import rank_facts, rank_summaries, subject_terms, terms
from context.report import BudgetReport, ChatMessage, DroppedItem, SliceReport, Window
from context.tokens import (
    MESSAGE_OVERHEAD,
    OFFLINE_ENV,
    REPLY_PRIMER,
    TiktokenCounter,
    TokenCounter,
    load_encoding,
)
from context.window import build_window

__all__ = [
    "DEFAULT_WINDOW",
    "MESSAGE_OVERHEAD",
    "OFFLINE_ENV",
    "REPLY_PRIMER",
    "SLICE_NAMES",
    "TRANSCRIPT_CHANNELS",
    "AnchoredMessage",
    "Budget",
    "BudgetError",
    "BudgetReport",
    "ChatMessage",
    "ContextError",
    "ContextInputError",
    "ContextRequest",
    "CurrentEpisode",
    "DroppedItem",
    "EncodingUnavailable",
    "FactItem",
    "Instruction",
    "Modality",
    "OperationalState",
    "Role",
    "ScopeViolation",
    "SliceReport",
    "SummaryItem",
    "TiktokenCounter",
    "TokenCounter",
    "Turn",
    "Window",
    "build_window",
    "load_encoding",
    "rank_facts",
    "rank_summaries",
    "subject_terms",
    "terms",
]
