"""`relaydesk knowledge add|list|remove|sync`: a tenant's knowledge base from the command line,
the same way `/v1/knowledge/documents` keeps it (read into chunks, audited, and with
`RELAYDESK_REDIS_URL` every running process told to forget a replaced or removed document).
`add --url` without a file, and `add --sitemap`, fetch through the safe fetcher
(`RELAYDESK_FETCH_ALLOW` applies); `sync` reads URL documents again now.

A tenant is named by `--tenant`: the host its requests reach us through (`shop.example.com`),
or a stored tenant as `domain/host[/assistant]`; without it, the default tenant."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from context import TiktokenCounter, load_encoding
from gateway.command_store import CommandStore, command_store
from gateway.config import Settings
from gateway.knowledge.documents import (
    DocumentTooLarge,
    Upload,
    UrlTaken,
    add_document,
    remove_document,
)
from gateway.knowledge.forgetting import publish_forgotten
from gateway.knowledge.parsing import DocumentUnreadable, format_of
from gateway.knowledge.records import FORMATS, DocumentFormat
from gateway.knowledge.sync import KnowledgeSync, NotASitemap, Synced, valid_url
from gateway.storage.models_knowledge import URL_LENGTH
from gateway.storage.repositories import knowledge
from gateway.storage.repositories.knowledge import DocumentRecord
from gateway.tenant_ref import DEFAULT_TENANT, TenantRef
from identity.audience import Audience
from outbound import SafeFetcher

DEFAULT_ACTOR = "cli"


class CommandRefused(ValueError):
    """What the command cannot do as asked; printed, exit status 2."""


def tenant_named(text: str | None) -> str:
    """The stored tenant `--tenant` names: a host, or an encoded `domain/host[/assistant]`."""
    if not text:
        return DEFAULT_TENANT.encode()
    try:
        tenant = TenantRef.decode(text) if "/" in text else TenantRef.for_host(text)
    except ValueError as exc:
        raise CommandRefused(str(exc)) from exc
    return tenant.encode()


def _run(settings: Settings, work: Callable[[CommandStore], Awaitable[int]]) -> int:
    async def run() -> int:
        async with command_store(settings) as store:
            return await work(store)

    try:
        return asyncio.run(run())
    except (CommandRefused, DocumentUnreadable, DocumentTooLarge, UrlTaken, NotASitemap) as exc:
        print(f"relaydesk: {exc}", file=sys.stderr)
        return 2


def _upload(args: argparse.Namespace) -> Upload:
    if args.file is None:
        raise CommandRefused("name a FILE, or a page with --url, or a sitemap with --sitemap")
    path = Path(args.file)
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise CommandRefused(f"{path}: {exc.strerror or exc}") from exc
    fmt: DocumentFormat | None = args.format or format_of(None, path.name)
    if fmt is None:
        raise CommandRefused(f"{path}: name its format with --format ({', '.join(FORMATS)})")
    try:
        audience = Audience.parse(args.audience)
        updated_at = datetime.fromisoformat(args.updated_at) if args.updated_at else None
    except ValueError as exc:
        raise CommandRefused(str(exc)) from exc
    if updated_at is not None and updated_at.tzinfo is None:
        raise CommandRefused("--updated-at needs its UTC offset")
    if args.url is not None and (
        not args.url.startswith(("http://", "https://")) or len(args.url) > URL_LENGTH
    ):
        raise CommandRefused(f"--url must be an http(s) URL of at most {URL_LENGTH} characters")
    return Upload(
        body=body,
        format=fmt,
        audience=audience,
        title=args.title,
        source_url=args.url,
        updated_at=updated_at,
        name=path.stem,
    )


def _fetching(
    settings: Settings, work: Callable[[KnowledgeSync], Awaitable[int]]
) -> Callable[[CommandStore], Awaitable[int]]:
    """``work`` with a `KnowledgeSync` on the store and a safe fetcher of the settings' policy."""

    async def run(store: CommandStore) -> int:
        fetcher = SafeFetcher(settings.fetch_policy)
        try:
            return await work(
                KnowledgeSync(
                    store.sessions,
                    fetcher,
                    partial(publish_forgotten, store.redis),
                    TiktokenCounter(load_encoding()),
                )
            )
        finally:
            await fetcher.aclose()

    return run


def _synced_line(synced: Synced) -> str:
    found = synced.document
    line = f"{synced.outcome} {found.id if found else '-'}: "
    line += f"{found.title} ({found.chunk_count} chunks)" if found else synced.url
    if synced.error:
        line += f"  [error: {synced.error}]"
    return line


def _add_url(settings: Settings, args: argparse.Namespace) -> int:
    url = args.sitemap or args.url
    if args.sitemap and args.url:
        print("relaydesk: give --url or --sitemap, not both", file=sys.stderr)
        return 2
    if args.sitemap and args.file is not None:
        print("relaydesk: a sitemap is fetched, not read from a file", file=sys.stderr)
        return 2

    async def add(sync: KnowledgeSync) -> int:
        if not valid_url(url):
            raise CommandRefused(f"the URL must be http(s), at most {URL_LENGTH} characters")
        try:
            audience = Audience.parse(args.audience)
        except ValueError as exc:
            raise CommandRefused(str(exc)) from exc
        added = await sync.add_url(
            tenant=tenant_named(args.tenant),
            url=url,
            audience=audience,
            actor=args.actor,
            sitemap=bool(args.sitemap),
        )
        for page in added.pages:
            print(_synced_line(page))
        if added.sitemap:
            print(f"{len(added.pages)} pages from the sitemap, {added.skipped} skipped")
        failed = [page for page in added.pages if page.outcome == "failed"]
        return 1 if failed and len(failed) == len(added.pages) else 0

    return _run(settings, _fetching(settings, add))


