"""The model call of a reply: admitted by the `ModelGate`, streamed to a channel that shows a
reply as it is written, the tenant's fallback text when the provider fails for good, and the
conversation handed to a person at the tenant's count of failures in a row. Where the tenant
offers actions, the model's calls run in rounds before its answer (`actions.py`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from context import ChatMessage
from gateway.csat.answers import SurveyAnswers
from gateway.providers import ProviderError
from gateway.providers.base import Completion, ModelProvider
from gateway.providers.limits import CallLimits
from gateway.providers.pool import ProviderPool
from gateway.providers.tool_calls import ToolUse
from gateway.storage.message_meta import (
    CANNED_CONFIRMATION,
    CANNED_CSAT,
    CANNED_FALLBACK,
    CANNED_HANDOFF,
    CANNED_OFFLINE,
    CANNED_VERIFICATION,
)
from gateway.storage.records import PendingTurn
from gateway.storage.repositories import turns
from gateway.storage.updates import TurnOutcome, TurnUsage
from gateway.tenant_ref import TenantRef
from gateway.tenants import TenantSettings
from gateway.tools.verification_settings import VerificationSettings
from gateway.turns.answer.actions import TurnActions
from gateway.turns.answer.canned_texts import customer_texts, fallback_text, handoff_text
from gateway.turns.answer.deps import AnswerDeps
from gateway.turns.answer.reply_steps import Draft, ReplyTurn
from gateway.turns.answer.routing import MODEL_FAILED
from gateway.turns.log_fields import turn_fields
from gateway.turns.preview import Preview
from gateway.turns.typing import Typing
from gateway.turns.window import budget_for
from identity.step_up import Attempt

log = logging.getLogger("relaydesk.answer")


def verification_reply(outcome: str | None, texts: VerificationSettings) -> str | None:
    """What the customer is told of a typed code that verified nothing (None otherwise)."""
    match outcome:
        case Attempt.WRONG:
            return texts.wrong_message
        case Attempt.EXPIRED:
            return texts.expired_message
        case Attempt.LOCKED:
            return texts.locked_message
        case _:
            return None


class ModelCall:
    def __init__(
        self,
        deps: AnswerDeps,
        *,
        providers: ProviderPool,
        actions: TurnActions | None = None,
        surveys: SurveyAnswers | None = None,
    ) -> None:
        self._deps = deps
        self._providers = providers
        self._actions = actions
        self._surveys = surveys

    async def draft(self, turn: ReplyTurn, typing: Typing) -> Draft:
        """The model's reply to the turn's window, or the tenant's fallback (or handoff) text.
        The typing signal stops when the first streamed text shows."""
        pending, tenant = turn.pending, turn.tenant
        inbound = pending.inbound
        window = turn.assembled.window
        provider = self._providers.for_window(tenant, window.report.estimated_tokens)
        report = window.report.to_dict()
        adapter = self._deps.adapters.get(inbound.channel)
        recipient = inbound.sender.sender if inbound.sender is not None else ""
        preview = Preview.of(
            adapter, recipient, inbound.provider_message_id, typing.stop, window.knowledge
        )
        if self._surveys is not None and tenant.csat_enabled:
            # An answer to the satisfaction question is stored and thanked, not answered.
            # A tapped button: the Cloud API's row id, Telegram's callback data as the text.
            answer = inbound.meta.field("button_payload") or inbound.text
            score = await self._surveys.take(pending.turn.conversation_key, answer)
            if score is not None:
                return Draft(
                    tenant.csat_thanks, TurnOutcome(status="done", report=report), CANNED_CSAT
                )
        told = verification_reply(inbound.meta.verification, tenant.verification)
        if told is not None:  # a code typed back that verified nothing: said plainly
            return Draft(told, TurnOutcome(status="done", report=report), CANNED_VERIFICATION)
        offer = await self._actions.offer(turn) if self._actions is not None else None
        try:

            async def ask(tools: ToolUse | None) -> Completion:
                return await self._complete(
                    provider,
                    tenant,
                    pending.turn.tenant,
                    window.messages,
                    budget_for(tenant).output_reserve,
                    preview,
                    tools,
                )

            held_text: str | None = None
            if offer is None or self._actions is None:
                completion = await ask(None)
            else:
                caller, offered = offer
                # A write this message confirms (or cancels) comes first.
                decided = await self._actions.decide(turn, caller, offered)
                rounds = await self._actions.rounds(
                    ask,
                    caller,
                    offered,
                    turn,
                    first=(decided[0],) if decided is not None else (),
                    first_runs=(decided[1],) if decided is not None else (),
                )
                completion = rounds.completion
                report["actions"] = rounds.report()
                if rounds.room is not None:
                    report["tool_results"] = rounds.room.to_dict()
                if rounds.held is not None:
                    held_text = await self._actions.hold(turn, caller, rounds.held)
            if held_text is None and not completion.text.strip():
                # Calls where words were due (none offered, or the last round): no answer.
                raise ProviderError(
                    provider=provider.name,
                    model=provider.model,
                    reason="invalid_response",
                    attempts=completion.attempts,
                    status=200,
                    detail="the model called actions instead of answering",
                )
        except ProviderError as exc:
            log.warning(
                "model call failed",
                extra={"fields": {**turn_fields(pending.turn, inbound.channel), "error": str(exc)}},
            )
            failed = TurnOutcome(
                status="failed",
                provider=provider.name,
                model=provider.model,
                attempts=exc.attempts,
                error=str(exc)[:2000],
                report=report,
            )
        else:
            # The offline model's text is about the gateway, not the customer: kept out of
            # memory (summaries, facts, recall) like the fallback message.
            done = TurnOutcome(
                status="done",
                provider=provider.name,
                model=completion.model,
                usage=TurnUsage(
                    prompt_tokens=completion.usage.prompt_tokens,
                    completion_tokens=completion.usage.completion_tokens,
                    cached_tokens=completion.usage.cached_tokens,
                ),
                attempts=completion.attempts,
                report=report,
            )
            if held_text is not None:  # the customer is asked; the model's words wait
                return Draft(held_text, done, canned=CANNED_CONFIRMATION)
            canned = CANNED_OFFLINE if provider.name == "offline" else None
            return Draft(completion.text, done, canned=canned)
        finally:
            if preview is not None:
                await preview.close()
        texts = customer_texts(window.messages, inbound.text)
        if await self._failed_repeatedly(pending, tenant):
            told = handoff_text(tenant, texts)
            return Draft(told, failed, CANNED_HANDOFF, handoff=MODEL_FAILED)
        return Draft(fallback_text(tenant, texts), failed, CANNED_FALLBACK)

    async def _complete(
        self,
        provider: ModelProvider,
        tenant: TenantSettings,
        tenant_ref: TenantRef,
        window: Sequence[ChatMessage],
        max_tokens: int,
        preview: Preview | None,
        tools: ToolUse | None = None,
    ) -> Completion:
        limits = CallLimits(
            in_flight=tenant.model_max_in_flight, per_minute=tenant.model_requests_per_minute
        )
        provider_key = f"{provider.name}:{provider.model}"
        async with self._deps.gate.admit(provider_key, tenant_ref.encode(), limits):
            on_text = preview.on_text if preview is not None else None
            if tools is None:  # the call as before actions existed, for providers without them
                if on_text is None:
                    return await provider.complete(window, max_tokens=max_tokens)
                return await provider.complete(window, max_tokens=max_tokens, on_text=on_text)
            return await provider.complete(
                window, max_tokens=max_tokens, on_text=on_text, tools=tools
            )

    async def _failed_repeatedly(self, pending: PendingTurn, tenant: TenantSettings) -> bool:
        """Whether this failure is the tenant's `handoff_after_failures`-th in a row."""
        count = tenant.handoff_after_failures
        if count <= 0:
            return False
        if count == 1:
            return True
        async with self._deps.work, self._deps.sessions() as session:
            before = await turns.recent_outcomes(
                session,
                pending.turn.conversation_key,
                before_message_id=pending.inbound.id,
                limit=count - 1,
            )
        return len(before) == count - 1 and all(status == "failed" for status in before)
