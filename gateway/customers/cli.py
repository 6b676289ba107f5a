"""`relaydesk customer export ID` and `relaydesk customer erase ID --reason R --actor A`."""

from __future__ import annotations

import json
import sys

from gateway.config import Settings
from gateway.coordination.redis_client import make_redis
from gateway.customers.erasure import AfterCommit, erase_customer
from gateway.customers.export import export_customer
from gateway.customers.forgetting import Forgetting
from gateway.memory.recall import RecallCache
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.errors import RecordNotFound

EXPORT_REASON = "data subject access request (command line)"


async def export(settings: Settings, customer_id: str, *, actor: str) -> int:
    """Print the customer's export document as JSON on standard output."""
    engine = make_engine(settings.database_url)
    try:
        document = await export_customer(
            make_sessionmaker(engine), customer_id, actor=actor, reason=EXPORT_REASON
        )
    except RecordNotFound as exc:
        print(f"relaydesk: {exc}", file=sys.stderr)
        return 1
    finally:
        await engine.dispose()
    print(json.dumps(document, ensure_ascii=False, indent=2))
    return 0


async def erase(settings: Settings, customer_id: str, *, reason: str, actor: str) -> int:
    """Erase the customer; with Redis configured, its keys go and every gateway process
    forgets the customer. Prints the rows removed per table as JSON."""
    engine = make_engine(settings.database_url)
    redis = make_redis(settings.redis_url) if settings.redis_url else None
    try:
        done = await erase_customer(
            make_sessionmaker(engine),
            AfterCommit(
                redis,
                Forgetting(RecallCache(), redis),
                settings.compaction_stream,
                tombstone_days=settings.erasure_tombstone_days,
            ),
            customer_id,
            actor=actor,
            reason=reason,
        )
    except RecordNotFound as exc:
        print(f"relaydesk: {exc}", file=sys.stderr)
        return 1
    finally:
        if redis is not None:
            await redis.aclose()
        await engine.dispose()
    print(
        json.dumps(
            {
                "erased": list(done.customer_ids),
                "removed": done.counts,
                "redis_keys_deleted": done.redis_keys,
                "audit_id": done.audit.id,
            },
            indent=2,
        )
    )
    return 0
