"""What every `/v1/operator` action shares: the decision body (a reason, and who acts when the
caller uses the API key), the audit entry it answers with, and an attachment by URL."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, UrlConstraints

from channels.base import Media
from gateway.storage.records import AuditRecord


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, max_length=2000)
    actor: str = Field("api", min_length=1, max_length=200)


# An attachment is sent by its URL, which the provider fetches: http or https only.
AttachmentUrl = Annotated[HttpUrl, UrlConstraints(max_length=2048)]


class AttachmentIn(BaseModel):
    """A file an operator's message carries, by URL (`content_type` helps channels that send
    photos and documents differently; `caption` shows under it where the channel has one)."""

    model_config = ConfigDict(extra="forbid")

    url: AttachmentUrl
    content_type: str | None = Field(
        None, max_length=200, pattern=r"^[A-Za-z0-9][\w.+-]*/[A-Za-z0-9][\w.+-]*$"
    )
    caption: str | None = Field(None, max_length=1024)
    filename: str | None = Field(None, min_length=1, max_length=255)

    def media(self) -> Media:
        return Media(
            str(self.url), self.content_type, caption=self.caption or None, filename=self.filename
        )


class TemplateIn(BaseModel):
    """One of the tenant's WhatsApp templates (`whatsapp_templates`) to send; `variables`
    override (and add to) the ones filled from the customer's facts."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    variables: dict[str, str] = Field(default_factory=dict, max_length=50)
    actor: str = Field("api", min_length=1, max_length=200)
    reason: str = Field("a WhatsApp template", min_length=1, max_length=2000)


def audit_json(entry: AuditRecord) -> dict[str, Any]:
    return {
        "id": entry.id,
        "actor": entry.actor,
        "action": entry.action,
        "reason": entry.reason,
        "subject_type": entry.subject_type,
        "subject_id": entry.subject_id,
        "details": entry.details,
        "created_at": entry.created_at.isoformat(),
    }
