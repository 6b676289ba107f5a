"""What an inbound message proves about its sender: channel message → identity evidence."""

from __future__ import annotations

from channels.base import InboundMessage, PayloadInvalid
from identity import (
    BlockedValues,
    Evidence,
    IdentityObservation,
    InvalidIdentifier,
    PhoneCall,
    TelegramContactShare,
    TelegramSender,
    WebChatVisitor,
    WhatsAppSender,
    observe,
    verify_identity_token,
)
from identity.stated import stated_values


def evidence_of(inbound: InboundMessage, *, webchat_secret: str | None) -> Evidence:
    match inbound.channel:
        case "whatsapp":
            return WhatsAppSender(inbound.sender)
        case "telegram":
            if not inbound.sender.isdigit():
                raise PayloadInvalid("telegram sender must be a numeric user id")
            if inbound.kind == "contact" and inbound.contact_phone:
                return TelegramContactShare(
                    sender_id=int(inbound.sender),
                    phone_number=inbound.contact_phone,
                    contact_user_id=inbound.contact_user_id,
                )
            return TelegramSender(int(inbound.sender))
        case "webchat":
            claims = None
            if inbound.identity_token and webchat_secret:
                claims = verify_identity_token(inbound.identity_token, webchat_secret)
            return WebChatVisitor(inbound.sender, claims)
        case "phone":
            return PhoneCall(
                call_id=inbound.extra.get("call_id", inbound.provider_message_id),
                caller=inbound.sender or None,
                customer_id=inbound.extra.get("customer_id") or None,
            )
    raise PayloadInvalid(f"unknown channel {inbound.channel!r}")


def observe_inbound(
    inbound: InboundMessage,
    *,
    webchat_secret: str | None,
    region: str,
    blocked: BlockedValues,
) -> IdentityObservation:
    """The observation for one message; a sender id that cannot be normalized is a 400."""
    try:
        return observe(
            evidence_of(inbound, webchat_secret=webchat_secret),
            stated=stated_values(inbound.text, region=region),
            region=region,
            blocked=blocked,
        )
    except InvalidIdentifier as exc:
        raise PayloadInvalid(f"sender: {exc}") from exc
