"""Evidence → what it proves: the rule from a channel's evidence to an `IdentityObservation`.

The observation states, for one inbound message, which channel identity spoke, how strongly the
evidence ties it to whoever owns it (its link level) and which identifiers it proves (verified),
claims (asserted) or merely suggests (inferred). Deciding which customer that is belongs to
`identity.resolution`; this module never looks at stored state.

| evidence                                  | key             | level     | identifiers           |
| ----------------------------------------- | --------------- | --------- | --------------------- |
| WhatsApp sender (Twilio ``From``)         | whatsapp:+E164  | verified  | phone verified        |
| web chat, valid identity token            | web:acct:<sub>  | verified  | account verified (1)  |
| web chat, no valid token                  | web:anon:<id>   | anonymous | none                  |
| Telegram sender                           | telegram:<id>   | verified  | telegram verified     |
| Telegram contact of the sender's own user | telegram:<id>   | verified  | + phone verified      |
| Telegram contact of someone else          | telegram:<id>   | verified  | (contact ignored)     |
| phone call, caller id                     | phone:+E164     | inferred  | phone inferred        |
| phone call, no usable caller id           | phone:call:<id> | anonymous | none                  |
| + customer id from the call center        | (unchanged) (3) | (2)       | customer hint         |
| phone or e-mail stated in the text        | (unchanged)     | unchanged | asserted              |

(1) phone and e-mail too when the token flags them verified (and the e-mail's normalization
    folded nothing, see `identity.NormalizedEmail`); otherwise they are asserted.
(2) the hint verifies the customer it names, not the key; see `identity.resolution`.
(3) with a caller id, the call's own key ``phone:call:<id>`` is kept as ``named_key``: where the
    call goes when the caller id already belongs to another customer than the one named.

A blocked value never becomes an identifier; a blocked channel key keeps talking, but as an
anonymous identity that proves nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import assert_never

from identity.blocked import DEFAULT_BLOCKED, BlockedValues
from identity.errors import InvalidIdentifier
from identity.levels import LinkLevel
from identity.normalize import (
    DEFAULT_REGION,
    ChannelIdentityKey,
    Identifier,
    IdentifierKind,
    channel_identity_key,
    normalize_opaque_id,
    normalize_phone,
    stated_identifier,
)
from identity.webtoken import WebClaims

__all__ = [
    "Evidence",
    "IdentityObservation",
    "PhoneCall",
    "TelegramContactShare",
    "TelegramSender",
    "WebChatVisitor",
    "WhatsAppSender",
    "observe",
]


@dataclass(frozen=True, slots=True)
class WhatsAppSender:
    """A WhatsApp message; ``sender`` is Twilio's ``From`` (``whatsapp:+5511…``)."""

    sender: str


@dataclass(frozen=True, slots=True)
class WebChatVisitor:
    """A web chat message: the widget's visitor id plus the verified token claims, if any.

    ``claims`` is the result of `identity.webtoken.verify_identity_token` (``None`` when the
    token was missing or invalid).
    """

    visitor_id: str
    claims: WebClaims | None = None


@dataclass(frozen=True, slots=True)
class TelegramSender:
    """A Telegram message from user ``user_id`` (``message.from.id``)."""

    user_id: int


@dataclass(frozen=True, slots=True)
class TelegramContactShare:
    """A Telegram ``contact`` message: only a contact whose user is the sender proves a phone."""

    sender_id: int
    phone_number: str
    contact_user_id: int | None = None


@dataclass(frozen=True, slots=True)
class PhoneCall:
    """A phone call transcript; ``customer_id`` is set only by the trusted call-center pipeline."""

    call_id: str
    caller: str | None = None
    customer_id: str | None = None


Evidence = WhatsAppSender | WebChatVisitor | TelegramSender | TelegramContactShare | PhoneCall


