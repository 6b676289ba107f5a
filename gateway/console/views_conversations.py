"""The conversations pages: who is talking now, and one conversation to take over, answer and
hand back. The server renders the frame; `conversations.js` fills it from the operator API
(under the same login, with the page's CSRF token) and reads it again whenever the change
stream (`/console/conversations/stream`) says something changed, so the page is live without
a reload."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.console.html import AttrValue, Html, el
from gateway.console.views_approvals import approvals_section, held_section
from gateway.console.views_conversation_list import choose_pane, list_pane, queue_pane
from gateway.console.views_layout import page, search_form
from gateway.operators.held_actions import HeldAction
from gateway.operators.logins import OperatorLogin

SCRIPT = "/console/static/conversations.js"
STREAM = "/console/conversations/stream"


def _live(login: OperatorLogin, view: str, **data: str) -> Html:
    """The element the script fills: what to show, and how to reach the API as this login."""
    attrs: dict[str, str] = {
        "id": "live",
        "data_view": view,
        "data_csrf": login.csrf_token,
        "data_operator": login.username,
        "data_stream": STREAM,
    }
    attrs.update({f"data_{name}": value for name, value in data.items()})
    return el(
        "div",
        attrs,
        el("p", {"class_": "muted", "id": "live-status", "role": "status"}, "Loading…"),
    )


def _assignment() -> Html:
    """Who the conversation is assigned to, and the form to assign it (to oneself or a
    teammate by username) or unassign it."""
    return el(
        "div",
        {"class_": "assignment"},
        el("p", {"id": "assigned", "class_": "muted"}, "Unassigned"),
        el("button", {"type": "button", "id": "assign-me"}, "Assign to me"),
        el(
            "form",
            {"id": "assign-form", "class_": "search"},
            el(
                "label",
                None,
                "Assign to a teammate",
                el(
                    "input",
                    {"id": "assign-operator", "name": "operator", "required": True},
                ),
            ),
            el("button", {"type": "submit"}, "Assign"),
        ),
        el("button", {"type": "button", "id": "unassign", "hidden": True}, "Unassign"),
    )


def conversations_page(login: OperatorLogin, approvals: Sequence[HeldAction] = ()) -> Html:
    """The inbox before a conversation is chosen: the list, an empty thread and the queue in
    numbers. On a phone only the list shows; a conversation opens as its own page."""
    return page(
        "Conversations",
        login,
        el("h1", None, "Conversations"),
        search_form("Find a customer: phone, e-mail, name or id"),
        _live(login, "list"),
        approvals_section(approvals),
        el("div", {"class_": "inbox inbox-home"}, list_pane(), choose_pane(), queue_pane()),
        el("script", {"src": SCRIPT, "defer": True}),
    )


def _mode(value: str, label: str, checked: bool) -> Html:
    attrs: dict[str, AttrValue] = {
        "type": "radio",
        "name": "mode",
        "value": value,
        "id": f"mode-{value}",
        "checked": checked,
    }
    return el("label", {"class_": "mode"}, el("input", attrs), label)


def _template_picker() -> Html:
    """WhatsApp's window closed: one of the tenant's templates, its variables pre-filled from
    the customer's facts and editable (`conversations.js` fills and shows it)."""
    return el(
        "form",
        {"id": "template-form", "class_": "template-picker", "hidden": True},
        el(
            "label",
            None,
            "Template",
            el("select", {"id": "template-name"}),
        ),
        el("div", {"id": "template-variables", "class_": "template-variables"}),
        el("button", {"type": "submit", "id": "template-send"}, "Send template"),
    )


def _reply_box() -> Html:
    """A reply to the customer (only by the operator holding the conversation) or an internal
    note (by any operator: shown in the thread to operators only, never sent). Enter sends,
    Shift+Enter starts a new line."""
    return el(
        "form",
        {"id": "reply-form", "class_": "reply"},
        # The customer's channel and, on WhatsApp, whether free text may go now.
        el("p", {"id": "reply-state", "class_": "reply-state muted"}),
        el(
            "div",
            {"class_": "reply-modes", "role": "radiogroup", "aria_label": "Write"},
            _mode("reply", "Reply", True),
            _mode("note", "Note (operators only)", False),
        ),
        el(
            "label",
            None,
            el("span", {"id": "reply-label"}, "Reply to the customer"),
            el(
                "textarea",
                {
                    "id": "reply-text",
                    "rows": 3,
                    "maxlength": 4000,
                    "placeholder": "Type / for canned replies",
                },
            ),
        ),
        # Canned replies matching what follows a leading "/" (`conversations.js` fills it).
        el("ul", {"id": "canned", "class_": "canned", "role": "listbox", "hidden": True}),
        # A file by its URL (http or https), sent with the reply; not with a note.
        el(
            "label",
            {"id": "attachment-label"},
            "Attachment URL (optional)",
            el("input", {"type": "url", "id": "reply-attachment", "placeholder": "https://"}),
        ),
        el("button", {"type": "submit", "id": "reply"}, "Send"),
    )


def conversation_page(
    login: OperatorLogin,
    conversation_id: str,
    held: Sequence[HeldAction] = (),
    notice: str | None = None,
    settings: Html | None = None,
) -> Html:
    """`settings`: the read-only section of the settings the conversation follows."""
    return page(
        "Conversation",
        login,
        el("p", {"class_": "back"}, el("a", {"href": "/console"}, "← Conversations")),
        el("h1", {"id": "title"}, "Conversation"),
        _live(login, "conversation", conversation=conversation_id),
        held_section(login, conversation_id, held),
        settings,
        # Three panes side by side on a wide screen; on a narrow one the list gives way to
        # the back link above and the customer pane follows the thread (a link jumps to it).
        el(
            "div",
            {"class_": "inbox"},
            list_pane(),
            el(
                "section",
                {"id": "thread-box", "class_": "pane"},
                el(
                    "p",
                    {"class_": "to-customer"},
                    el("a", {"href": "#profile-box"}, "Customer details ↓"),
                ),
                el("h2", None, "Thread"),
                el("p", {"id": "owner", "class_": "owner"}),
                _assignment(),
                # WhatsApp's 24-hour window and the replies held outside it (hidden elsewhere).
                el("p", {"id": "window", "class_": "window", "hidden": True}),
                el("ol", {"id": "thread", "class_": "thread"}),
                el(
                    "div",
                    {"id": "controls", "class_": "controls"},
                    el("button", {"type": "button", "id": "take"}, "Take over"),
                    _reply_box(),
                    _template_picker(),
                    el("button", {"type": "button", "id": "handback"}, "Hand back to the bot"),
                ),
            ),
            el(
                "section",
                {"id": "profile-box", "class_": "pane"},
                el("p", {"class_": "back"}, el("a", {"href": "#thread-box"}, "↑ Thread")),
                el("h2", None, "Customer"),
                el("div", {"id": "profile"}),
            ),
        ),
        el("script", {"src": SCRIPT, "defer": True}),
        notice=notice,
    )
