"""The console's inbox page: provider messages set aside after failing again and again, each
with its error and a retry form (audited, with a reason)."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.console.html import Html, el
from gateway.console.views_layout import action_form, page, table
from gateway.operators.logins import OperatorLogin
from gateway.storage.records import InboxDepth, SetAsideItem

# Characters of a set-aside message's text shown on the page.
PREVIEW_CHARS = 300


def _text_of(item: SetAsideItem) -> str:
    text = item.payload.get("text")
    if not isinstance(text, str):
        return "(no text)"
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


def _row(login: OperatorLogin, item: SetAsideItem) -> Html:
    return el(
        "tr",
        {"id": f"inbox-{item.id}"},
        el("td", None, item.received_at.strftime("%Y-%m-%d %H:%M:%S")),
        el("td", None, item.channel, el("br"), el("code", None, item.thread_key)),
        el("td", {"class_": "reason"}, _text_of(item)),
        el("td", None, str(item.attempts)),
        el("td", None, el("code", None, item.error)),
        el(
            "td",
            None,
            action_form(login, f"/console/inbox/{item.id}/retry", "Retry"),
        ),
    )


def inbox_page(
    login: OperatorLogin,
    depth: InboxDepth,
    items: Sequence[SetAsideItem],
    notice: str | None = None,
) -> Html:
    waiting = f"{depth.waiting} messages wait to be stored"
    if depth.oldest_waiting is not None:
        waiting += f", the oldest since {depth.oldest_waiting.strftime('%Y-%m-%d %H:%M:%S')}"
    body: Html
    if not items:
        body = el("p", None, "No message is set aside.")
    else:
        body = table(
            ("Received", "From", "Text", "Attempts", "Error", ""),
            [_row(login, item) for item in items],
        )
    return page(
        "Failed messages",
        login,
        el("h1", None, "Failed messages"),
        el("p", {"class_": "muted"}, waiting + "."),
        el(
            "p",
            None,
            f"{depth.set_aside} set aside after failing repeatedly. A retry puts a message back "
            "in line: it is stored like any other, or set aside again with its new error.",
        ),
        body,
        notice=notice,
    )
