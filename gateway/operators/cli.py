"""`relaydesk operator add|list|disable|enable|reset-password|remove`: console accounts from
the command line, audited as `command-line`. The first account of a deployment is made here:
`relaydesk operator add NAME --admin`."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.config import Settings
from gateway.http.errors import GatewayError
from gateway.operators import account_actions
from gateway.operators.account_actions import COMMAND_LINE
from gateway.operators.accounts import OperatorAccountError
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.migrate import upgrade
from gateway.storage.repositories.operators import OperatorAccount, OperatorRole


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Run `relaydesk operator <command>`; 0 when done, 2 when refused (why on stderr)."""
    command: str = args.operator_command
    if command == "list":
        return _in_session(settings, _print_accounts)
    username: str = args.username
    if command in ("add", "reset-password"):
        password = _read_password(username, from_stdin=args.password_stdin)
        if password is None:
            return 2
        if command == "add":
            role = OperatorRole.ADMIN if args.admin else OperatorRole.AGENT
            return _in_session(settings, _adding(username, password, role))
        return _in_session(settings, _resetting(username, password))
    act = {
        "disable": account_actions.disable_account,
        "enable": account_actions.enable_account,
        "remove": account_actions.remove_account,
    }[command]

    async def acting(session: AsyncSession) -> str:
        await act(session, username, actor=COMMAND_LINE)
        return f"operator {username} {command}d"

    return _in_session(settings, acting)


def _adding(
    username: str, password: str, role: OperatorRole
) -> Callable[[AsyncSession], Awaitable[str]]:
    async def adding(session: AsyncSession) -> str:
        operator_id = await account_actions.add_account(
            session, username, password, role, actor=COMMAND_LINE
        )
        return f"operator {username} added ({operator_id}, {role.value})"

    return adding


def _resetting(username: str, password: str) -> Callable[[AsyncSession], Awaitable[str]]:
    async def resetting(session: AsyncSession) -> str:
        await account_actions.reset_password(session, username, password, actor=COMMAND_LINE)
        return f"operator {username}: password reset, open logins ended"

    return resetting


async def _print_accounts(session: AsyncSession) -> str:
    accounts = await account_actions.list_accounts(session)
    if not accounts:
        return "no operator accounts; create one with: relaydesk operator add NAME --admin"
    return "\n".join(_account_line(account) for account in accounts)


def _account_line(account: OperatorAccount) -> str:
    state = (
        "active"
        if account.disabled_at is None
        else f"disabled since {account.disabled_at:%Y-%m-%d %H:%M} UTC"
    )
    return f"{account.username}\t{account.role.value}\t{state}"


def _read_password(username: str, *, from_stdin: bool) -> str | None:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    password = getpass.getpass(f"password for {username}: ")
    if getpass.getpass("again: ") != password:
        print("relaydesk: the passwords differ", file=sys.stderr)
        return None
    return password


def _in_session(settings: Settings, work: Callable[[AsyncSession], Awaitable[str]]) -> int:
    async def in_transaction() -> str:
        engine = make_engine(settings.database_url)
        try:
            if settings.should_auto_migrate:
                await upgrade(engine)
            async with make_sessionmaker(engine).begin() as session:
                return await work(session)
        finally:
            await engine.dispose()

    try:
        print(asyncio.run(in_transaction()))
    except (OperatorAccountError, GatewayError) as exc:
        detail = exc.detail if isinstance(exc, GatewayError) else str(exc)
        print(f"relaydesk: {detail}", file=sys.stderr)
        return 2
    return 0
