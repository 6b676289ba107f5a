"""The texts a turn sends without the model, in the customer's language: the handoff message
and the fallback message. The tenant's own text, when set, wins; else the built-in one for the
language the customer writes in (`customer_language`), or, when that cannot be told, the
Portuguese and English handoff text together and the English fallback."""

from __future__ import annotations

from collections.abc import Sequence

from context.report import ChatMessage
from gateway.providers import FALLBACK_MESSAGE
from gateway.tenants import TenantSettings
from gateway.turns.answer.customer_language import Language, guess_language

HANDOFF_MESSAGES: dict[Language, str] = {
    "pt": "Vou chamar uma pessoa da nossa equipe para continuar o atendimento.",
    "en": "I am getting a member of our team to help you.",
    "es": "Voy a llamar a una persona de nuestro equipo para continuar la atención.",
}
HANDOFF_MESSAGE_UNKNOWN = f"{HANDOFF_MESSAGES['pt']} {HANDOFF_MESSAGES['en']}"

FALLBACK_MESSAGES: dict[Language, str] = {
    "pt": (
        "Desculpe, não conseguimos responder agora por um problema técnico do nosso lado. "
        "Sua mensagem foi recebida e guardada; tente de novo em alguns minutos."
    ),
    "en": FALLBACK_MESSAGE,
    "es": (
        "Lo sentimos, no podemos responder ahora por un problema técnico de nuestra parte. "
        "Su mensaje fue recibido y guardado; inténtelo de nuevo en unos minutos."
    ),
}


def handoff_text(tenant: TenantSettings, customer_texts: Sequence[str]) -> str:
    """What the customer is told when the conversation goes to a person."""
    if tenant.handoff_message is not None:
        return tenant.handoff_message
    language = guess_language(customer_texts)
    return HANDOFF_MESSAGES[language] if language is not None else HANDOFF_MESSAGE_UNKNOWN


def fallback_text(tenant: TenantSettings, customer_texts: Sequence[str]) -> str:
    """What the customer is told when the model failed for good."""
    if tenant.fallback_message is not None:
        return tenant.fallback_message
    language = guess_language(customer_texts)
    return FALLBACK_MESSAGES[language] if language is not None else FALLBACK_MESSAGE


def customer_texts(messages: Sequence[ChatMessage], current: str) -> tuple[str, ...]:
    """The customer's latest messages in a window, oldest first, ending with the current one."""
    earlier = [m.content for m in messages if m.role == "user"]
    if earlier and earlier[-1] == current:
        earlier.pop()
    return (*earlier[-4:], current)
