"""What every `/v1/operator` action shares: the decision body (a reason, and who acts when the
caller uses the API key) and the audit entry it answers with."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gateway.storage.records import AuditRecord


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, max_length=2000)
    actor: str = Field("api", min_length=1, max_length=200)


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
