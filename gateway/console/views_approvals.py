"""Writes held for a decision: on a conversation's page (each with its masked values and what
became of it; Approve and Reject on one waiting for an operator), and the approvals waiting
anywhere on the conversations list."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from gateway.console.html import Child, Html, el
from gateway.console.views_layout import action_form, table
from gateway.operators.held_actions import HeldAction, HeldState
from gateway.operators.logins import OperatorLogin

STATE_LABELS: Final[dict[HeldState, str]] = {
    "waiting": "waiting for the customer",
    "approval": "waiting for an operator",
    "sent": "sent (the customer confirmed)",
    "cancelled": "cancelled by the customer",
    "approved": "approved and sent",
    "rejected": "rejected",
    "expired": "expired",
    "unknown": "unknown",
}
_BADGES: Final[dict[HeldState, str]] = {
    "waiting": "badge warn",
    "approval": "badge warn",
    "sent": "badge ok",
    "approved": "badge ok",
    "rejected": "badge bad",
}


def _when(held: HeldAction) -> str:
    asked = f"asked {held.asked_at:%Y-%m-%d %H:%M}"
    if held.decided_at is not None:
        return f"{asked} · decided {held.decided_at:%Y-%m-%d %H:%M}"
    if held.state == "expired":
        return f"{asked} · expired {held.expires_at:%Y-%m-%d %H:%M}"
    return f"{asked} · expires {held.expires_at:%Y-%m-%d %H:%M}"


def _values(held: HeldAction) -> Html:
    if not held.values:
        return el("p", {"class_": "muted"}, "No values.")
    return el(
        "dl",
        {"class_": "values"},
        [(el("dt", None, name), el("dd", None, value)) for name, value in held.values],
    )


def _held_item(login: OperatorLogin, conversation_id: str, held: HeldAction) -> Html:
    decide: Child = None
    if held.state == "approval":
        base = f"/console/conversations/{conversation_id}/actions/{held.id}"
        decide = el(
            "div",
            {"class_": "decide"},
            action_form(login, f"{base}/approve", "Approve"),
            action_form(login, f"{base}/reject", "Reject"),
        )
    return el(
        "li",
        {"class_": f"held state-{held.state}", "data_held_id": held.id, "data_state": held.state},
        el(
            "p",
            None,
            el("code", {"class_": "action-name"}, held.action),
            " ",
            el("span", {"class_": _BADGES.get(held.state, "badge")}, STATE_LABELS[held.state]),
            el("span", {"class_": "muted when"}, _when(held)),
        ),
        _values(held),
        decide,
    )


def held_section(
    login: OperatorLogin, conversation_id: str, held: Sequence[HeldAction]
) -> Html | None:
    """The conversation's latest held writes, newest first; nothing when there are none."""
    if not held:
        return None
    return el(
        "section",
        {"id": "held-actions", "class_": "held-actions"},
        el("h2", None, "Actions held for a decision"),
        el("ul", {"class_": "held"}, [_held_item(login, conversation_id, item) for item in held]),
    )


def approvals_section(waiting: Sequence[HeldAction]) -> Html | None:
    """The writes waiting for an operator, oldest first; nothing when there are none."""
    if not waiting:
        return None
    rows = [
        el(
            "tr",
            {"data_held_id": held.id},
            el("td", None, el("code", None, held.action)),
            el("td", None, "; ".join(f"{name}: {value}" for name, value in held.values) or "—"),
            el("td", None, f"{held.asked_at:%Y-%m-%d %H:%M}"),
            el("td", None, f"{held.expires_at:%Y-%m-%d %H:%M}"),
            el(
                "td",
                None,
                el("a", {"href": f"/console/conversations/{held.conversation_id}"}, "Open")
                if held.conversation_id is not None
                else "—",
            ),
        )
        for held in waiting
    ]
    return el(
        "section",
        {"id": "approvals", "class_": "held-actions"},
        el("h2", None, "Actions waiting for approval"),
        table(("Action", "Values", "Asked", "Expires", "Conversation"), rows, class_=None),
    )
