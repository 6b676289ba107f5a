"""The channel protocol: `verify` and `parse` are synchronous and pure, `send` is the only I/O
(with, where the channel has them, the typing signal and reply previews shown while a reply is
being written: `TypingSignals`, `ReplyPreviews`, and the download of a received attachment:
`MediaFetch`, through the guarded fetcher of `outbound`).

The gateway reads the request body once, wraps it in a `RawRequest`, and hands it to the
channel; `parse` reads it once into a `Parsed`: the customer messages, the delivery statuses
and what was acknowledged without being stored. A channel never stores anything and never
builds its own web app.

    ChannelError
    ├── SignatureInvalid    the caller is not who it claims (→ 401/403, nothing stored), with
    │                       a stable `reason` the gateway logs
    ├── PayloadInvalid      malformed body (→ 400 with the reason; logged as `malformed`)
    └── SendFailed          the provider refused or could not be reached (retried by the caller)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable
from urllib.parse import parse_qsl

from identity.channels import ChannelName
from outbound.errors import FetchError
from outbound.kinds import FetchKind

MessageKind = Literal[
    "text",
    "media",  # an attachment of a type no kind below names
    "image",
    "document",
    "video",
    "sticker",
    "location",
    "contact",
    "voice",
    "button",
    "reaction",
    "edit",
]


class ChannelError(Exception):
    pass


# Why a request was refused as not the provider's, by a stable name the gateway logs.
SignatureReason = Literal[
    "signature_mismatch",  # a signature (Twilio, X-Hub-Signature-256) missing or not matching
    "bad_secret",  # Telegram's secret token missing or not matching
    "bad_verify_token",  # Meta's subscription check with another verify token
    "channel_not_configured",  # the secret to check it with is not set here
]


class SignatureInvalid(ChannelError):
    """`reason` names why (`SignatureReason`); `signed_url` is the URL a signature was
    computed over, where the provider signs one (Twilio): a wrong public URL shows in it."""

    def __init__(
        self,
        detail: str,
        *,
        status: int = 403,
        reason: SignatureReason = "signature_mismatch",
        signed_url: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.reason: SignatureReason = reason
        self.signed_url = signed_url


class PayloadInvalid(ChannelError):
    reason = "malformed"


class SendFailed(ChannelError):
    """`code` is the provider's own error code where it gave one (Twilio's "63016", the Cloud
    API's "131047": outside WhatsApp's customer-service window)."""

    def __init__(
        self,
        reason: str,
        *,
        retryable: bool,
        retry_after_s: float | None = None,
        code: str | None = None,
    ):
        super().__init__(reason)
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        self.code = code


def fetch_failed(what: str, error: FetchError) -> SendFailed:
    """A fetch that gave nothing (`outbound`), as a channel's `SendFailed`."""
    return SendFailed(f"{what} not fetched: {error}", retryable=error.retryable)


