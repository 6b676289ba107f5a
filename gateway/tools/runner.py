"""One call the model asked for, taken as far as it may go: refused when the action was not
offered at the caller's link level, answered as an error when its arguments fail the action's
schema, held for the customer's confirmation when it writes, else sent to the business with an
identity assertion the gateway signs for the conversation's customer.

Whatever happens, the model gets a result it can read (`ActionRun.result`); nothing here
raises for a business API's fault, and nothing is sent without the checks before it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from context.tokens import TokenCounter
from gateway.providers.tool_calls import ToolCall, ToolResult
from gateway.tools.arguments import ArgumentsInvalid, checked_arguments
from gateway.tools.assertion import AssertionSigner, AssertionUnavailable, IdentityClaims
from gateway.tools.catalog import ActionSpec
from gateway.tools.http_action import call_endpoint
from gateway.tools.mcp_actions import McpActions
from identity.levels import LinkLevel
from identity.tool_reach import KnownIdentifier, asserted_identifiers, refusal
from outbound.fetcher import SafeFetcher

__all__ = ["ActionRun", "ActionRunner", "Caller", "RunStatus"]

log = logging.getLogger("relaydesk.tools")

RunStatus = Literal["ok", "failed", "refused", "invalid", "awaiting_confirmation"]
CUT_MARK: Final = " […]"


@dataclass(frozen=True, slots=True)
class Caller:
    """Whom a turn's calls act for, as the gateway resolved the conversation: never what the
    model says."""

    customer_id: str
    level: LinkLevel
    channel: str
    conversation: str
    allowed_scopes: frozenset[str]
    identifiers: tuple[KnownIdentifier, ...] = ()


@dataclass(frozen=True, slots=True)
class ActionRun:
    """How one call went. ``content`` is what the model is told; ``arguments_json`` the checked
    arguments (None when they never passed); ``dropped`` the arguments the schema does not
    declare, left out."""

    call: ToolCall
    status: RunStatus
    content: str
    arguments_json: str | None = None
    dropped: tuple[str, ...] = ()
    http_status: int | None = None
    latency_ms: float = 0.0
    kind: Literal["read", "write"] | None = None

    @property
    def result(self) -> ToolResult:
        return ToolResult(self.call.id, self.content, failed=self.status != "ok")


class ActionRunner:
    def __init__(
        self,
        fetcher: SafeFetcher,
        signer: AssertionSigner,
        environ: Mapping[str, str],
        counter: TokenCounter,
        mcp: McpActions | None = None,
    ) -> None:
        self._fetcher = fetcher
        self._signer = signer
        self._environ = environ
        self._counter = counter
        self.mcp = mcp

    async def run(
        self,
        call: ToolCall,
        offered: Mapping[str, ActionSpec],
        caller: Caller,
        *,
        max_result_tokens: int,
        idempotency_key: str | None = None,
        confirmed: bool = False,
    ) -> ActionRun:
        """Take ``call`` as far as it may go; ``confirmed``: a write the customer confirmed,
        sent now (with ``idempotency_key``)."""
        reach = {name: spec.reach for name, spec in offered.items()}
        refused = refusal(call.name, reach, caller.level)
        if refused is not None:
            log.warning("action refused", extra={"fields": {"action": call.name, "why": refused}})
            return ActionRun(call, "refused", f"refused, nothing was sent: {refused}")
        spec = offered[call.name]
        try:
            checked = checked_arguments(spec.parameters, call.arguments_json)
        except ArgumentsInvalid as exc:
            return ActionRun(call, "invalid", f"not sent, the arguments are wrong: {exc}")
        if checked.dropped:
            log.info(
                "undeclared arguments dropped",
                extra={"fields": {"action": call.name, "dropped": list(checked.dropped)}},
            )
        done = _Done(call, checked.json_text, checked.dropped, spec.kind)
        if spec.kind == "write" and not confirmed:
            return done.as_run(
                "awaiting_confirmation",
                "not sent yet: the customer is asked to confirm it first",
            )
        claims = IdentityClaims(
            customer_id=caller.customer_id,
            link_level=caller.level,
            channel=caller.channel,
            conversation=caller.conversation,
            identifiers=asserted_identifiers(caller.identifiers, spec.reach, caller.allowed_scopes),
        )
        try:
            assertion = self._signer.sign(spec.name, claims)
        except AssertionUnavailable as exc:
            return done.as_run("failed", f"not called: {exc}")
        if spec.server is not None and self.mcp is not None:
            outcome = await self.mcp.call(spec.server, spec.name, checked.as_object(), assertion)
        elif spec.endpoint is not None:
            outcome = await call_endpoint(
                self._fetcher,
                spec.endpoint,
                checked,
                assertion=assertion,
                environ=self._environ,
                idempotency_key=idempotency_key,
            )
        else:
            return done.as_run("failed", "this action cannot be called here")
        if not outcome.ok:
            return done.as_run(
                "failed", f"failed: {outcome.body}", outcome.http_status, outcome.latency_ms
            )
        text = self._cut(outcome.body, max_result_tokens)
        return done.as_run("ok", text, outcome.http_status, outcome.latency_ms)

    def _cut(self, text: str, max_tokens: int) -> str:
        head, _, dropped = self._counter.truncate(text, max_tokens, 0)
        return head + CUT_MARK if dropped else head


@dataclass(frozen=True, slots=True)
class _Done:
    call: ToolCall
    arguments_json: str
    dropped: tuple[str, ...]
    kind: Literal["read", "write"]

    def as_run(
        self,
        status: RunStatus,
        content: str,
        http_status: int | None = None,
        latency_ms: float = 0.0,
    ) -> ActionRun:
        return ActionRun(
            self.call,
            status,
            content,
            self.arguments_json,
            self.dropped,
            http_status,
            latency_ms,
            self.kind,
        )
