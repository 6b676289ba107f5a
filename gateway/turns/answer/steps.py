"""The steps a turn goes through, built once per process and handed to the drain together."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.csat.answers import SurveyAnswers
from gateway.knowledge.cache import KnowledgeCache
from gateway.memory.background_facts import BackgroundFacts
from gateway.memory.llm_compactor import CompactorFactory
from gateway.memory.queue import CompactionQueue
from gateway.memory.recall import RecallCache
from gateway.providers.pool import ProviderPool
from gateway.providers.transcriber import Transcriber
from gateway.runtime.metrics import Metrics
from gateway.runtime.tasks import TaskOwner
from gateway.tools.runner import ActionRunner
from gateway.tools.state import StateSource
from gateway.tools.verification import CodeSender
from gateway.turns.answer.actions import TurnActions
from gateway.turns.answer.compaction import CompactionTrigger
from gateway.turns.answer.deps import AnswerDeps
from gateway.turns.answer.model_call import ModelCall
from gateway.turns.answer.preparation import Preparation
from gateway.turns.answer.reply_steps import REPLY_STEPS, ReplyStep
from gateway.turns.answer.store import ReplyStore


@dataclass(frozen=True, slots=True)
class AnswerSteps:
    model_facts: BackgroundFacts  # the summary model's facts of each customer message
    preparation: Preparation
    model_call: ModelCall
    reply_steps: tuple[ReplyStep, ...]
    store: ReplyStore
    compaction: CompactionTrigger

    @classmethod
    def build(
        cls,
        deps: AnswerDeps,
        *,
        providers: ProviderPool,
        recall_cache: RecallCache,
        knowledge: KnowledgeCache | None = None,
        memory: CompactionQueue | None = None,
        transcriber: Transcriber | None = None,
        message_facts_for: CompactorFactory | None = None,
        reply_steps: Sequence[ReplyStep] = REPLY_STEPS,
        owner: TaskOwner | None = None,
        actions: ActionRunner | None = None,
        state: StateSource | None = None,
        metrics: Metrics | None = None,
        codes: CodeSender | None = None,
    ) -> AnswerSteps:
        """Each step with only the collaborators it uses."""
        model_facts = BackgroundFacts(
            sessions=deps.sessions,
            extractor_for=message_facts_for,
            gate=deps.gate,
            work=deps.work,
            owner=owner,
        )
        return cls(
            model_facts=model_facts,
            preparation=Preparation(
                deps,
                recall_cache=recall_cache,
                knowledge=knowledge,
                model_facts=model_facts,
                transcriber=transcriber,
                state=state,
            ),
            model_call=ModelCall(
                deps,
                providers=providers,
                actions=TurnActions(deps, actions, metrics, codes) if actions is not None else None,
                surveys=SurveyAnswers(deps.sessions, metrics),
            ),
            reply_steps=tuple(reply_steps),
            store=ReplyStore(deps, metrics),
            compaction=CompactionTrigger(deps, memory),
        )
