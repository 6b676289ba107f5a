"""The actions of one turn: which the caller is offered, and the rounds of calls the model
makes before it answers in words.

The caller is the identity the window was built for (never a customer the model names); the
actions offered are the tenant's that its link level reaches. Each round runs the model's calls
in order through the `ActionRunner`, and the next model call sees their results. The rounds
stop when the model answers in words, after the tenant's `max_tool_rounds` (the last call may
not call anything), once the turn's `tool_turn_budget_s` is spent, or at a write: the gateway
then asks the customer to confirm it (`hold`) instead of the model answering.

The next message of the same channel identity decides a waiting write (`decide`): a
confirmation sends it, once, with the confirmation's id as `Idempotency-Key`; anything else
(or a reply after `confirmation_ttl_s`) cancels it. Either way the model's call sees what came
of it as the turn's first round.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta

from channels.redaction import redact
from context.tool_results import ResultRoom
from gateway.events.outbox import TOOL_CALLED
from gateway.providers.base import Completion
from gateway.providers.tool_calls import (
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolRound,
    ToolUse,
)
from gateway.runtime.clock import utcnow
from gateway.runtime.logs import mask
from gateway.runtime.metrics import Metrics
from gateway.storage.records import NewFact
from gateway.storage.repositories import confirmations, customers, facts
from gateway.storage.repositories.audit import record_audit
from gateway.tenants import TenantSettings
from gateway.tools.approvals import needs_operator
from gateway.tools.catalog import VERIFICATION_SPEC, ActionSpec, McpToolListing, catalog_of
from gateway.tools.confirmations import confirms, question
from gateway.tools.names import START_VERIFICATION
from gateway.tools.result_facts import declared_facts, source_tag
from gateway.tools.runner import ActionRun, ActionRunner, Caller
from gateway.tools.verification import CodeSender
from gateway.turns.answer.deps import AnswerDeps
from gateway.turns.answer.reply_steps import ReplyTurn
from gateway.turns.window import budget_for
from identity.levels import LinkLevel
from identity.tool_reach import KnownIdentifier

__all__ = ["ActionRounds", "TurnActions", "offered_actions"]

# One model call of the loop: the actions offered and the rounds so far in, the reply out.
Ask = Callable[[ToolUse], Awaitable[Completion]]


def offered_actions(
    tenant: TenantSettings,
    level: LinkLevel,
    listings: tuple[McpToolListing, ...] = (),
    *,
    verification: bool = False,
) -> Mapping[str, ActionSpec]:
    """The tenant's actions ``level`` reaches, by name (an MCP tool once its server lists it:
    ``listings``), and `start_verification` when some are out of reach and ``verification``
    (codes can be sent) allows it."""
    catalog = catalog_of(tenant.tools, tenant.mcp_servers, listings)
    return {
        spec.name: spec
        for spec in catalog.offered(level)
        if spec.name in catalog.actions or (verification and spec is VERIFICATION_SPEC)
    }


@dataclass(frozen=True, slots=True)
class ActionRounds:
    """The reply that ended the loop and every call made on the way."""

    completion: Completion
    runs: tuple[ActionRun, ...]
    rounds: int
    held: ActionRun | None = None  # a write waiting for the customer: no answer from the model
    room: ResultRoom | None = None  # the results' share of the window, as spent

    def report(self) -> list[dict[str, object]]:
        """What the turn's report keeps of the calls (no arguments: the audit trail has them)."""
        return [
            {
                "action": run.call.name,
                "status": run.status,
                "http_status": run.http_status,
                "latency_ms": round(run.latency_ms, 1),
                "dropped": list(run.dropped),
            }
            for run in self.runs
        ]


