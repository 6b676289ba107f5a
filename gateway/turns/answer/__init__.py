"""Answer: one conversation's pending turns, one at a time, in arrival order.

Under the conversation lock (in-process, or Redis with a fencing token): the window assembled
for the sender's identity as it was when the message arrived, the model called (the tenant's
fallback text when it fails), the reply stored with its usage and budget report — refused if a
newer lock holder wrote — and handed to the deliver step; compaction queued once the episode
passes its high-water mark.

A model call is a wait, not work: many conversations answer at once, their model calls admitted
by the `ModelGate` (process, provider and tenant limits), while the steps that use the CPU and
the database (reading the turn, assembling the window, storing the reply) take one of a few
work slots (`AnswerDeps.work`). The customer sees a typing signal while the model works, and a
channel that can show a reply as it is written (web chat) gets it streamed; only the finished
reply is stored. The reply is sent in the background, in order, while the next turn is answered.

While the conversation is not the bot's (an operator holds it, or a human was asked for) a
turn is not answered: its message's facts are stored and memory compacted as usual, the turn
marked "human", and no model is called, no typing shown, nothing sent. A customer asking for a
person (the tenant's phrases), a second failed model call in a row (the tenant's count) or the
model's handoff marker move a bot conversation to waiting, and the customer is told so (the
tenant's text, a canned reply). The owner is read with the turn; the reply's own UPDATE checks
it is still the bot's, so a conversation taken while its model was answering sends nothing.

A customer's model calls are paced (`pacing.py`): past the tenant's
`rate_limits.model_calls_per_customer` the drain waits for the window, then answers the turns
waiting by then with one reply, so a burst of messages never costs a call each.

Several processes may answer: a drain takes the conversation's lock only if it is free (the
holder answers what is pending) and looks once more after letting it go, so a turn stored while
it held the lock is never left waiting for the sweep.

The steps, one module each:

- `drain.py` — `Answerer`: the lock and the loop, each turn routed and its steps run;
- `steps.py` — `AnswerSteps`: the steps below, built once, each with what it uses;
- `routing.py` — `route_turn`, pure: answer, leave to a person, or hand over (with the reason);
- `pacing.py` — `ModelPacing`: each customer's model calls within the tenant's rate limit;
- `preparation.py` — the read version (voice transcript, contact card), facts, the window;
- `model_call.py` — the model call (gate, preview, fallback, repeated failures) → a `Draft`;
- `reply_steps.py` — the ordered `ReplyStep`s the draft goes through before it is stored;
- `store.py` — the fenced store, with the deliver step's `DeliveryClaim`;
- `compaction.py` — the compaction trigger;
- `deps.py` — `AnswerDeps`, what they share (sessions, counter, work slots, model gate...).

A new reply step (say, running the model's tool calls): a class with
`async def apply(self, draft: Draft, turn: ReplyTurn) -> Draft` in `reply_steps.py` (or a module
of its own beside it), returning the draft unchanged when it has nothing to do (a canned draft,
a failed call) or a `dataclasses.replace`d copy; then put it in `REPLY_STEPS` at its place in
the order (the handoff marker is taken out first, media markers last). A step that needs I/O
gets its collaborators in its constructor; one that needs more of the turn than `ReplyTurn`
holds adds the field there.
"""

from __future__ import annotations

from gateway.turns.answer.deps import WORK_SLOTS, AnswerDeps
from gateway.turns.answer.drain import Answerer
from gateway.turns.answer.pacing import ModelPacing
from gateway.turns.answer.reply_steps import REPLY_STEPS, Draft, ReplyStep, ReplyTurn
from gateway.turns.answer.routing import (
    ASKED_BY_CUSTOMER,
    MODEL_FAILED,
    MODEL_MARKER,
    Route,
    Routing,
    route_turn,
)
from gateway.turns.answer.steps import AnswerSteps
from gateway.turns.answer.store import StaleWriter, TakenMeanwhile

__all__ = [
    "ASKED_BY_CUSTOMER",
    "MODEL_FAILED",
    "MODEL_MARKER",
    "REPLY_STEPS",
    "WORK_SLOTS",
    "AnswerDeps",
    "AnswerSteps",
    "Answerer",
    "Draft",
    "ModelPacing",
    "ReplyStep",
    "ReplyTurn",
    "Route",
    "Routing",
    "StaleWriter",
    "TakenMeanwhile",
    "route_turn",
]