@dataclass(frozen=True, slots=True)
class IdentityObservation:
    """What one message's evidence proves about the channel identity that sent it.

    ``level`` is the strength of the tie between ``key`` and its owner; ``verified`` may be
    non-empty only at the verified level. ``customer_hint`` is a customer id vouched for by a
    trusted upstream (the call-center pipeline): it verifies *that customer*, not the key, so it
    lifts the link to verified only when the message lands on that customer. ``named_key`` is
    the message's own key (a call's ``phone:call:<id>``), used instead of ``key`` when ``key``
    belongs to another customer than the hint names: the upstream vouches for this message, not
    for everything the key ever said. ``previous_key`` is
    another identity seen on the same device (the anonymous visitor before login): a suggestion
    for an operator, never a link. ``secret_key``: the key is a secret only its holder has (a
    web chat visitor id this server signed), so a key once verified by a one-time code keeps
    speaking at verified level (`identity.step_up`). ``evidence`` is a short audit description
    without secrets.
    """

    key: ChannelIdentityKey
    level: LinkLevel
    evidence: str
    verified: tuple[Identifier, ...] = ()
    asserted: tuple[Identifier, ...] = ()
    inferred: tuple[Identifier, ...] = ()
    customer_hint: str | None = None
    named_key: ChannelIdentityKey | None = None
    previous_key: ChannelIdentityKey | None = None
    secret_key: bool = False

    def __post_init__(self) -> None:
        if self.level is not LinkLevel.VERIFIED and self.verified:
            raise ValueError("only verified evidence can prove identifiers")


def observe(
    evidence: Evidence,
    *,
    stated: Iterable[str] = (),
    region: str | None = DEFAULT_REGION,
    blocked: BlockedValues = DEFAULT_BLOCKED,
) -> IdentityObservation:
    """The observation ``evidence`` supports, plus ``stated`` phones/e-mails as asserted claims.

    Raises `InvalidIdentifier` when the channel's own id cannot be normalized (a malformed
    ``From``, a placeholder visitor id): a message without a usable sender is refused, not
    guessed. Stated values that do not normalize or are blocked are skipped.
    """
    observation = _observe(evidence, region, blocked)
    if blocked.is_blocked_key(observation.key):
        return IdentityObservation(
            observation.key, LinkLevel.ANONYMOUS, observation.evidence + "; blocked value"
        )
    claims = _stated(stated, region, blocked)
    if not claims:
        return observation
    return IdentityObservation(
        key=observation.key,
        level=observation.level,
        evidence=observation.evidence + f"; {len(claims)} stated in text",
        verified=observation.verified,
        asserted=_unique(observation.asserted + claims, exclude=observation.verified),
        inferred=observation.inferred,
        customer_hint=observation.customer_hint,
        named_key=observation.named_key,
        previous_key=observation.previous_key,
    )


def _observe(evidence: Evidence, region: str | None, blocked: BlockedValues) -> IdentityObservation:
    match evidence:
        case WhatsAppSender(sender):
            key = channel_identity_key("whatsapp", sender, region=region)
            return IdentityObservation(
                key,
                LinkLevel.VERIFIED,
                "whatsapp sender: carrier-verified number",
                verified=_allowed((key.identifier,), blocked),
            )
        case WebChatVisitor():
            return _web(evidence, region, blocked)
        case TelegramSender(user_id):
            key = channel_identity_key("telegram", user_id)
            return IdentityObservation(
                key,
                LinkLevel.VERIFIED,
                "telegram user",
                verified=_allowed((key.identifier,), blocked),
            )
        case TelegramContactShare():
            return _telegram_contact(evidence, blocked)
        case PhoneCall():
            return _phone_call(evidence, region, blocked)
        case _:
            assert_never(evidence)


def _web(visit: WebChatVisitor, region: str | None, blocked: BlockedValues) -> IdentityObservation:
    anon = channel_identity_key("webchat", visit.visitor_id, region=region)
    if blocked.is_blocked_key(anon):
        # Every visitor sending this placeholder would share one identity and its facts.
        raise InvalidIdentifier("placeholder visitor id")
    claims = visit.claims
    if claims is None:
        return IdentityObservation(
            anon, LinkLevel.ANONYMOUS, "web chat without identity token", secret_key=True
        )
    account = Identifier("web_account", normalize_opaque_id(claims.sub))
    if blocked.is_blocked(account):
        return IdentityObservation(
            anon,
            LinkLevel.ANONYMOUS,
            "web chat token with a placeholder account: ignored",
            secret_key=True,
        )
    verified = [account]
    asserted: list[Identifier] = []
    parts = ["web chat identity token: verified account"]
    optional: tuple[tuple[IdentifierKind, str | None, str | None], ...] = (
        ("phone", claims.phone, claims.asserted_phone),
        ("email", claims.email, claims.asserted_email),
    )
    for kind, proven, claimed in optional:
        if proven is not None:
            verified.append(Identifier(kind, proven))
            parts.append(f"verified {kind}")
        if claimed is not None:
            asserted.append(Identifier(kind, claimed))
            parts.append(f"unverified {kind} claim")
    return IdentityObservation(
        ChannelIdentityKey("webchat", account),
        LinkLevel.VERIFIED,
        ", ".join(parts),
        verified=_allowed(verified, blocked),
        asserted=_allowed(asserted, blocked),
        previous_key=anon,
    )


