"""The Accounts page (admins only): every operator account with its role and state, and the
forms that disable, enable, reset a password or remove one."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.console.html import Child, Html, el
from gateway.console.views_layout import csrf, page, table
from gateway.operators.logins import OperatorLogin
from gateway.storage.repositories.operators import OperatorAccount


def accounts_page(
    login: OperatorLogin,
    accounts: Sequence[OperatorAccount],
    notice: str | None = None,
    new_password: tuple[str, str] | None = None,
) -> Html:
    """`new_password`: (username, password) just generated, shown once."""
    rows = [_row(login, account) for account in accounts]
    return page(
        "Accounts",
        login,
        el("h1", None, "Operator accounts"),
        _new_password(new_password) if new_password else None,
        el(
            "p",
            {"class_": "muted"},
            "Agents answer customers; admins also erase customers, change settings and manage"
            " accounts. New accounts are made on the server: relaydesk operator add NAME"
            " (add --admin for an admin).",
        ),
        table(["Username", "Role", "State", "Created", "Actions"], rows),
        notice=notice,
    )


def _new_password(new_password: tuple[str, str]) -> Html:
    username, password = new_password
    return el(
        "section",
        {"class_": "notice", "role": "status"},
        el("p", None, f"New password for {username} (shown once; hand it over privately):"),
        el("p", None, el("code", {"data_new_password": username}, password)),
    )


def _row(login: OperatorLogin, account: OperatorAccount) -> Html:
    state = (
        "active"
        if account.disabled_at is None
        else f"disabled since {account.disabled_at:%Y-%m-%d %H:%M} UTC"
    )
    return el(
        "tr",
        {"data_account": account.username},
        el("td", None, account.username),
        el("td", None, account.role.value),
        el("td", None, state),
        el("td", None, f"{account.created_at:%Y-%m-%d}"),
        el("td", None, _actions(login, account)),
    )


def _actions(login: OperatorLogin, account: OperatorAccount) -> Child:
    if account.id == login.operator_id:
        # Disabling or removing oneself is refused; a password is changed by another admin.
        return el("span", {"class_": "muted"}, "you")
    toggle = "enable" if account.disabled else "disable"
    remove_confirm = el(
        "label",
        None,
        "Type the username to remove",
        el("input", {"name": "confirm", "required": True, "autocomplete": "off"}),
    )
    return [
        _form(login, account, toggle, toggle.capitalize()),
        _form(login, account, "reset-password", "Reset password"),
        _form(login, account, "remove", "Remove", remove_confirm, danger=True),
    ]


def _form(
    login: OperatorLogin,
    account: OperatorAccount,
    action: str,
    button: str,
    *fields: Child,
    danger: bool = False,
) -> Html:
    """`danger`: the action cannot be undone; its form is set apart and its button drawn red."""
    return el(
        "form",
        {
            "method": "post",
            "action": f"/console/accounts/{action}",
            "class_": "action danger-zone" if danger else "action",
        },
        csrf(login),
        el("input", {"type": "hidden", "name": "username", "value": account.username}),
        *fields,
        el("button", {"type": "submit", "class_": "danger" if danger else None}, button),
    )
