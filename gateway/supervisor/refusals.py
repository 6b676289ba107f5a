"""Why several processes sharing the work cannot run on some settings: they share nothing in
memory, so they need PostgreSQL and Redis (the embedded SQLite file, in-process locks, dedupe
and compaction queue belong to one process)."""

from __future__ import annotations

from gateway.config import Settings


def _shared_services_missing(settings: Settings) -> list[str]:
    missing = []
    if settings.is_sqlite:
        missing.append("RELAYDESK_DATABASE_URL=postgresql+asyncpg://…")
    if settings.redis_url is None:
        missing.append("RELAYDESK_REDIS_URL=redis://…")
    return missing


def refusal(settings: Settings, workers: int, background: int = 1) -> str | None:
    """Why `workers` gateway and `background` background processes cannot run on these
    settings, or None."""
    several = workers >= 2 or background >= 2
    missing = _shared_services_missing(settings) if several else []
    if not missing:
        return None
    asked = f"--workers {workers}" if workers >= 2 else f"--background {background}"
    return (
        f"{asked} needs PostgreSQL and Redis: the embedded SQLite database and the "
        "in-process locks, dedupe and queue belong to one process. Set "
        + " and ".join(missing)
        + " (run `relaydesk migrate` first), or serve with one worker."
    )


def background_refusal(settings: Settings) -> str | None:
    """Why a standalone background process (`relaydesk background`) cannot run, or None."""
    missing = _shared_services_missing(settings)
    if not missing:
        return None
    return (
        "relaydesk background needs PostgreSQL and Redis: it does the work of gateways started "
        "with RELAYDESK_RUN_BACKGROUND=false, which share its database and wake it over Redis. "
        "Set " + " and ".join(missing) + " (run `relaydesk migrate` first)."
    )