def _sync(settings: Settings, args: argparse.Namespace) -> int:
    async def sync_(sync: KnowledgeSync) -> int:
        tenant = tenant_named(args.tenant)
        if args.document_id is not None:
            try:
                one = await sync.sync_document(
                    tenant=tenant, document_id=args.document_id, actor=args.actor
                )
            except LookupError as exc:
                raise CommandRefused(str(exc)) from exc
            if one is None:
                print(f"relaydesk: no document {args.document_id} for this tenant", file=sys.stderr)
                return 1
            synced = [one]
        else:
            async with sync.sessions() as session:
                listed = await knowledge.list_documents(session, tenant)
            synced = await sync.sync_documents(listed, actor=args.actor)
        for each in synced:
            print(_synced_line(each))
        return 1 if any(each.outcome == "failed" for each in synced) else 0

    return _run(settings, _fetching(settings, sync_))


def _add(settings: Settings, args: argparse.Namespace) -> int:
    if args.sitemap or (args.url and args.file is None):
        return _add_url(settings, args)

    async def add(store: CommandStore) -> int:
        upload = _upload(args)
        stored = await add_document(
            store.sessions,
            upload,
            tenant=tenant_named(args.tenant),
            actor=args.actor,
            announce=partial(publish_forgotten, store.redis),
            counter=TiktokenCounter(load_encoding()),
        )
        found = stored.document
        print(
            f"{stored.outcome} {found.id}: {found.title} "
            f"({found.chunk_count} chunks, {found.audience.value})"
        )
        return 0

    return _run(settings, add)


def _document_json(found: DocumentRecord) -> dict[str, Any]:
    return {
        "id": found.id,
        "title": found.title,
        "url": found.source_url,
        "format": found.format,
        "audience": found.audience.value,
        "chunk_count": found.chunk_count,
        "updated_at": found.updated_at.isoformat(),
        "synced_at": found.synced_at.isoformat(),
        "sync_error": found.sync_error,
    }


def _list(settings: Settings, args: argparse.Namespace) -> int:
    async def list_(store: CommandStore) -> int:
        async with store.sessions() as session:
            found = await knowledge.list_documents(session, tenant_named(args.tenant))
        if args.json:
            print(json.dumps([_document_json(d) for d in found], ensure_ascii=False, indent=2))
            return 0
        for document in found:
            synced = document.synced_at.strftime("%Y-%m-%d %H:%M")
            line = (
                f"{document.id}  {document.audience.value:<9}  {document.chunk_count:>4} chunks"
                f"  synced {synced}  {document.title}"
            )
            if document.source_url:
                line += f"  <{document.source_url}>"
            if document.sync_error:
                line += f"  [error: {document.sync_error}]"
            print(line)
        return 0

    return _run(settings, list_)


def _remove(settings: Settings, args: argparse.Namespace) -> int:
    async def remove(store: CommandStore) -> int:
        gone = await remove_document(
            store.sessions,
            tenant=tenant_named(args.tenant),
            document_id=args.document_id,
            actor=args.actor,
            announce=partial(publish_forgotten, store.redis),
        )
        if gone is None:
            print(f"relaydesk: no document {args.document_id} for this tenant", file=sys.stderr)
            return 1
        print(f"removed {gone.id}: {gone.title} ({gone.chunk_count} chunks)")
        return 0

    return _run(settings, remove)


def _tenant_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--tenant",
        help="the host the tenant is reached through, or domain/host[/assistant] "
        "(default: the default tenant)",
    )


def add_knowledge_commands(commands: Any) -> None:
    """Register `relaydesk knowledge …` on the command's subparsers."""
    group = commands.add_parser("knowledge", help="a tenant's knowledge base documents")
    actions = group.add_subparsers(dest="knowledge_command", required=True)

    add = actions.add_parser(
        "add",
        help="add a Markdown, HTML, PDF or text file (one at a known --url replaces it), or "
        "fetch the page at --url, or each page of a --sitemap",
    )
    add.add_argument("file", nargs="?", help="the file (without it, --url is fetched)")
    add.add_argument(
        "--audience",
        required=True,
        choices=[a.value for a in Audience],
        help="who may be told it",
    )
    add.add_argument("--title", help="the title (else the document's own, else the file name)")
    add.add_argument(
        "--url", help="where the document lives (one document per URL); fetched without a file"
    )
    add.add_argument("--sitemap", help="a sitemap's URL: each page it lists is fetched")
    add.add_argument("--format", choices=FORMATS, help="the format (else from the extension)")
    add.add_argument("--updated-at", help="the document's date, ISO 8601 with its offset")
    add.add_argument("--actor", default=DEFAULT_ACTOR, help="who adds it (audited)")
    _tenant_option(add)
    add.set_defaults(run=_add)

    list_ = actions.add_parser("list", help="the tenant's documents, chunk counts and last sync")
    list_.add_argument("--json", action="store_true", help="JSON instead of lines")
    _tenant_option(list_)
    list_.set_defaults(run=_list)

    remove = actions.add_parser("remove", help="delete a document and its chunks")
    remove.add_argument("document_id")
    remove.add_argument("--actor", default=DEFAULT_ACTOR, help="who removes it (audited)")
    _tenant_option(remove)
    remove.set_defaults(run=_remove)

    sync = actions.add_parser(
        "sync", help="read a URL document again now (without an id: every URL document)"
    )
    sync.add_argument("document_id", nargs="?")
    sync.add_argument("--actor", default=DEFAULT_ACTOR, help="who syncs (audited)")
    _tenant_option(sync)
    sync.set_defaults(run=_sync)
