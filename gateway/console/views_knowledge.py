"""The Knowledge page: every tenant's documents with their audience, chunk count, date, last
sync and sync error, for any operator. Documents are added and removed through the API and the
command line (an admin's or the API key's call); an admin may read a URL document again from
here ("Sync now")."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gateway.console.html import Html, el
from gateway.console.views_layout import csrf, page, table
from gateway.operators.logins import OperatorLogin
from gateway.storage.repositories.knowledge import DocumentRecord
from gateway.tenant_ref import TenantRef

HOW_TO_ADD = (
    "Add or replace a document with relaydesk knowledge add FILE --audience public (or"
    " customers, verified, operators), or POST /v1/knowledge/documents; fetch a page or a"
    " sitemap with relaydesk knowledge add --url URL or POST /v1/knowledge/urls; remove one with"
    " relaydesk knowledge remove ID."
)


def _when(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M}"


def _tenant(encoded: str) -> str:
    try:
        return TenantRef.decode(encoded).host or encoded
    except ValueError:
        return encoded


def _sync_form(login: OperatorLogin, document: DocumentRecord) -> Html | None:
    """ "Sync now" for a URL document, for an admin (an agent reads the page only)."""
    if document.source_url is None or not login.is_admin:
        return None
    return el(
        "form",
        {"method": "post", "action": f"/console/knowledge/{document.id}/sync", "class_": "sync"},
        csrf(login),
        el("input", {"type": "hidden", "name": "tenant", "value": document.tenant}),
        el("button", {"type": "submit"}, "Sync now"),
    )


def _row(login: OperatorLogin, document: DocumentRecord) -> Html:
    title = (
        el("a", {"href": document.source_url, "rel": "noopener"}, document.title)
        if document.source_url
        else document.title
    )
    return el(
        "tr",
        {"data_document": document.id, "class_": "late" if document.sync_error else None},
        el("td", None, title, el("br"), el("code", {"class_": "muted"}, document.id)),
        el("td", None, _tenant(document.tenant)),
        el("td", None, el("span", {"class_": "tag"}, document.audience.value)),
        el("td", None, document.format),
        el("td", {"class_": "chunks"}, str(document.chunk_count)),
        el("td", None, f"{document.updated_at:%Y-%m-%d}"),
        el("td", None, _when(document.synced_at), _sync_form(login, document)),
        el("td", {"class_": "sync-error"}, document.sync_error or "—"),
    )


def knowledge_page(
    login: OperatorLogin, documents: Sequence[DocumentRecord], *, notice: str | None = None
) -> Html:
    return page(
        "Knowledge",
        login,
        el("h1", None, "Knowledge base"),
        el(
            "p",
            {"class_": "muted"},
            "What the bot may answer from, per tenant. A chunk reaches a customer only when the "
            "audience allows the customer's link level: public to anyone, customers from "
            "asserted, verified to verified customers, operators to no customer.",
        ),
        el("p", {"class_": "muted"}, HOW_TO_ADD),
        (
            table(
                (
                    "Document",
                    "Tenant",
                    "Audience",
                    "Format",
                    "Chunks",
                    "Dated",
                    "Last sync",
                    "Sync error",
                ),
                [_row(login, document) for document in documents],
            )
            if documents
            else el("p", None, "No document yet.")
        ),
        notice=notice,
    )
