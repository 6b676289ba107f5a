"""`relaydesk settings schema|show|set|unset|validate|export|import`: one level of tenant
settings at a time, named by `--domain`, `--host`, `--assistant` and `--channel` (the domain
defaults to `default`). Every change is validated, audited and announced to running
processes (with `RELAYDESK_REDIS_URL`), like a change through `/v1/settings`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from gateway.command_store import CommandStore, command_store
from gateway.config import Settings
from gateway.settings_admin.documents import (
    SettingsInvalid,
    parse_value,
    with_key,
    without_key,
)
from gateway.settings_admin.files import SettingsFileError, dump_document, read_document
from gateway.settings_admin.levels import LevelInvalid, SettingsLevel
from gateway.settings_admin.schema import settings_schema
from gateway.settings_admin.service import (
    Edit,
    change_level,
    check_level,
    effective_for,
    read_level,
)
from gateway.tenant_ref import DEFAULT_DOMAIN

DEFAULT_REASON = "changed from the command line"


def _level(args: argparse.Namespace) -> SettingsLevel:
    return SettingsLevel(
        domain=args.domain, host=args.host, assistant_id=args.assistant, channel=args.channel
    )


def _run(settings: Settings, work: Callable[[CommandStore], Awaitable[int]]) -> int:
    async def run() -> int:
        async with command_store(settings) as store:
            return await work(store)

    try:
        return asyncio.run(run())
    except (SettingsInvalid, SettingsFileError, LevelInvalid) as exc:
        print(f"relaydesk: {exc}", file=sys.stderr)
        return 2


def _schema(settings: Settings, args: argparse.Namespace) -> int:
    print(json.dumps(settings_schema(), ensure_ascii=False, indent=2))
    return 0


def _show(settings: Settings, args: argparse.Namespace) -> int:
    level = _level(args)

    async def show(store: CommandStore) -> int:
        async with store.sessions() as session:
            if args.effective:
                effective = await effective_for(session, level)
                document = effective.model_dump(mode="json")
            else:
                document = await read_level(session, level)
        if args.json:
            print(json.dumps(document, ensure_ascii=False, indent=2))
        else:
            print(dump_document(document), end="")
        return 0

    return _run(settings, show)


def _change(settings: Settings, args: argparse.Namespace, edit: Edit) -> int:
    level = _level(args)
    reason = args.reason.strip()
    if not reason:
        print("relaydesk: --reason must not be blank", file=sys.stderr)
        return 2

    async def change(store: CommandStore) -> int:
        done = await change_level(
            store.sessions, store.redis, level, edit, actor=args.actor, reason=reason
        )
        if not done.changed:
            print(f"{level.path()}: unchanged")
        else:
            print(f"{level.path()}: changed {', '.join(c.key for c in done.changed)}")
        return 0

    return _run(settings, change)


def _set(settings: Settings, args: argparse.Namespace) -> int:
    value: Any = args.value if args.string else parse_value(args.value)
    return _change(settings, args, lambda stored: with_key(stored, args.key, value))


def _unset(settings: Settings, args: argparse.Namespace) -> int:
    missing: list[str] = []

    def edit(stored: dict[str, Any]) -> dict[str, Any]:
        document, found = without_key(stored, args.key)
        if not found:
            missing.append(args.key)
        return document

    result = _change(settings, args, edit)
    if missing:
        print(f"relaydesk: {args.key} was not set at this level", file=sys.stderr)
    return result


def _validate(settings: Settings, args: argparse.Namespace) -> int:
    level = _level(args)

    async def validate(store: CommandStore) -> int:
        document = read_document(Path(args.file))
        async with store.sessions() as session:
            await check_level(session, level, document)
        print(f"{args.file}: valid for {level.path()}")
        return 0

    return _run(settings, validate)


def _export(settings: Settings, args: argparse.Namespace) -> int:
    level = _level(args)

    async def export(store: CommandStore) -> int:
        async with store.sessions() as session:
            document = await read_level(session, level)
        text = dump_document(document)
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
        else:
            print(text, end="")
        return 0

    return _run(settings, export)


def _import(settings: Settings, args: argparse.Namespace) -> int:
    try:
        document = read_document(Path(args.file))
    except SettingsFileError as exc:
        print(f"relaydesk: {exc}", file=sys.stderr)
        return 2
    return _change(settings, args, lambda stored: document)


def _level_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--domain", default=DEFAULT_DOMAIN, help="the domain (default: default)")
    command.add_argument("--host", help="a host's level (the host a request reaches us through)")
    command.add_argument("--assistant", help="an assistant's level (under --host or the domain)")
    command.add_argument("--channel", help="that level's block for one channel (e.g. whatsapp)")


def _change_options(command: argparse.ArgumentParser) -> None:
    _level_options(command)
    command.add_argument("--reason", default=DEFAULT_REASON, help="why (audited)")
    command.add_argument("--actor", default="cli", help="who changes it (audited)")


def add_settings_commands(commands: Any) -> None:
    """Register `relaydesk settings …` on the command's subparsers."""
    settings = commands.add_parser("settings", help="tenant settings per level")
    actions = settings.add_subparsers(dest="settings_command", required=True)

    schema = actions.add_parser("schema", help="print the settings as a JSON Schema")
    schema.set_defaults(run=_schema)

    show = actions.add_parser("show", help="print a level's keys (YAML)")
    _level_options(show)
    show.add_argument(
        "--effective", action="store_true", help="the merged settings the level's messages follow"
    )
    show.add_argument("--json", action="store_true", help="JSON instead of YAML")
    show.set_defaults(run=_show)

    set_ = actions.add_parser(
        "set", help="set one key (dotted: rate_limits.model_calls_per_customer)"
    )
    set_.add_argument("key")
    set_.add_argument("value", help="JSON (30, true, null, [..], {..}) or plain text")
    set_.add_argument("--string", action="store_true", help="take the value as text, not JSON")
    _change_options(set_)
    set_.set_defaults(run=_set)

    unset = actions.add_parser("unset", help="remove one key from the level (the next applies)")
    unset.add_argument("key")
    _change_options(unset)
    unset.set_defaults(run=_unset)

    validate = actions.add_parser("validate", help="check a TOML/YAML/JSON file for a level")
    validate.add_argument("file")
    _level_options(validate)
    validate.set_defaults(run=_validate)

    export = actions.add_parser("export", help="print a level's keys as YAML (import reads it)")
    _level_options(export)
    export.add_argument("--output", help="write to this file instead")
    export.set_defaults(run=_export)

    import_ = actions.add_parser("import", help="replace a level's keys with a file's")
    import_.add_argument("file")
    _change_options(import_)
    import_.set_defaults(run=_import)
