"""What erasures share: finding rows whose free-form JSON or text names a customer, and
scrubbing the personal data out of audit rows (action, actor and time stay)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Final, cast

from sqlalchemy import ColumnElement, CursorResult, Text, false, or_, update
from sqlalchemy import cast as sql_cast
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from gateway.storage.models import AuditEntry

# What an erased audit row keeps instead of its reason and details.
SCRUBBED_REASON: Final = "(erased)"
SCRUBBED_DETAILS: Final[dict[str, Any]] = {"erased": True}
# Tokens per statement: each is one LIKE, so a long list is split.
_CHUNK: Final = 100


def _like_fragment(value: str, *, encoded: bool) -> str:
    """`value` as it appears in the column, with LIKE's wildcards escaped. In stored JSON
    (`encoded`) both backends hold `json.dumps` output, non-ASCII escaped."""
    inner = json.dumps(value)[1:-1] if encoded else value
    return inner.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def names_any(
    column: InstrumentedAttribute[Any] | ColumnElement[Any],
    tokens: Sequence[str],
    *,
    encoded: bool = True,
) -> ColumnElement[bool]:
    """True for rows whose `column` contains any of `tokens` (ids, values): a JSON column or
    JSON text (`encoded`), or plain text."""
    wanted = [t for t in tokens if t]
    if not wanted:
        return false()
    text = sql_cast(column, Text)
    return or_(*(text.like(f"%{_like_fragment(t, encoded=encoded)}%", escape="\\") for t in wanted))


def chunks(tokens: Iterable[str]) -> list[list[str]]:
    items = sorted(set(tokens))
    return [items[start : start + _CHUNK] for start in range(0, len(items), _CHUNK)]


def rowcount(result: object) -> int:
    return max(int(cast(CursorResult[Any], result).rowcount or 0), 0)


async def scrub_audit(
    session: AsyncSession,
    *,
    subject_ids: Sequence[str] = (),
    naming: Sequence[str] = (),
    within_subjects: Sequence[str] = (),
) -> int:
    """Blank the reason and details of audit rows about `subject_ids`, and of rows whose
    details name any of `naming` (restricted to `within_subjects` when given). Returns how
    many rows were scrubbed (a row matched twice counts twice)."""
    scrubbed = 0
    values = {"reason": SCRUBBED_REASON, "details": SCRUBBED_DETAILS}
    for part in chunks(subject_ids):
        result = await session.execute(
            update(AuditEntry).where(AuditEntry.subject_id.in_(part)).values(**values)
        )
        scrubbed += rowcount(result)
    for part in chunks(naming):
        query = update(AuditEntry).where(
            names_any(AuditEntry.details, part) | names_any(AuditEntry.reason, part, encoded=False)
        )
        if within_subjects:
            query = query.where(AuditEntry.subject_id.in_(list(within_subjects)))
        scrubbed += rowcount(
            await session.execute(
                query.values(**values).execution_options(synchronize_session=False)
            )
        )
    return scrubbed