def _telegram_contact(share: TelegramContactShare, blocked: BlockedValues) -> IdentityObservation:
    key = channel_identity_key("telegram", share.sender_id)
    verified = [key.identifier]
    if share.contact_user_id != share.sender_id:
        # A third party's number proves nothing about the sender, not even a claim.
        description = "telegram contact of another user: ignored"
    else:
        description = "telegram contact share of the sender's own number"
        raw = share.phone_number.strip()
        # Telegram sends international numbers without the leading "+".
        raw = raw if raw.startswith("+") else "+" + raw
        try:
            verified.append(Identifier("phone", normalize_phone(raw, region=None, strict=False)))
        except InvalidIdentifier:
            description += " (unusable number)"
    return IdentityObservation(
        key, LinkLevel.VERIFIED, description, verified=_allowed(verified, blocked)
    )


def _phone_call(call: PhoneCall, region: str | None, blocked: BlockedValues) -> IdentityObservation:
    caller_key: ChannelIdentityKey | None = None
    if call.caller is not None:
        try:
            caller_key = channel_identity_key("phone", call.caller, region=region)
        except InvalidIdentifier:
            caller_key = None
    if caller_key is not None and blocked.is_blocked_key(caller_key):
        caller_key = None
    hint = call.customer_id
    if hint is not None and blocked.is_blocked_text(hint):
        hint = None
    inferred: tuple[Identifier, ...] = ()
    named_key: ChannelIdentityKey | None = None
    if caller_key is None:
        key = channel_identity_key("phone", "phone:call:" + call.call_id)
        if blocked.is_blocked_key(key):
            raise InvalidIdentifier("placeholder call id")
        level, description = LinkLevel.ANONYMOUS, "phone call without caller id"
    else:
        key, level, inferred = caller_key, LinkLevel.INFERRED, (caller_key.identifier,)
        description = "phone call caller id (spoofable)"
    if hint is not None:
        description += "; customer named by the call center"
        if caller_key is not None:
            named_key = _call_key(call)
            if named_key is not None and blocked.is_blocked_key(named_key):
                named_key = None
    return IdentityObservation(
        key, level, description, inferred=inferred, customer_hint=hint, named_key=named_key
    )


def _call_key(call: PhoneCall) -> ChannelIdentityKey | None:
    """The call's own key, ``phone:call:<id>``; ``None`` for an unusable call id."""
    try:
        return channel_identity_key("phone", "phone:call:" + call.call_id)
    except InvalidIdentifier:
        return None


def _stated(
    stated: Iterable[str], region: str | None, blocked: BlockedValues
) -> tuple[Identifier, ...]:
    found: list[Identifier] = []
    for raw in stated:
        try:
            found.append(stated_identifier(raw, region=region))
        except InvalidIdentifier:
            continue
    return _allowed(found, blocked)


def _allowed(identifiers: Iterable[Identifier], blocked: BlockedValues) -> tuple[Identifier, ...]:
    return _unique(tuple(i for i in identifiers if not blocked.is_blocked(i)), exclude=())


def _unique(
    identifiers: tuple[Identifier, ...], *, exclude: tuple[Identifier, ...]
) -> tuple[Identifier, ...]:
    seen = set(exclude)
    out: list[Identifier] = []
    for identifier in identifiers:
        if identifier not in seen:
            seen.add(identifier)
            out.append(identifier)
    return tuple(out)
