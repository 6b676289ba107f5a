"""The arguments of `relaydesk operator ...` (`gateway.operators.cli` runs them), apart so that
building the `relaydesk` parser imports nothing of storage."""

from __future__ import annotations

import argparse


def add_arguments(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The subcommands of `relaydesk operator`; each runs through `gateway.operators.cli.run`."""
    add = commands.add_parser("add", help="create a console account (an agent unless --admin)")
    add.add_argument("username")
    add.add_argument(
        "--admin",
        action="store_true",
        help="an admin: also erases customers, changes settings and manages accounts",
    )
    _password_from_stdin(add)
    commands.add_parser("list", help="every account with its role and state")
    for name, what in (
        ("disable", "refuse the account's logins and end its open ones"),
        ("enable", "let a disabled account log in again"),
        ("reset-password", "set a new password and end the account's open logins"),
        ("remove", "delete the account and its logins (its audit entries stay)"),
    ):
        command = commands.add_parser(name, help=what)
        command.add_argument("username")
        if name == "reset-password":
            _password_from_stdin(command)


def _password_from_stdin(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input instead of prompting",
    )
