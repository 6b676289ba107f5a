"""The fields of a window's report, which `POST /v1/context` returns as they are."""

from __future__ import annotations

from typing import Final

REPORT_FIELDS: Final = frozenset(
    {
        "window",
        "output_reserve",
        "protocol_margin",
        "input_budget",
        "estimated_tokens",
        "full_history_tokens",
        "savings",
        "slices",
        "dropped",
        "prefix_sha256",
    }
)
"""The keys of a window's report (`BudgetReport.to_dict`), as the HTTP contract names them."""
