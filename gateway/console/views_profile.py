"""The unified profile page and the message page of the console."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from urllib.parse import urlsplit

from channels.transcripts import DEFAULT_THRESHOLD
from context.render import summary_tag
from gateway.console.html import Child, Html, el
from gateway.console.views_layout import action_form, danger_zone, page, table
from gateway.console.views_traces import action_calls_section, traces_section, turn_section
from gateway.memory.summaries import summary_item
from gateway.operators.action_history import AuditedCall, TurnTrace
from gateway.operators.logins import OperatorLogin
from gateway.operators.names import NAME_FACT_KEYS, known_name
from gateway.operators.profile import Profile
from gateway.storage.records import (
    FactRecord,
    MessageRecord,
    SummaryRecord,
)
from gateway.storage.repositories.identity_names import PROFILE_NAME_KEY

_MARKED = re.compile(r"(\[unclear:[^\]]*\]|\S+\?)")
_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")


def _message_href(customer_id: str, message_id: int) -> str:
    return f"/console/customers/{customer_id}/messages/{message_id}"


def _low_words(message: MessageRecord) -> set[str]:
    raw = (message.words or {}).get("words") or []
    low: set[str] = set()
    for word in raw:
        if not isinstance(word, dict):
            continue
        confidence = word.get("confidence")
        if isinstance(confidence, int | float) and confidence < DEFAULT_THRESHOLD:
            low.add(_PUNCT.sub("", str(word.get("text", ""))).lower())
    return low


def message_text(message: MessageRecord) -> Html:
    """The text; on a transcript, the words marked doubtful at ingest are highlighted."""
    if message.channel != "phone":
        return el("span", {"class_": "text"}, message.text)
    low = _low_words(message)
    parts: list[Child] = []
    for index, piece in enumerate(_MARKED.split(message.text)):
        doubtful = index % 2 == 1 and (
            piece.startswith("[unclear:") or _PUNCT.sub("", piece).lower() in low or not low
        )
        parts.append(
            el("mark", {"class_": "low", "title": "low confidence"}, piece) if doubtful else piece
        )
    return el("span", {"class_": "text"}, parts)


def attachment_links(message: MessageRecord) -> Html | None:
    """A message's attachments as links (http and https only), labelled with their caption,
    file name or type; None for a message without any."""
    links = [
        el(
            "a",
            {"href": m.url, "class_": "attachment", "rel": "noopener noreferrer"},
            f"📎 {m.caption or m.filename or m.content_type or 'attachment'}",
        )
        for m in message.media
        if urlsplit(m.url).scheme in ("http", "https")
    ]
    return el("span", {"class_": "attachments"}, links) if links else None


def _fact_row(
    login: OperatorLogin, customer_id: str, fact: FactRecord, history: list[FactRecord]
) -> Html:
    base = f"/console/customers/{customer_id}/facts/{fact.id}"
    older = [h for h in history if h.id != fact.id]
    actions = el(
        "details",
        {"class_": "actions"},
        el("summary", None, "Correct, pin or retract"),
        action_form(
            login,
            f"{base}/correct",
            "Correct",
            el("label", None, "New value", el("input", {"name": "value", "required": True})),
        ),
        action_form(
            login, f"{base}/{'unpin' if fact.pinned else 'pin'}", "Unpin" if fact.pinned else "Pin"
        ),
        action_form(login, f"{base}/retract", "Retract"),
    )
    return el(
        "tr",
        {"data_fact_key": fact.key, "data_fact_id": fact.id},
        el("td", None, fact.key),
        el("td", {"class_": "value"}, fact.value),
        el("td", None, f"{fact.confidence:.2f}"),
        el(
            "td",
            None,
            el(
                "span",
                {"class_": "badge ok" if fact.confirmed else "badge warn"},
                "confirmed" if fact.confirmed else "unconfirmed",
            ),
            el("span", {"class_": "badge"}, "pinned") if fact.pinned else None,
        ),
        el(
            "td",
            None,
            el(
                "a",
                {"href": _message_href(customer_id, fact.source_message_id)},
                f"{fact.source_channel} message #{fact.source_message_id}",
            ),
        ),
        el(
            "td",
            None,
            el(
                "ul",
                {"class_": "history"},
                [
                    el(
                        "li",
                        None,
                        el("s", None, h.value),
                        " ",
                        el(
                            "a",
                            {"href": _message_href(customer_id, h.source_message_id)},
                            f"#{h.source_message_id}",
                        ),
                        " retracted" if h.retracted else " superseded",
                    )
                    for h in older
                    if not h.is_current
                ],
            )
            if older
            else "—",
        ),
        el("td", None, actions),
    )


def _facts_section(login: OperatorLogin, customer_id: str, facts: Sequence[FactRecord]) -> Html:
    by_key: dict[str, list[FactRecord]] = defaultdict(list)
    for fact in facts:
        by_key[fact.key].append(fact)
    by_scope: dict[str, list[FactRecord]] = defaultdict(list)
    for fact in facts:
        if fact.is_current:
            by_scope[fact.scope].append(fact)
    retracted_keys = sorted(k for k, rows in by_key.items() if not any(r.is_current for r in rows))
    tables = [
        el(
            "section",
            {"class_": "scope", "data_scope": scope},
            el("h3", None, f"Scope: {scope}"),
            table(
                ("Key", "Value", "Confidence", "State", "Source", "History", "Actions"),
                [_fact_row(login, customer_id, f, by_key[f.key]) for f in rows],
                class_=None,
            ),
        )
        for scope, rows in sorted(by_scope.items())
    ]
    gone = (
        el("p", {"class_": "muted"}, "Retracted or superseded only: ", ", ".join(retracted_keys))
        if retracted_keys
        else None
    )
    return el(
        "section",
        {"id": "facts"},
        el("h2", None, "Facts"),
        tables or el("p", None, "No facts."),
        gone,
    )


def _identities_section(login: OperatorLogin, profile: Profile) -> Html:
    cid = profile.customer.id
    rows = [
        el(
            "tr",
            None,
            el("td", {"class_": "identity-id"}, i.external_id),
            el("td", None, el("span", {"class_": f"level level-{i.link_level}"}, i.link_level)),
            el("td", None, str(i.evidence.get("description") or i.evidence or "—")),
        )
        for i in profile.identities
    ]
    pending = [
        el(
            "li",
            {"class_": "pending", "data_link_id": link.id},
            el("strong", None, f"{link.identifier_kind} {link.identifier_value}"),
            f" claimed {link.claimed_level} ({link.reason}); identity {link.identity_id}",
            " → this customer"
            if link.target_customer_id == cid
            else f" → {link.target_customer_id}",
            action_form(login, f"/console/customers/{cid}/links/{link.id}/confirm", "Confirm link"),
            action_form(login, f"/console/customers/{cid}/links/{link.id}/reject", "Reject link"),
        )
        for link in profile.pending
    ]
    merge = action_form(
        login,
        f"/console/customers/{cid}/merge",
        "Merge into this customer",
        el(
            "label",
            None,
            "Customer id to merge in",
            el("input", {"name": "source_customer_id", "required": True}),
        ),
    )
    split = action_form(
        login,
        f"/console/customers/{cid}/split",
        "Split off to a new customer",
        el(
            "fieldset",
            None,
            el("legend", None, "Identities to split off"),
            [
                el(
                    "label",
                    {"class_": "check"},
                    el("input", {"type": "checkbox", "name": "identities", "value": i.external_id}),
                    i.external_id,
                )
                for i in profile.identities
            ],
        ),
    )
    identifiers = ", ".join(f"{i.kind} {i.value} ({i.link_level})" for i in profile.identifiers)
    return el(
        "section",
        {"id": "identities"},
        el("h2", None, "Identities"),
        table(("Identity", "Link level", "Evidence"), rows, class_=None),
        el("p", {"class_": "muted"}, "Identifiers: ", identifiers or "—"),
        el("h3", None, "Pending links"),
        el("ul", {"class_": "pending-links"}, pending) if pending else el("p", None, "None."),
        el("details", None, el("summary", None, "Merge or split"), merge, split),
    )


def _episodes_section(profile: Profile) -> Html:
    cid = profile.customer.id
    items = []
    for episode, msgs in profile.episodes:
        confidence = (
            f" · confidence {episode.transcript_confidence:.2f}"
            if episode.transcript_confidence is not None
            else ""
        )
        items.append(
            el(
                "details",
                {
                    "class_": f"episode channel-{episode.channel}",
                    "open": episode.channel == "phone" or None,
                },
                el(
                    "summary",
                    None,
                    f"{episode.channel} · {episode.status} · {episode.started_at:%Y-%m-%d %H:%M}"
                    f" · {len(msgs)} messages{confidence}",
                ),
                el(
                    "ol",
                    {"class_": "messages"},
                    [
                        el(
                            "li",
                            {"id": f"message-{m.id}", "class_": f"msg role-{m.role}"},
                            el(
                                "a", {"href": _message_href(cid, m.id), "class_": "mid"}, f"#{m.id}"
                            ),
                            el("span", {"class_": "role"}, m.role),
                            message_text(m),
                            attachment_links(m),
                        )
                        for m in msgs
                    ],
                ),
            )
        )
    return el(
        "section", {"id": "episodes"}, el("h2", None, "Episodes"), items or el("p", None, "None.")
    )


def _summary_tag(record: SummaryRecord) -> str:
    return summary_tag(summary_item(record))


def _summaries_section(profile: Profile) -> Html:
    return el(
        "section",
        {"id": "summaries"},
        el("h2", None, "Summaries"),
        [
            el(
                "div",
                {"class_": "summary"},
                el("code", {"class_": "tag"}, _summary_tag(s)),
                el("p", None, s.summary),
            )
            for s in profile.summaries
        ]
        or el("p", None, "None."),
    )


ADMINS_ERASE = "Only an admin can erase; ask one of your admins."


def _data_section(cid: str) -> Html:
    """The customer's data export (its erasure is in the danger zone)."""
    return el(
        "section",
        None,
        el("h2", None, "Customer data"),
        el("p", None, el("a", {"href": f"/console/customers/{cid}/export"}, "Export (JSON)")),
    )


