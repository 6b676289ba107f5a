"""Step-up verification as tenant settings: how long a code lives, the text that carries it
(or the WhatsApp template outside the 24-hour window) and what the customer is told when a
code is wrong, expired or used up. Defaults in Portuguese and English, like the tenant's
other texts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class VerificationSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    code_ttl_s: int = Field(600, ge=60, le=3_600)
    # `{code}`: the six digits. Sent inside WhatsApp's window and on Telegram.
    code_message: str = (
        "Seu código de verificação: {code}. Vale 10 minutos; não o compartilhe. "
        "Your verification code: {code}. It lasts 10 minutes; do not share it."
    )
    # A name in `whatsapp_templates`, its first variable the code: WhatsApp outside the window.
    template: str | None = None
    verified_message: str = "Identidade confirmada. / Identity confirmed."
    wrong_message: str = (
        "Código incorreto; confira e digite de novo. / That code is wrong; check it and try again."
    )
    expired_message: str = (
        "Esse código expirou; peça um novo. / That code has expired; ask for a new one."
    )
    locked_message: str = (
        "Tentativas esgotadas para esse código; peça um novo. "
        "Too many wrong tries for that code; ask for a new one."
    )

    @field_validator("code_message")
    @classmethod
    def _has_code(cls, value: str) -> str:
        try:
            filled = value.format(code="000000")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError("only {code} may be filled in") from exc
        if "000000" not in filled:
            raise ValueError("the message must hold {code}")
        return value
