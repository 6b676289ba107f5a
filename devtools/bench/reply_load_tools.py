"""The side of ``relaydesk bench reply --tool-latency`` whose model calls a read action per turn:
the gateway settings it needs, the action offered to its gateway's host, and the checks that
calls really happened.

A gateway signs each call with ``RELAYDESK_TOOL_IDENTITY_KEY`` and fetches business endpoints
only at public addresses unless ``RELAYDESK_FETCH_ALLOW`` names the host; the local API is on
loopback, so both slow sides get both settings (the side without the action too, so that only
the tenant's actions differ). The action is a tenant setting of the tools side's host alone
(``127.0.0.1:<port>``): the other sides' gateways, on other ports, never see it.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from devtools.bench.business_api import IDENTITY_KEY, ORDER_STATUS, OrdersApi, order_status_tool
from devtools.bench.load_tool_report import ToolRun
from devtools.bench.model_server import SlowModel
from devtools.bench.reply_talk import ReplyBenchError
from gateway.storage.repositories.tenants import save_tenant_settings
from gateway.tenant_ref import DEFAULT_DOMAIN
from gateway.tenants import TenantSettings

__all__ = ["acting_env", "check_called", "offer_action", "tool_run"]

LOOPBACK = "127.0.0.1"


def acting_env() -> dict[str, str]:
    """What a gateway needs to call the local API: the signing key, loopback allowed."""
    return {"RELAYDESK_TOOL_IDENTITY_KEY": IDENTITY_KEY, "RELAYDESK_FETCH_ALLOW": LOOPBACK}


async def offer_action(
    sessions: async_sessionmaker[AsyncSession], port: int, api_url: str, latency_s: float
) -> None:
    """Save the action as the settings of the gateway's host ``127.0.0.1:<port>``."""
    settings = {"tools": [order_status_tool(api_url, latency_s)]}
    TenantSettings.model_validate(settings)  # refused here rather than ignored by the gateway
    async with sessions.begin() as session:
        await save_tenant_settings(
            session, domain=DEFAULT_DOMAIN, host=f"{LOOPBACK}:{port}", settings=settings
        )


def check_called(api: OrdersApi, model: SlowModel, what: str) -> None:
    """`ReplyBenchError` when the API answered no call during ``what``, with what the model
    saw: a side that never called the action would measure nothing about it."""
    if api.calls > 0:
        return
    offered = sorted({name for r in model.requests for name in r.offered})
    if ORDER_STATUS.name not in offered:
        why = f"the model was never offered {ORDER_STATUS.name} (offered: {offered or 'nothing'})"
    elif model.calls_made == 0:
        why = f"the model was offered {ORDER_STATUS.name} but never called it"
    else:
        why = (
            f"the model called {ORDER_STATUS.name} {model.calls_made} times, the API answered "
            f"none ({api.refused} refused for their assertion, {model.failed_results} results "
            "failed: is the endpoint's host allowed to the gateway's fetches?)"
        )
    raise ReplyBenchError(f"tools: no call of the read action reached the API in {what}: {why}")


def tool_run(api: OrdersApi, model: SlowModel, run: str) -> ToolRun:
    """The calls since both were last reset; ``run`` starts the references of the load's
    messages (`devtools.bench.load_offer.webhook`), the order ids the model looks up."""
    looked_up = [count for order, count in api.by_order.items() if order.startswith(run)]
    return ToolRun(
        latency_s=api.latency_s,
        calls=api.calls,
        orders=len(looked_up),
        repeated=sum(count > 1 for count in looked_up),
        refused=api.refused,
        model_calls=model.calls_made,
        failed_results=model.failed_results,
        peak_in_flight=api.peak_in_flight,
        connections=api.connections,
    )