def _danger_zone(login: OperatorLogin, cid: str) -> Html:
    """The erasure, last on the page and drawn red: it asks for the customer id typed again
    (nothing of it can be undone)."""
    confirm = el(
        "label",
        None,
        "Type the customer id to confirm",
        el("input", {"name": "confirm", "required": True, "autocomplete": "off"}),
    )
    return danger_zone(
        "Danger zone",
        el(
            "p",
            {"class_": "muted"},
            "Erasing removes this customer and everything stored about them, customers"
            " merged into it included; it cannot be undone.",
        ),
        action_form(
            login,
            f"/console/customers/{cid}/erase",
            "Erase this customer",
            confirm,
            danger=True,
        )
        if login.is_admin
        else el("p", {"class_": "muted"}, ADMINS_ERASE),
    )


def _known_name(profile: Profile) -> str | None:
    """The name the customer stated, else one their channels gave (`operators.names`)."""
    stated = {f.key: f.value for f in profile.facts if f.key in NAME_FACT_KEYS and f.is_current}
    given = (i.evidence.get(PROFILE_NAME_KEY) for i in profile.identities)
    return known_name(stated, next((n for n in given if isinstance(n, str) and n), None))


def profile_page(
    login: OperatorLogin,
    profile: Profile,
    notice: str | None,
    calls: Sequence[AuditedCall] = (),
) -> Html:
    customer = profile.customer
    cid = customer.id
    preview = el(
        "form",
        {"method": "get", "action": f"/console/customers/{cid}/preview", "class_": "preview"},
        el(
            "label",
            None,
            "Channel identity",
            el(
                "select",
                {"name": "identity"},
                [
                    el("option", {"value": i.id}, f"{i.external_id} ({i.link_level})")
                    for i in profile.identities
                ],
            ),
        ),
        el("label", None, "Sample message", el("input", {"name": "message", "required": True})),
        el("button", {"type": "submit"}, "Preview context"),
    )
    rebuild = action_form(login, f"/console/customers/{cid}/rebuild", "Rebuild memory")
    return page(
        customer.display_name or _known_name(profile) or cid,
        login,
        el("h1", None, "Customer ", el("code", None, cid)),
        el(
            "p",
            {"class_": "muted"},
            customer.display_name or _known_name(profile) or "no display name",
            f" · since {customer.created_at:%Y-%m-%d}",
        ),
        el(
            "div",
            {"class_": "tools"},
            el("section", None, el("h2", None, "Context preview"), preview),
            el("section", None, el("h2", None, "Memory"), rebuild),
            _data_section(cid),
            el(
                "p",
                None,
                el("a", {"href": f"/console/audit?subject={cid}"}, "This customer's audit log"),
            ),
        ),
        _identities_section(login, profile),
        _facts_section(login, cid, profile.facts),
        action_calls_section(calls),
        _summaries_section(profile),
        _episodes_section(profile),
        traces_section(profile),
        _danger_zone(login, cid),
        notice=notice,
    )


