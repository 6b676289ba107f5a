"""The inbox's list pane, the same on `/console` and beside an open conversation: the views,
the channel and tenant filters, the search in messages, and the conversations grouped by who
answers them (`conversations.js` fills the groups and keeps them live)."""

from __future__ import annotations

from gateway.console.html import Html, el

# The inbox's views: which conversations the list shows (`conversations.js` filters by them).
VIEWS = (
    ("all", "All"),
    ("waiting", "Waiting"),
    ("mine", "Mine"),
    ("unassigned", "Unassigned"),
    ("bot", "With the bot"),
)

# The groups of the list, in the order a support team works them.
GROUPS = (
    ("waiting", "Waiting"),
    ("human", "With an operator"),
    ("bot", "With the bot"),
)


def _views() -> Html:
    return el(
        "div",
        {"class_": "views", "role": "group", "aria_label": "Views"},
        *(
            el(
                "button",
                {
                    "type": "button",
                    "data_inbox_view": key,
                    "aria_pressed": "true" if key == "all" else "false",
                },
                label,
            )
            for key, label in VIEWS
        ),
    )


def _filters() -> Html:
    """The channel and tenant filters (their options come with the list) and the search in
    messages."""
    return el(
        "div",
        {"class_": "filters"},
        el(
            "label",
            None,
            "Channel",
            el("select", {"id": "filter-channel"}, el("option", {"value": ""}, "Every channel")),
        ),
        el(
            "label",
            None,
            "Tenant",
            el("select", {"id": "filter-tenant"}, el("option", {"value": ""}, "Every tenant")),
        ),
        el(
            "form",
            {"id": "message-search", "class_": "search", "role": "search"},
            el(
                "label",
                None,
                "Search in messages",
                el("input", {"type": "search", "id": "message-q", "name": "q"}),
            ),
            el("button", {"type": "submit"}, "Find in messages"),
        ),
    )


def list_pane() -> Html:
    return el(
        "nav",
        {"id": "list-pane", "class_": "pane", "aria_label": "Conversations"},
        el("h2", None, "Conversations"),
        el("div", {"class_": "inbox-tools"}, _views(), _filters()),
        *(
            el(
                "section",
                {"id": key, "class_": "conversations"},
                el("h3", None, label),
                el("ul", {"class_": "pane-list"}),
            )
            for key, label in GROUPS
        ),
    )


def queue_pane() -> Html:
    """`/console`'s customer pane before a conversation is chosen: the queue in numbers (filled
    with the list) and where to find a customer."""
    return el(
        "aside",
        {"id": "profile-box", "class_": "pane"},
        el("h2", None, "Queue"),
        el("dl", {"id": "queue-summary", "class_": "queue-summary"}),
        el(
            "p",
            {"class_": "muted"},
            "Open a conversation to see who the customer is, what is known about them and "
            "how sure the link is.",
        ),
    )


def choose_pane() -> Html:
    """`/console`'s thread pane before a conversation is chosen."""
    return el(
        "section",
        {"id": "thread-box", "class_": "pane empty-thread"},
        el("h2", None, "Thread"),
        el(
            "p",
            {"class_": "muted"},
            "Choose a conversation from the list to read it, take it over or leave a note.",
        ),
    )