@dataclass(frozen=True, slots=True)
class RawRequest:
    """One HTTP request as a channel sees it: already read, immutable."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        for key, value in self.headers.items():
            if key.lower() == lowered:
                return value
        return None

    def form(self) -> dict[str, str]:
        """The body as `application/x-www-form-urlencoded` fields (last value wins)."""
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PayloadInvalid("form body is not UTF-8") from exc
        return dict(parse_qsl(text, keep_blank_values=True))


@dataclass(frozen=True, slots=True)
class Media:
    """An attachment kept as a reference: the provider's URL (Twilio) or media id (Cloud API),
    never its bytes."""

    url: str
    content_type: str | None = None
    media_id: str | None = None
    caption: str | None = None
    filename: str | None = None


@dataclass(frozen=True, slots=True)
class Word:
    """A transcribed word with the recognizer's confidence."""

    text: str
    confidence: float
    start: float | None = None
    end: float | None = None


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One customer message, parsed once at the edge.

    `sender` is the channel's own id for the customer (Twilio `From`, Telegram user id, web
    visitor id, caller number); `provider_message_id` with `channel` is the idempotency key.
    """

    channel: ChannelName
    provider_message_id: str
    sender: str
    text: str
    received_at: datetime
    kind: MessageKind = "text"
    sender_name: str | None = None
    media: tuple[Media, ...] = ()
    identity_token: str | None = None
    contact_phone: str | None = None
    contact_user_id: int | None = None
    edit_of: str | None = None
    transcript_confidence: float | None = None
    words: tuple[Word, ...] = ()
    # The provider message id of the message this one answers (WhatsApp's reply `context`).
    reply_to_provider_id: str | None = None
    # Web chat: the visitor's own id of the message, which the acknowledgement answers.
    client_message_id: str | None = None
    # The campaign whose episode the message opens (a campaign's own entry point).
    campaign_id: str | None = None
    # The provider's other fields, kept with the stored message as they came; the gateway
    # reads none of them by name (what it reads has a field above).
    extra: Mapping[str, str] = field(default_factory=dict)


def unstorable(text: str) -> str | None:
    """Why `text` cannot be stored on every backend, or None when it can: PostgreSQL refuses
    NUL in text, and a lone surrogate (from a JSON escape) cannot be encoded as UTF-8."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate"
    return None


def unstorable_field(message: InboundMessage) -> str | None:
    """The first text of a parsed message that cannot be stored, described; None if all can."""
    fields: list[tuple[str, str | None]] = [
        ("message id", message.provider_message_id),
        ("sender", message.sender),
        ("text", message.text),
        ("sender name", message.sender_name),
        ("identity token", message.identity_token),
        ("contact phone", message.contact_phone),
        ("edited message id", message.edit_of),
        *(("media type", m.content_type) for m in message.media),
        *(("media url", m.url) for m in message.media),
        *(("media caption", m.caption) for m in message.media),
        *(("media file name", m.filename) for m in message.media),
        ("replied message id", message.reply_to_provider_id),
        *(("transcribed word", w.text) for w in message.words),
        *((f"field {key}", value) for key, value in message.extra.items()),
    ]
    for name, value in fields:
        why = unstorable(value) if value is not None else None
        if why is not None:
            return f"{name} {why}"
    return None


@dataclass(frozen=True, slots=True)
class Template:
    """One of a tenant's approved WhatsApp templates, ready to send: Twilio sends
    `content_sid` with the variables as `ContentVariables`; the Cloud API sends `name` in
    `language` with the variables, in the order of their keys ("1", "2", …), as the body's
    parameters."""

    name: str
    content_sid: str | None = None
    language: str | None = None
    variables: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SendReference:
    """Which stored reply a send is: its turn and reply ids. A channel whose provider echoes a
    string of ours in its status reports (Twilio: the status callback URL; the Cloud API:
    `biz_opaque_callback_data`) sends `token(part)` with each part, so a part the provider
    accepted is recorded from its status even when our own record of the send was lost (the
    process died between the two) and is not sent again."""

    turn_id: int
    reply_id: int

    def token(self, part: int) -> str:
        return f"{self.turn_id}.{self.reply_id}.{part}"

    @staticmethod
    def read(token: str | None) -> tuple[SendReference, int] | None:
        """The reference and part a `token` names; None for anything else (never raises:
        a status without ours is still applied)."""
        fields = (token or "").split(".")
        if len(fields) != 3 or not all(field.isdigit() and len(field) <= 18 for field in fields):
            return None
        turn_id, reply_id, part = (int(field) for field in fields)
        return SendReference(turn_id, reply_id), part


@dataclass(frozen=True, slots=True)
class Choice:
    """A button offered with a message: its `title` shown, its `payload` what the channel
    sends back when it is tapped (Telegram's callback data, the Cloud API's row id)."""

    title: str
    payload: str
    description: str | None = None


@dataclass(frozen=True, slots=True)
class SourceLink:
    """A document a reply cites, for a channel that shows its sources apart from the text (the
    web chat): `number` is the `n` of the reply's `[n]`; `url` None for a document without one."""

    number: int
    title: str
    url: str | None = None


