from __future__ import annotations

import pytest

from gateway.tenants import TenantConfigError, TenantSettings, effective_settings
from gateway.tools.confirmations import confirms, question


@pytest.mark.parametrize("reply", ["SIM", "sim!", "Sim, pode", "yes", "Confirmo.", "  ok  ", "s"])
def test_a_plain_yes_confirms(reply: str) -> None:
    assert confirms(reply)


@pytest.mark.parametrize(
    "reply",
    ["não", "sim mas para outra chave", "simples", "yes and also change my address", "", "SIMM"],
)
def test_anything_more_or_else_does_not_confirm(reply: str) -> None:
    assert not confirms(reply)


def test_the_question_names_the_action_and_every_value() -> None:
    text = question(
        TenantSettings().confirmation_message,
        "change_pix_key",
        "Trocar a chave Pix da conta.",
        '{"key": "ana@example.org", "primary": true}',
    )

    assert text.startswith("Confirma? Trocar a chave Pix da conta — key: ana@example.org; ")
    assert "primary: true" in text and "Reply YES to confirm." in text


def test_a_question_with_an_unknown_placeholder_is_refused_at_load() -> None:
    with pytest.raises(TenantConfigError, match="only {action} and {values}"):
        effective_settings([{"confirmation_message": "Confirma {acao}?"}])