class TurnActions:
    def __init__(
        self,
        deps: AnswerDeps,
        runner: ActionRunner,
        metrics: Metrics | None = None,
        codes: CodeSender | None = None,
    ) -> None:
        self._deps = deps
        self._runner = runner
        self._metrics = metrics
        self._codes = codes

    async def offer(self, turn: ReplyTurn) -> tuple[Caller, Mapping[str, ActionSpec]] | None:
        """Whom the turn's calls act for and what they may call; None when nothing is
        offered (the tenant has no actions, or the window was built for no identity)."""
        identity = turn.assembled.identity
        tenant = turn.tenant
        if identity is None or not (tenant.tools or tenant.mcp_servers):
            return None
        mcp = self._runner.mcp
        listings = (
            await mcp.listings(tenant.mcp_servers) if mcp is not None and tenant.mcp_servers else ()
        )
        offered = offered_actions(
            tenant, identity.level, listings, verification=self._codes is not None
        )
        if not offered:
            return None
        async with self._deps.work, self._deps.reads() as session:
            known = await customers.identifiers_of(session, identity.customer_id)
        caller = Caller(
            customer_id=identity.customer_id,
            level=identity.level,
            channel=turn.pending.inbound.channel,
            conversation=turn.pending.turn.conversation_key,
            allowed_scopes=identity.allowed_scopes,
            identifiers=tuple(
                KnownIdentifier(record.kind, record.value, LinkLevel.parse(record.link_level))
                for record in known
            ),
        )
        return caller, offered

    async def rounds(
        self,
        ask: Ask,
        caller: Caller,
        offered: Mapping[str, ActionSpec],
        turn: ReplyTurn,
        *,
        first: tuple[ToolRound, ...] = (),
        first_runs: tuple[ActionRun, ...] = (),
    ) -> ActionRounds:
        """The rounds up to the model's answer; each round's calls are recorded (their facts,
        audit rows, counts and events) as soon as they ran, so a model call failing later
        loses none of them."""
        tenant, turn_id = turn.tenant, turn.pending.turn.id
        definitions = tuple(
            ToolDefinition(spec.name, spec.description, spec.parameters_json)
            for spec in offered.values()
        )
        deadline = time.monotonic() + tenant.tool_turn_budget_s
        room = ResultRoom(budget_for(tenant).tool_results)
        rounds: list[ToolRound] = []
        for earlier in first:
            fitted, room = self._fitted(earlier, room)
            rounds.append(fitted)
        runs: list[ActionRun] = list(first_runs)
        # A round's calls are recorded while the model reads their results (off the reply's
        # path), and always awaited before the rounds end, however they end.
        recording: asyncio.Task[None] | None = asyncio.create_task(
            self._record(turn, caller, offered, first_runs)
        )
        try:
            while True:
                final = len(rounds) >= tenant.max_tool_rounds or time.monotonic() >= deadline
                completion = await ask(ToolUse(definitions, tuple(rounds), final=final))
                if recording is not None:
                    await recording
                    recording = None
                if final or not completion.tool_calls:
                    return ActionRounds(completion, tuple(runs), len(rounds), room=room)

                done: list[ActionRun] = []
                for number, call in enumerate(completion.tool_calls):
                    run = await self._run(
                        call, offered, caller, turn, f"turn-{turn_id}:{len(rounds)}:{number}"
                    )
                    done.append(run)
                    if run.status == "awaiting_confirmation":
                        # One write at a time, asked of the customer now: the rest waits.
                        await self._record(turn, caller, offered, tuple(done))
                        runs.extend(done)
                        return ActionRounds(
                            completion, tuple(runs), len(rounds) + 1, held=run, room=room
                        )
                recording = asyncio.create_task(self._record(turn, caller, offered, tuple(done)))
                runs.extend(done)
                fitted, room = self._fitted(
                    ToolRound(
                        calls=completion.tool_calls,
                        results=tuple(run.result for run in done),
                        text=completion.text,
                    ),
                    room,
                )
                rounds.append(fitted)
        finally:
            if recording is not None:
                # Shielded: a turn stopped mid-way still leaves its calls on record.
                await asyncio.shield(recording)

    def _fitted(self, done: ToolRound, room: ResultRoom) -> tuple[ToolRound, ResultRoom]:
        """The round with its results fitted, in order, into the turn's room for them."""
        results: list[ToolResult] = []
        for result in done.results:
            content, room = room.fit(result.content, self._deps.counter)
            results.append(replace(result, content=content))
        return replace(done, results=tuple(results)), room

    async def _run(
        self,
        call: ToolCall,
        offered: Mapping[str, ActionSpec],
        caller: Caller,
        turn: ReplyTurn,
        idempotency_key: str,
    ) -> ActionRun:
        """One call: the built-in `start_verification` here, any other by the runner (which
        refuses a call to an action not offered)."""
        identity_id = turn.pending.inbound.identity_id
        if (
            call.name == START_VERIFICATION
            and call.name in offered
            and self._codes is not None
            and identity_id is not None
        ):
            return await self._codes.start(
                call, caller, identity_id, turn.tenant, turn.pending.turn.tenant
            )
        return await self._runner.run(
            call,
            offered,
            caller,
            max_result_tokens=turn.tenant.max_result_tokens,
            idempotency_key=idempotency_key,
        )

    async def _record(
        self,
        turn: ReplyTurn,
        caller: Caller,
        offered: Mapping[str, ActionSpec],
        runs: tuple[ActionRun, ...],
    ) -> None:
        await self.store_facts(turn, offered, runs)
        await self.audit(turn, caller, runs)

    async def hold(self, turn: ReplyTurn, caller: Caller, run: ActionRun) -> str:
        """Record the write ``run`` as waiting for the customer, or for an operator when the
        tenant says so (`approval: "operator"`); what to tell the customer."""
        tenant, pending = turn.tenant, turn.pending
        identity_id = pending.inbound.identity_id
        if identity_id is None or run.arguments_json is None:
            raise ValueError("a write is held only for a stored identity, its arguments checked")
        # Held for the console: the customer is told, not asked, so their "SIM" sends nothing.
        operator = needs_operator(tenant.tools, tenant.mcp_servers, run.call.name)
        async with self._deps.work, self._deps.sessions.begin() as session:
            await confirmations.ask(
                session,
                tenant=pending.turn.tenant.encode(),
                conversation_key=pending.turn.conversation_key,
                customer_id=caller.customer_id,
                identity_id=identity_id,
                turn_id=pending.turn.id,
                action=run.call.name,
                arguments_json=run.arguments_json,
                now=utcnow(),
                lasts=timedelta(
                    seconds=tenant.approval_ttl_s if operator else tenant.confirmation_ttl_s
                ),
                status=confirmations.APPROVAL if operator else confirmations.WAITING,
            )
        spec = offered_actions(tenant, caller.level).get(run.call.name)
        description = spec.description if spec is not None else run.call.name
        template = tenant.approval_message if operator else tenant.confirmation_message
        return question(template, run.call.name, description, run.arguments_json)

    async def decide(
        self, turn: ReplyTurn, caller: Caller, offered: Mapping[str, ActionSpec]
    ) -> tuple[ToolRound, ActionRun] | None:
        """The conversation's waiting write, decided by this message: sent when it confirms,
        else cancelled (or expired); None when nothing waits for this identity."""
        pending, tenant = turn.pending, turn.tenant
        async with self._deps.work, self._deps.reads() as session:
            waiting = await confirmations.waiting(session, pending.turn.conversation_key)
        if waiting is None or waiting.identity_id != pending.inbound.identity_id:
            return None
        now = utcnow()
        call = ToolCall(f"confirmed_{waiting.id[:16]}", waiting.action, waiting.arguments_json)
        withdrawn = waiting.action not in offered  # the settings changed, or the level fell
        if now >= waiting.expires_at or not confirms(pending.inbound.text) or withdrawn:
            status = "expired" if now >= waiting.expires_at else "cancelled"
            async with self._deps.work, self._deps.sessions.begin() as session:
                await confirmations.decide(session, waiting.id, status, now)
            told = (
                "not sent: the action is no longer offered to this conversation"
                if withdrawn and status == "cancelled"
                else f"not sent: the customer did not confirm it ({status})"
            )
            run = ActionRun(call, "failed", told, waiting.arguments_json, kind="write")
            return ToolRound((call,), (run.result,)), run
        async with self._deps.work, self._deps.sessions.begin() as session:
            if not await confirmations.decide(session, waiting.id, "sent", now):
                return None  # decided meanwhile: sent once, by whoever came first
        run = await self._runner.run(
            call,
            offered,
            caller,
            max_result_tokens=tenant.max_result_tokens,
            idempotency_key=waiting.id,
            confirmed=True,
        )
        return ToolRound((call,), (run.result,)), run

    async def store_facts(
        self, turn: ReplyTurn, offered: Mapping[str, ActionSpec], runs: tuple[ActionRun, ...]
    ) -> int:
        """The facts the tools that answered declare, sourced to the turn's message and tagged
        with the tool; returns how many were written."""
        pending = turn.pending
        found: list[NewFact] = []
        for run in runs:
            spec = offered.get(run.call.name)
            if run.status != "ok" or spec is None or not spec.facts:
                continue
            # A tool that names one scope gives its facts that scope; any other, "account".
            scope = next(iter(spec.scopes)) if len(spec.scopes) == 1 else "account"
            for key, value in declared_facts(run.content, spec.facts):
                found.append(
                    NewFact(
                        key=key,
                        value=value,
                        scope=scope,
                        source_message_id=pending.inbound.id,
                        tags=(source_tag(spec.name),),
                        confirmed=True,
                    )
                )
        if not found:
            return 0
        async with self._deps.work, self._deps.sessions.begin() as session:
            for fact in found:
                await facts.record_fact(session, pending.inbound.customer_id, fact)
        return len(found)

    async def audit(self, turn: ReplyTurn, caller: Caller, runs: tuple[ActionRun, ...]) -> None:
        """One audit row a call: the tool, the identity and its level, the arguments (phone
        numbers, e-mails and card numbers masked), what came of it, the turn whose reply it
        fed."""
        if not runs:
            return
        if self._metrics is not None:
            for run in runs:
                self._metrics.action_calls.labels(run.call.name, run.status).inc()
        pending = turn.pending
        async with self._deps.work, self._deps.sessions.begin() as session:
            for run in runs:
                await record_audit(
                    session,
                    actor="model",
                    action=f"action.{run.status}",
                    reason=f"{run.call.name} asked by the model in turn {pending.turn.id}",
                    subject_type="customer",
                    subject_id=caller.customer_id,
                    details={
                        "tool": run.call.name,
                        "kind": run.kind,
                        "identity_id": pending.inbound.identity_id,
                        "link_level": caller.level.value,
                        "channel": caller.channel,
                        "arguments": masked(run.arguments_json or run.call.arguments_json),
                        "dropped": list(run.dropped),
                        "status": run.status,
                        "http_status": run.http_status,
                        "latency_ms": round(run.latency_ms, 1),
                        "turn_id": pending.turn.id,
                    },
                )
                events = self._deps.events
                if events is not None and events.enabled:
                    await events.record(
                        session,
                        TOOL_CALLED,
                        {
                            "tool": run.call.name,
                            "outcome": run.status,
                            "customer_id": caller.customer_id,
                            "conversation_key": caller.conversation,
                            "link_level": caller.level.value,
                            "http_status": run.http_status,
                            "latency_ms": round(run.latency_ms, 1),
                            "turn_id": pending.turn.id,
                        },
                    )


def masked(text: str) -> str:
    """``text`` with card numbers and security codes, phone numbers and e-mails masked."""
    return mask(redact(text).text)
