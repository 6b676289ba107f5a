"""The children `serve --workers N --background M` keeps running: one spec per child, a role
and a number, the same for every process that takes that child's place."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    GATEWAY = "gateway"  # listens on the shared port and acknowledges
    BACKGROUND = "background"  # no port: stores, answers, delivers, compacts


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """One child of the supervisor: its role and its number within the role (from 1)."""

    role: Role
    number: int

    @property
    def name(self) -> str:
        """The process name (`relaydesk-gateway-1`)."""
        return f"relaydesk-{self.role}-{self.number}"

    @property
    def label(self) -> str:
        """How the logs name it (`gateway 1`)."""
        return f"{self.role} {self.number}"


def child_specs(workers: int, background: int) -> tuple[ChildSpec, ...]:
    """Every child to run: the background ones first, then the gateways."""
    return tuple(ChildSpec(Role.BACKGROUND, n) for n in range(1, background + 1)) + tuple(
        ChildSpec(Role.GATEWAY, n) for n in range(1, workers + 1)
    )