@dataclass(frozen=True, slots=True)
class OutboundMessage:
    """A reply or an operator's message. With `template`, the channel sends that template
    instead of `text` (which stays what is stored and shown); `media` are attachments by URL;
    `reference` names the stored reply in the provider's status reports, where it can."""

    channel: str
    recipient: str
    text: str
    reply_to: str | None = None
    message_id: str | None = None
    media: tuple[Media, ...] = ()
    template: Template | None = None
    reference: SendReference | None = None
    # The operator who wrote it (None: the bot), for channels that show who answers.
    operator: str | None = None
    # Buttons offered with the text (e.g. a satisfaction score); a channel that cannot show
    # them sends the text alone, which says what to type.
    choices: tuple[Choice, ...] = ()
    # The documents the text's `[n]` cite, for a channel that shows them apart (the web chat);
    # the other channels get their sources listed in the text and this empty.
    citations: tuple[SourceLink, ...] = ()


@dataclass(frozen=True, slots=True)
class SendResult:
    provider_message_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DeliveryStatus:
    """A provider's report on a message we sent: its id, the status and the provider's error
    code when it failed; the reply and part it was sent for when the provider echoed our
    `SendReference`."""

    provider_message_id: str
    status: str
    error_code: str | None = None
    reference: SendReference | None = None
    part: int = 0


@dataclass(frozen=True, slots=True)
class Ignored:
    """Something a request carried that is acknowledged without being stored: what it was and
    why (never its content)."""

    what: str
    reason: str


@dataclass(frozen=True, slots=True)
class Parsed:
    """Everything in one verified request, read in one pass: customer messages to store,
    delivery statuses to apply (in order) and the items acknowledged without either."""

    messages: tuple[InboundMessage, ...] = ()
    statuses: tuple[DeliveryStatus, ...] = ()
    ignored: tuple[Ignored, ...] = ()


class Channel(Protocol):
    """What every adapter provides; the gateway owns routes and the registry."""

    name: str

    def verify(self, request: RawRequest) -> None:
        """Raise `SignatureInvalid` unless the request really comes from the provider."""
        ...

    def parse(self, request: RawRequest) -> Parsed:
        """What a verified request carries; raise `PayloadInvalid` with the reason."""
        ...

    async def send(self, message: OutboundMessage) -> SendResult:
        """Deliver a reply; raise `SendFailed`."""
        ...


@runtime_checkable
class MediaFetch(Protocol):
    """An adapter that can download an attachment a customer sent (a voice note to transcribe,
    a contact card to read): the provider's URLs need the channel's credentials."""

    async def fetch_media(self, media: Media, kind: FetchKind) -> tuple[bytes, str]:
        """The attachment's bytes and content type, at most `kind`'s cap; raise `SendFailed`."""
        ...


@runtime_checkable
class TypingSignals(Protocol):
    """An adapter that can show the customer that a reply is being written.

    `recipient` and `reply_to` are what the reply's `OutboundMessage` will carry (the channel's
    sender id, the inbound message's provider message id). One signal shows for about
    `typing_repeat_s` seconds: send it again after that while the reply is still being written.
    The reply itself ends it on every channel. A failed signal never affects the reply.
    """

    typing_repeat_s: float

    async def typing(self, recipient: str, reply_to: str | None) -> None:
        """Show the customer that a reply is being written; raise `SendFailed` (one attempt,
        no retry inside: the next signal is the retry)."""
        ...


@runtime_checkable
class ReplyPreviews(Protocol):
    """An adapter that can show a reply while it is being written (streamed)."""

    async def preview(self, recipient: str, reply_to: str | None, text: str) -> None:
        """Show the reply as written so far: `text` is the whole reply so far, not a delta, and
        may be shorter than the previous preview (a retried model call). Nothing is stored;
        the final `send` of the same `reply_to` replaces the preview."""
        ...