def message_page(
    login: OperatorLogin, message: MessageRecord, turn: TurnTrace | None = None
) -> Html:
    return page(
        f"Message #{message.id}",
        login,
        el("h1", None, f"Message #{message.id}"),
        el(
            "dl",
            {"class_": "meta"},
            el("dt", None, "Customer"),
            el(
                "dd",
                None,
                el("a", {"href": f"/console/customers/{message.customer_id}"}, message.customer_id),
            ),
            el("dt", None, "Channel"),
            el("dd", None, message.channel),
            el("dt", None, "Role"),
            el("dd", None, message.role),
            el("dt", None, "Episode"),
            el("dd", None, message.episode_id),
            el("dt", None, "At"),
            el("dd", None, message.created_at.isoformat()),
            el("dt", None, "Confidence"),
            el(
                "dd",
                None,
                "—"
                if message.transcript_confidence is None
                else f"{message.transcript_confidence:.2f}",
            ),
        ),
        el(
            "blockquote",
            {"class_": "message", "id": f"message-{message.id}"},
            message_text(message),
        ),
        turn_section(turn),
        danger_zone(
            "Danger zone",
            el(
                "p",
                {"class_": "muted"},
                "Erasing removes this message with every version of it and what was learned"
                " from it; the episode's summary is rebuilt. It cannot be undone.",
            ),
            action_form(
                login,
                f"/console/customers/{message.customer_id}/messages/{message.id}/erase",
                "Erase this message",
                danger=True,
            )
            if login.is_admin
            else el("p", {"class_": "muted"}, ADMINS_ERASE),
        ),
    )
