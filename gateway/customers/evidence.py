"""What a sender proves about itself, per channel: a claim → identity evidence.

A `SenderClaim` is read from a stored channel message or from a `/v1/context` caller; each
channel's rule turns it into the `identity` evidence its link level comes from. The catalog
(`gateway.channel_catalog`) names the rule of each channel, so a message and a context request
of the same channel identity always get the same evidence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
    normalize_telegram_id,
    observe,
    verify_identity_token,
)
from identity.channels import ChannelName
from identity.stated import stated_values


@dataclass(frozen=True, slots=True)
class SenderClaim:
    """Who a message says its sender is: the channel's own id and what came with it."""

    channel: ChannelName
    sender: str
    kind: str = "text"
    identity_token: str | None = None
    contact_phone: str | None = None
    contact_user_id: int | None = None
    call_id: str | None = None
    customer_id: str | None = None  # named by a trusted caller (the call-center pipeline)

    @classmethod
    def of(cls, inbound: InboundMessage) -> SenderClaim:
        return cls(
            channel=inbound.channel,
            sender=inbound.sender,
            kind=inbound.kind,
            identity_token=inbound.identity_token,
            contact_phone=inbound.contact_phone,
            contact_user_id=inbound.contact_user_id,
            call_id=inbound.provider_message_id,
        )


# (claim, web chat secret) → evidence; raises `InvalidIdentifier` when the id is unusable.
EvidenceRule = Callable[[SenderClaim, str | None], Evidence]


def whatsapp_sender(claim: SenderClaim, webchat_secret: str | None) -> Evidence:
    return WhatsAppSender(claim.sender)


def telegram_sender(claim: SenderClaim, webchat_secret: str | None) -> Evidence:
    user_id = int(normalize_telegram_id(claim.sender))
    if claim.kind == "contact" and claim.contact_phone:
        return TelegramContactShare(
            sender_id=user_id,
            phone_number=claim.contact_phone,
            contact_user_id=claim.contact_user_id,
        )
    return TelegramSender(user_id)


def webchat_visitor(claim: SenderClaim, webchat_secret: str | None) -> Evidence:
    claims = None
    if claim.identity_token and webchat_secret:
        claims = verify_identity_token(claim.identity_token, webchat_secret)
    return WebChatVisitor(claim.sender, claims)


def phone_caller(claim: SenderClaim, webchat_secret: str | None) -> Evidence:
    return PhoneCall(
        call_id=claim.call_id or "",
        caller=claim.sender or None,
        customer_id=claim.customer_id,
    )


def observe_claim(
    rule: EvidenceRule,
    claim: SenderClaim,
    *,
    text: str,
    webchat_secret: str | None,
    region: str,
    blocked: BlockedValues,
) -> IdentityObservation:
    """The observation for one message: the channel's evidence plus the phones and e-mails
    stated in `text` (asserted claims). Raises `InvalidIdentifier`."""
    return observe(
        rule(claim, webchat_secret),
        stated=stated_values(text, region=region),
        region=region,
        blocked=blocked,
    )


def observe_inbound(
    rule: EvidenceRule,
    inbound: InboundMessage,
    *,
    webchat_secret: str | None,
    region: str,
    blocked: BlockedValues,
) -> IdentityObservation:
    """The observation for a stored channel message; a sender id that cannot be read is a
    400 (`PayloadInvalid`)."""
    try:
        return observe_claim(
            rule,
            SenderClaim.of(inbound),
            text=inbound.text,
            webchat_secret=webchat_secret,
            region=region,
            blocked=blocked,
        )
    except InvalidIdentifier as exc:
        raise PayloadInvalid(f"sender: {exc}") from exc
