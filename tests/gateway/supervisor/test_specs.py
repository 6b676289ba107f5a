"""The children of `serve --workers N --background M`: one spec each, named by role and number."""

from __future__ import annotations

from gateway.supervisor.specs import ChildSpec, Role, child_specs


def test_every_child_has_a_role_and_a_number_within_it() -> None:
    specs = child_specs(workers=2, background=1)
    assert specs == (
        ChildSpec(Role.BACKGROUND, 1),
        ChildSpec(Role.GATEWAY, 1),
        ChildSpec(Role.GATEWAY, 2),
    )
    assert [spec.name for spec in specs] == [
        "relaydesk-background-1",
        "relaydesk-gateway-1",
        "relaydesk-gateway-2",
    ]
    assert specs[2].label == "gateway 2"
    assert child_specs(workers=3, background=0) == tuple(
        ChildSpec(Role.GATEWAY, n) for n in (1, 2, 3)
    )
