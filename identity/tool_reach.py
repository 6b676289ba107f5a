"""Which actions a channel identity reaches, and what a business API may learn of its customer.

An action (a tool the model may call) names the weakest link level it needs. A channel identity
below that level is not offered the action at all; the model cannot call what it was never
shown, and a call to it anyway is refused before any request (`refusal`).

The identity assertion a call carries names the customer and, besides, only the identifiers
the action may learn: an identifier goes when its scope is among the action's scopes, the
channel identity's level sees that scope under the tenant's policy, and the identifier itself
is known at least as surely as the action requires (a guessed phone number never reaches a
verified-only action as if it were the customer's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from identity.levels import LinkLevel, at_least

__all__ = [
    "IDENTIFIER_SCOPES",
    "ActionReach",
    "KnownIdentifier",
    "Offer",
    "asserted_identifiers",
    "offer",
    "refusal",
]

# The fact scope each identifier kind belongs to: contact details are the customer's profile;
# an account id opens the account.
IDENTIFIER_SCOPES: Final[Mapping[str, str]] = {
    "phone": "profile",
    "email": "profile",
    "telegram": "profile",
    "web_account": "account",
}


@dataclass(frozen=True, slots=True)
class ActionReach:
    """What gating needs of an action: its name, the weakest level it serves and the scopes
    it may learn."""

    name: str
    min_level: LinkLevel
    scopes: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class KnownIdentifier:
    kind: str
    value: str
    level: LinkLevel  # how surely the identifier is the customer's


@dataclass(frozen=True, slots=True)
class Offer:
    """The actions offered at a level, and those held back until the identity is stronger."""

    offered: tuple[str, ...]
    out_of_reach: tuple[str, ...]

    @property
    def needs_verification(self) -> bool:
        return bool(self.out_of_reach)


def offer(actions: Iterable[ActionReach], level: LinkLevel) -> Offer:
    """Split ``actions`` (in their order) into those ``level`` reaches and the others."""
    offered: list[str] = []
    held: list[str] = []
    for action in actions:
        (offered if at_least(level, action.min_level) else held).append(action.name)
    return Offer(offered=tuple(offered), out_of_reach=tuple(held))


def refusal(name: str, actions: Mapping[str, ActionReach], level: LinkLevel) -> str | None:
    """Why a call to ``name`` at ``level`` is refused, or None when it may be made."""
    action = actions.get(name)
    if action is None:
        return f"no action named {name!r} is offered"
    if not at_least(level, action.min_level):
        return f"{name!r} needs a {action.min_level.value} identity; this one is {level.value}"
    return None


def asserted_identifiers(
    identifiers: Iterable[KnownIdentifier],
    action: ActionReach,
    allowed_scopes: frozenset[str],
) -> dict[str, str]:
    """The identifiers, by kind, that ``action`` may learn of a customer written to from a
    channel identity that sees ``allowed_scopes`` (`ScopePolicy.allowed_scopes` of its level on
    its channel); of several of one kind, the most surely known (then the first) goes."""
    visible = allowed_scopes & action.scopes
    chosen: dict[str, KnownIdentifier] = {}
    for identifier in identifiers:
        scope = IDENTIFIER_SCOPES.get(identifier.kind)
        if scope is None or scope not in visible:
            continue
        if not at_least(identifier.level, action.min_level):
            continue
        held = chosen.get(identifier.kind)
        if held is None or identifier.level > held.level:
            chosen[identifier.kind] = identifier
    return {kind: identifier.value for kind, identifier in sorted(chosen.items())}
