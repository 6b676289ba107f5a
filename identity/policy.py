"""Scope policy as tenant data: which fact scopes each link level may see.

Default table::

    verified   → all configured scopes
    asserted   → public, profile
    inferred   → public
    anonymous  → public, and only facts learned from this same channel identity

Per-channel overrides replace the scopes of a level on one channel (e.g. phone transcripts never
see ``payment``). A policy must be monotone: a stronger level never sees less than a weaker one
on the same channel, so that no evidence can be "weakened" into more access.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol, TypeVar

from identity.channels import IdentityChannel
from identity.errors import IdentityConfigError
from identity.levels import LinkLevel
from identity.normalize import CHANNELS, ChannelIdentityKey

__all__ = ["ALL_SCOPES", "DEFAULT_SCOPES", "ScopePolicy", "ScopedFact"]

ALL_SCOPES = "all"
DEFAULT_SCOPES: tuple[str, ...] = ("public", "profile", "account", "payment")

_DEFAULT_LEVELS: Mapping[LinkLevel, tuple[str, ...]] = {
    LinkLevel.VERIFIED: (ALL_SCOPES,),
    LinkLevel.ASSERTED: ("public", "profile"),
    LinkLevel.INFERRED: ("public",),
    LinkLevel.ANONYMOUS: ("public",),
}
_CONFIG_KEYS = frozenset({"scopes", "levels", "channels", "own_facts_only"})


class ScopedFact(Protocol):
    """What the filter needs of a fact: its scope and the channel identity it was learned from."""

    @property
    def scope(self) -> str: ...

    @property
    def source_identity_key(self) -> str: ...


FactT = TypeVar("FactT", bound=ScopedFact)
LevelTable = Mapping[LinkLevel, frozenset[str]]


@dataclass(frozen=True, slots=True)
class ScopePolicy:
    """A tenant's scope table; build it with `default` or `from_mapping`.

    ``levels`` must name every link level; ``channels`` overrides some levels on some channels;
    at the levels in ``own_facts_only`` a fact is visible only to the identity it came from.
    """

    scopes: frozenset[str]
    levels: LevelTable
    channels: Mapping[IdentityChannel, LevelTable] = field(
        default_factory=lambda: MappingProxyType({})
    )
    own_facts_only: frozenset[LinkLevel] = frozenset({LinkLevel.ANONYMOUS})

    def __post_init__(self) -> None:
        if ALL_SCOPES in self.scopes or "" in self.scopes:
            raise IdentityConfigError(f"{ALL_SCOPES!r} and '' cannot name a scope")
        if set(self.levels) != set(LinkLevel):
            raise IdentityConfigError("the policy must give scopes for every link level")
        for channel, overrides in self.channels.items():
            if channel not in CHANNELS:
                raise IdentityConfigError(f"unknown channel {channel!r}")
            if not set(overrides) <= set(LinkLevel):
                raise IdentityConfigError("channel overrides must be keyed by link level")
        for channel_name in (None, *self.channels):
            table = [self.allowed_scopes(level, channel_name) for level in _ASCENDING]
            for scopes in table:
                unknown = scopes - self.scopes
                if unknown:
                    raise IdentityConfigError(f"unknown scopes {sorted(unknown)}")
            for weaker, stronger in zip(table, table[1:], strict=False):
                if not weaker <= stronger:
                    where = f" on {channel_name}" if channel_name else ""
                    raise IdentityConfigError(
                        f"a stronger link level must see at least what a weaker one sees{where}"
                    )

    @classmethod
    def default(cls, scopes: Iterable[str] = DEFAULT_SCOPES) -> ScopePolicy:
        """The default table (module docstring) over ``scopes``; levels keep only the default
        scopes that exist."""
        known = frozenset(scopes)
        return cls(
            scopes=known,
            levels=MappingProxyType(
                {
                    level: _expand(names, known, lenient=True)
                    for level, names in _DEFAULT_LEVELS.items()
                }
            ),
        )

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> ScopePolicy:
        """Load a tenant's policy; levels it leaves out keep the default table.

        Shape: ``{"scopes": [...], "levels": {"verified": "all", "asserted": ["public",
        "profile"], ...}, "channels": {"phone": {"verified": ["public", "profile"]}},
        "own_facts_only": ["anonymous"]}``. Raises `IdentityConfigError` on unknown keys, levels,
        channels or scopes, and on a non-monotone table.
        """
        unknown = set(data) - _CONFIG_KEYS
        if unknown:
            raise IdentityConfigError(f"unknown scope policy keys: {sorted(unknown)}")
        scopes = frozenset(_names(data.get("scopes", DEFAULT_SCOPES), "scopes"))
        base = cls.default(scopes)
        levels = dict(base.levels)
        levels.update(_level_table(data.get("levels", {}), scopes, "levels"))
        channels_raw = data.get("channels", {})
        if not isinstance(channels_raw, Mapping):
            raise IdentityConfigError("channels must be a mapping")
        channels: dict[IdentityChannel, LevelTable] = {}
        for channel, table in channels_raw.items():
            if channel not in CHANNELS:
                raise IdentityConfigError(f"unknown channel {channel!r}")
            channels[channel] = MappingProxyType(_level_table(table, scopes, f"channels.{channel}"))
        own = data.get("own_facts_only", [LinkLevel.ANONYMOUS.value])
        return cls(
            scopes=scopes,
            levels=MappingProxyType(levels),
            channels=MappingProxyType(channels),
            own_facts_only=frozenset(_level(name) for name in _names(own, "own_facts_only")),
        )

    def allowed_scopes(
        self, level: LinkLevel, channel: IdentityChannel | None = None
    ) -> frozenset[str]:
        """The scopes ``level`` may see on ``channel`` (the base table when no override)."""
        if channel is not None:
            overrides = self.channels.get(channel)
            if overrides is not None and level in overrides:
                return overrides[level]
        return self.levels[level]

    def visible_facts(
        self,
        facts: Iterable[FactT],
        level: LinkLevel,
        channel: IdentityChannel | None,
        identity_key: ChannelIdentityKey | str,
    ) -> tuple[FactT, ...]:
        """The facts, in order, that ``identity_key`` at ``level`` on ``channel`` may see."""
        allowed = self.allowed_scopes(level, channel)
        own = str(identity_key) if level in self.own_facts_only else None
        return tuple(
            fact
            for fact in facts
            if fact.scope in allowed and (own is None or fact.source_identity_key == own)
        )

    def to_mapping(self) -> dict[str, object]:
        """A plain, sorted mapping that `from_mapping` reads back to an equal policy."""
        return {
            "scopes": sorted(self.scopes),
            "levels": {level.value: sorted(self.levels[level]) for level in _ASCENDING},
            "channels": {
                channel: {level.value: sorted(scopes) for level, scopes in table.items()}
                for channel, table in sorted(self.channels.items())
            },
            "own_facts_only": sorted(level.value for level in self.own_facts_only),
        }


_ASCENDING = (LinkLevel.ANONYMOUS, LinkLevel.INFERRED, LinkLevel.ASSERTED, LinkLevel.VERIFIED)


def _expand(
    names: Iterable[str], known: frozenset[str], *, lenient: bool = False
) -> frozenset[str]:
    chosen = set(names)
    if ALL_SCOPES in chosen:
        return known
    if lenient:
        return frozenset(chosen & known)
    unknown = chosen - known
    if unknown:
        raise IdentityConfigError(f"unknown scopes {sorted(unknown)}")
    return frozenset(chosen)


def _level_table(raw: object, known: frozenset[str], where: str) -> dict[LinkLevel, frozenset[str]]:
    if not isinstance(raw, Mapping):
        raise IdentityConfigError(f"{where} must map link levels to scopes")
    table: dict[LinkLevel, frozenset[str]] = {}
    for name, scopes in raw.items():
        if not isinstance(name, str):
            raise IdentityConfigError(f"{where}: link levels are strings")
        names = [scopes] if isinstance(scopes, str) else _names(scopes, f"{where}.{name}")
        table[_level(name)] = _expand(names, known)
    return table


def _level(name: str) -> LinkLevel:
    try:
        return LinkLevel.parse(name)
    except ValueError as exc:
        raise IdentityConfigError(str(exc)) from exc


def _names(raw: object, where: str) -> list[str]:
    if isinstance(raw, str) or not isinstance(raw, Iterable):
        raise IdentityConfigError(f"{where} must be a list of strings")
    names = list(raw)
    if not all(isinstance(name, str) and name.strip() for name in names):
        raise IdentityConfigError(f"{where} must be a list of non-empty strings")
    return [name.strip() for name in names]
