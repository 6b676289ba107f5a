"""Console page layout: the frame, forms with their CSRF token, login, errors, search, audit."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.console.cookies import CSRF_FIELD
from gateway.console.html import Child, Html, document, el, join
from gateway.operators.logins import OperatorLogin
from gateway.operators.search import SearchHit
from gateway.storage.records import (
    AuditRecord,
)


def page(
    title: str, login: OperatorLogin | None, *content: Child, notice: str | None = None
) -> Html:
    nav: Child = None
    if login is not None:
        nav = el(
            "nav",
            {"class_": "top"},
            el("a", {"href": "/console", "class_": "brand"}, "Relaydesk console"),
            el("a", {"href": "/console"}, "Conversations"),
            # The queue of provider messages that failed to store (not the conversations).
            el("a", {"href": "/console/inbox"}, "Failed messages"),
            el("a", {"href": "/console/reports"}, "Reports"),
            el("a", {"href": "/console/knowledge"}, "Knowledge"),
            el("a", {"href": "/console/audit"}, "Audit log"),
            el("a", {"href": "/console/accounts"}, "Accounts") if login.is_admin else None,
            el("a", {"href": "/console/settings"}, "Settings") if login.is_admin else None,
            el("span", {"class_": "who"}, f"signed in as {login.username}"),
            el(
                "form",
                {"method": "post", "action": "/console/logout", "class_": "inline"},
                csrf(login),
                el("button", {"type": "submit"}, "Log out"),
            ),
        )
    flash = el("p", {"class_": "notice", "role": "status"}, notice) if notice else None
    return document(f"{title} · Relaydesk", join(nav, el("main", None, flash, *content)))


def table(headers: Sequence[str], rows: Sequence[Html], *, class_: str | None = "audit") -> Html:
    """A table with one header row of ``headers`` and the ``rows`` (``tr`` elements) below;
    ``class_`` None gives it no class."""
    return el(
        "table",
        {"class_": class_},
        el("thead", None, el("tr", None, [el("th", None, h) for h in headers])),
        el("tbody", None, rows),
    )


def csrf(login: OperatorLogin) -> Html:
    return el("input", {"type": "hidden", "name": CSRF_FIELD, "value": login.csrf_token})


def reason_field(label: str = "Reason") -> Html:
    return el(
        "label",
        None,
        label,
        el("input", {"name": "reason", "required": True, "maxlength": 2000, "autocomplete": "off"}),
    )


def action_form(
    login: OperatorLogin, action: str, button: str, *fields: Child, danger: bool = False
) -> Html:
    """`danger`: the action cannot be undone, so its button is drawn red."""
    return el(
        "form",
        {"method": "post", "action": action, "class_": "action"},
        csrf(login),
        *fields,
        reason_field(),
        el("button", {"type": "submit", "class_": "danger" if danger else None}, button),
    )


def danger_zone(title: str, *content: Child) -> Html:
    """A red-bordered section that sets actions that cannot be undone apart from harmless ones."""
    return el("section", {"class_": "danger-zone"}, el("h2", None, title), *content)


def login_page(login_csrf: str, error: str | None = None, *, no_account: bool = False) -> Html:
    """`no_account`: no operator account exists yet, so the page says how to make the first."""
    return page(
        "Log in",
        None,
        el("h1", None, "Operator login"),
        el("p", {"class_": "error", "role": "alert"}, error) if error else None,
        el(
            "p",
            {"class_": "notice", "role": "status", "id": "first-account"},
            "No operator account exists yet. Create the first one on the server with ",
            el("code", None, "relaydesk operator add NAME --admin"),
            " and log in with it here.",
        )
        if no_account
        else None,
        el(
            "form",
            {"method": "post", "action": "/console/login", "class_": "login"},
            el("input", {"type": "hidden", "name": CSRF_FIELD, "value": login_csrf}),
            el("label", None, "Username", el("input", {"name": "username", "required": True})),
            el(
                "label",
                None,
                "Password",
                el("input", {"name": "password", "type": "password", "required": True}),
            ),
            el("button", {"type": "submit"}, "Log in"),
        ),
    )


def error_page(login: OperatorLogin | None, status: int, detail: str) -> Html:
    return page(
        "Error",
        login,
        el("h1", None, f"Request refused ({status})"),
        el("p", {"class_": "error", "role": "alert"}, detail),
        el("p", None, el("a", {"href": "/console"}, "Back to the console")),
    )


def search_form(label: str, query: str = "") -> Html:
    """Customer search (`/console?q=…`)."""
    return el(
        "form",
        {"method": "get", "action": "/console", "class_": "search", "role": "search"},
        el(
            "label",
            None,
            label,
            el("input", {"name": "q", "value": query, "type": "search", "required": True}),
        ),
        el("button", {"type": "submit"}, "Search"),
    )


def search_page(
    login: OperatorLogin, query: str, hits: Sequence[SearchHit] | None, pending: int
) -> Html:
    results: Child = None
    if hits is not None:
        results = (
            el("p", None, "No customer matches.")
            if not hits
            else el(
                "ul",
                {"class_": "hits"},
                [
                    el(
                        "li",
                        None,
                        el(
                            "a",
                            {"href": f"/console/customers/{hit.customer_id}"},
                            hit.display_name or hit.customer_id,
                        ),
                        el("span", {"class_": "muted"}, " · ".join(hit.identities) or "—"),
                    )
                    for hit in hits
                ],
            )
        )
    return page(
        "Customers",
        login,
        el("h1", None, "Find a customer"),
        search_form("Phone, e-mail, name or id", query),
        results,
        el("p", {"class_": "muted"}, f"{pending} identity links wait for a decision."),
    )


def audit_page(login: OperatorLogin, entries: Sequence[AuditRecord], subject: str | None) -> Html:
    return page(
        "Audit log",
        login,
        el("h1", None, "Audit log", f" for {subject}" if subject else None),
        (
            _audit_table(entries)
            if entries
            else el("p", {"class_": "muted"}, "No operator action is recorded yet.")
        ),
    )


def _audit_table(entries: Sequence[AuditRecord]) -> Html:
    return table(
        ("When", "Operator", "Action", "Reason", "Subject", "Details"),
        [
            el(
                "tr",
                {"data_action": e.action},
                el("td", None, e.created_at.strftime("%Y-%m-%d %H:%M:%S")),
                el("td", None, e.actor),
                el("td", None, e.action),
                el("td", {"class_": "reason"}, e.reason),
                el(
                    "td",
                    None,
                    el("a", {"href": f"/console/customers/{e.subject_id}"}, e.subject_id)
                    if e.subject_type == "customer"
                    else e.subject_id,
                ),
                el(
                    "td",
                    None,
                    el("code", None, ", ".join(f"{k}={v}" for k, v in e.details.items())),
                ),
            )
            for e in entries
        ],
    )
