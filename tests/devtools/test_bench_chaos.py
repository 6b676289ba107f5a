"""`relaydesk bench chaos`: the checks, phases and fault recoveries computed from small
hand-made records, the memory slope, the serve log's roles and the options. The whole run is
`tests/flows/faults/test_chaos.py`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from devtools.bench.chaos_checks import check, findings
from devtools.bench.chaos_children import ServeChildren
from devtools.bench.chaos_options import ChaosOptions
from devtools.bench.chaos_processes import serve_roles
from devtools.bench.chaos_records import (
    Attempt,
    Create,
    Fault,
    InboxRow,
    Offered,
    Outbound,
    Phase,
    Recorded,
    Restart,
    RssSample,
    Snapshot,
    StoredMessage,
    Turn,
)
from devtools.bench.chaos_report import Where, where
from devtools.bench.chaos_rss import memory, slope_mb_per_min
from devtools.bench.chaos_timeline import timeline
from gateway.cli import main

ANA, BIA = "+5531900000001", "+5531900000002"
CALLBACK = "http://127.0.0.1:8000/webhooks/twilio/status"


def _acked(sid: str, phone: str, due: float, *failed_at: float) -> Offered:
    """A message due at `due`, failing at each of `failed_at` (no answer), then answered 200
    a tenth of a second after its last try."""
    tries = [Attempt(at, at + 0.05, None) for at in failed_at]
    last = max((due, *failed_at)) + 0.5 if failed_at else due
    return Offered(sid, phone, due, (*tries, Attempt(last, last + 0.1, 200)))


def _reply(at: float, phone: str, sid: str, turn: int, *, sent_as: str = "") -> Create:
    return Create(
        at,
        f"whatsapp:{phone}",
        f"Your message: “[{sid}] oi”",
        f"{CALLBACK}?reply={turn}.{turn + 100}.0",
        sent_as or f"SMout{turn}",
    )


def _turn(number: int, phone: str, status: str = "done") -> Turn:
    """Turn `number` of the inbound message of row id `number`."""
    return Turn(number, number, f"whatsapp:{phone}", status, "sent" if status == "done" else None)


def _recorded(
    offered: Sequence[Offered],
    creates: Sequence[Create],
    *,
    messages: Sequence[StoredMessage] = (),
    turns: Sequence[Turn] = (),
    inbox: Sequence[InboxRow] = (),
    outbound: Sequence[Outbound] | None = None,
    phases: Sequence[Phase] = (),
    faults: Sequence[Fault] = (),
) -> Recorded:
    """The record of a run; by default every create is a recorded send of its turn."""
    if outbound is None:
        outbound = [Outbound(c.sid, int(c.callback.rsplit("=", 1)[1].split(".")[0]), 0)
                    for c in creates]  # fmt: skip
    return Recorded(
        offered=tuple(offered),
        creates=tuple(creates),
        snapshot=Snapshot(tuple(messages), tuple(inbox), tuple(turns), tuple(outbound)),
        phases=tuple(phases),
        faults=tuple(faults),
        rss=(),
        restarts=(),
        settle_s=1.0,
    )


def _two_messages_each() -> tuple[list[Offered], list[StoredMessage], list[Turn]]:
    offered = [
        _acked("SMa1", ANA, 0.0),
        _acked("SMb1", BIA, 0.5),
        _acked("SMa2", ANA, 1.0),
        _acked("SMb2", BIA, 1.5),
    ]
    messages = [StoredMessage(i, m.sid) for i, m in enumerate(offered, start=1)]
    turns = [_turn(1, ANA), _turn(2, BIA), _turn(3, ANA), _turn(4, BIA)]
    return offered, messages, turns


def _answered_in_order() -> list[Create]:
    """Each of `_two_messages_each`'s messages answered once, in order."""
    return [
        _reply(2.0, ANA, "SMa1", 1),
        _reply(2.1, BIA, "SMb1", 2),
        _reply(3.0, ANA, "SMa2", 3),
        _reply(3.1, BIA, "SMb2", 4),
    ]


def test_a_clean_run_passes_every_check() -> None:
    offered, messages, turns = _two_messages_each()
    creates = _answered_in_order()
    checks = check(_recorded(offered, creates, messages=messages, turns=turns))
    assert checks.failures() == {}
    assert (checks.offered, checks.acknowledged, checks.creates) == (4, 4, 4)
    assert checks.unmatched_creates == 0


def test_a_reply_sent_twice_is_answered_twice_and_its_unrecorded_send_is_counted() -> None:
    offered, messages, turns = _two_messages_each()
    creates = [
        *_answered_in_order(),
        # The same reply again, after a crash lost the record of the first send.
        _reply(9.0, BIA, "SMb2", 4, sent_as="SMagain"),
    ]
    outbound = [Outbound(c.sid, i, 0) for i, c in enumerate(creates[:4], start=1)]
    checks = check(_recorded(offered, creates, messages=messages, turns=turns, outbound=outbound))
    assert checks.failures() == {"answered_twice": 1, "unrecorded_sends": 1}


def test_replies_reaching_twilio_out_of_the_stored_order_are_inversions() -> None:
    offered, messages, turns = _two_messages_each()
    creates = [
        _reply(2.0, ANA, "SMa2", 3),  # Ana's second message answered first
        _reply(2.1, BIA, "SMb1", 2),
        _reply(3.0, ANA, "SMa1", 1),
        _reply(3.1, BIA, "SMb2", 4),
    ]
    checks = check(_recorded(offered, creates, messages=messages, turns=turns))
    assert checks.failures() == {"order_inversions": 1}


def test_lost_duplicated_pending_and_unanswered_messages_are_counted() -> None:
    offered = [
        _acked("SMa1", ANA, 0.0),
        _acked("SMa2", ANA, 1.0),  # acknowledged, kept nowhere
        _acked("SMa3", ANA, 2.0),  # still in the inbox, set aside
        _acked("SMb1", BIA, 0.5),  # stored twice
        _acked("SMb2", BIA, 1.5),  # its turn still pending
    ]
    messages = [
        StoredMessage(1, "SMa1"),
        StoredMessage(2, "SMb1"),
        StoredMessage(3, "SMb1"),
        StoredMessage(4, "SMb2"),
    ]
    turns = [_turn(1, ANA), _turn(2, BIA), _turn(3, BIA), _turn(4, BIA, "pending")]
    creates = [_reply(2.0, ANA, "SMa1", 1), _reply(2.1, BIA, "SMb1", 2)]
    recorded = _recorded(
        offered,
        creates,
        messages=messages,
        turns=turns,
        inbox=[InboxRow("SMa3", set_aside=True)],
    )
    checks = check(recorded)
    assert checks.failures() == {
        "lost": 1,
        "duplicated": 1,
        "unanswered": 1,
        "pending_turns": 1,
    }
    assert (checks.inbox_left, checks.set_aside) == (1, 1)


def test_a_batched_turn_is_answered_by_a_later_reply_of_its_conversation() -> None:
    offered, messages, turns = _two_messages_each()
    turns[0] = _turn(1, ANA, "batched")  # answered together with Ana's second message
    creates = [
        _reply(2.1, BIA, "SMb1", 2),
        _reply(3.0, ANA, "SMa2", 3),
        _reply(3.1, BIA, "SMb2", 4),
    ]
    assert check(_recorded(offered, creates, messages=messages, turns=turns)).failures() == {}
    # Without the later reply nothing answered it.
    unanswered = check(_recorded(offered, creates[::2], messages=messages, turns=turns))
    assert unanswered.failures() == {"unanswered": 2}


def test_a_reply_quoting_nothing_is_tied_to_its_message_by_the_callback_reference() -> None:
    offered, messages, turns = _two_messages_each()
    fallback = Create(2.0, f"whatsapp:{ANA}", "Sorry, try again.", f"{CALLBACK}?reply=1.9.0", "SMx")
    recorded_only = Create(2.1, f"whatsapp:{BIA}", "Sorry, try again.", CALLBACK, "SMy")
    creates = [
        fallback,
        recorded_only,  # tied by its recorded send
        _reply(3.0, ANA, "SMa2", 3),
        _reply(3.1, BIA, "SMb2", 4),
        Create(4.0, f"whatsapp:{BIA}", "Hello?", CALLBACK, "SMz"),  # tied to nothing
    ]
    outbound = [Outbound("SMx", 1, 0), Outbound("SMy", 2, 0), Outbound("SMout3", 3, 0),
                Outbound("SMout4", 4, 0), Outbound("SMz", None, 0)]  # fmt: skip
    checks = check(_recorded(offered, creates, messages=messages, turns=turns, outbound=outbound))
    assert checks.failures() == {}
    assert checks.unmatched_creates == 1


def test_the_timeline_counts_errors_latencies_and_recovery_per_fault() -> None:
    offered = [
        _acked("SMa1", ANA, 0.0),
        _acked("SMb1", BIA, 10.0, 10.0, 11.0, 13.0),  # refused while the gateway restarts
        _acked("SMa2", ANA, 12.0, 12.0),
    ]
    # One of SMb1's failures was answered 503 by the gateway still running.
    first, *rest = offered[1].attempts
    offered[1] = replace(offered[1], attempts=(Attempt(first.started, first.finished, 503), *rest))
    messages = [StoredMessage(1, "SMa1"), StoredMessage(2, "SMb1"), StoredMessage(3, "SMa2")]
    turns = [_turn(1, ANA), _turn(2, BIA), _turn(3, ANA)]
    creates = [
        _reply(0.4, ANA, "SMa1", 1),
        _reply(14.0, BIA, "SMb1", 2),
        _reply(15.0, ANA, "SMa2", 3),
    ]
    phases = [Phase("soak", 0.0, 10.0), Phase("gateway-kill", 10.0, 20.0)]
    faults = [Fault("gateway-kill", 10.0, 10.0)]
    recorded = _recorded(
        offered, creates, messages=messages, turns=turns, phases=phases, faults=faults
    )
    recorded = Recorded(**{**_fields(recorded), "restarts": (Restart(10.5, "serve", 1),)})
    soak, fault_phase = timeline(recorded).phases
    assert (soak.due, soak.attempts, soak.errors) == (1, 1, 0)
    assert soak.latencies_ms == pytest.approx((300.0,))
    assert (fault_phase.due, fault_phase.attempts, fault_phase.errors) == (2, 6, 4)
    # SMb1 acknowledged at 13.6, answered at 14.0; SMa2 at 12.6, answered at 15.0.
    assert fault_phase.latencies_ms == pytest.approx((400.0, 2400.0))
    assert fault_phase.ack_ms == pytest.approx((600.0, 3600.0))  # from due, retries included
    [fault] = timeline(recorded).faults
    assert (fault.errors, fault.refused) == (4, 1)  # three got no answer at all
    assert fault.webhooks_recovered_s == pytest.approx(3.6)  # the 200 after the last refusal
    assert fault.replies_recovered_s == pytest.approx(4.0)  # SMb1, due at the fault, answered
    assert fault.restarts == 1


def test_each_offence_is_placed_in_the_phase_it_showed_in() -> None:
    offered, messages, turns = _two_messages_each()
    turns[3] = _turn(4, BIA, "pending")
    creates = [
        _reply(2.0, ANA, "SMa1", 1),
        _reply(2.1, BIA, "SMb1", 2),
        _reply(3.0, ANA, "SMa2", 3),
        _reply(12.0, ANA, "SMa2", 3, sent_as="SMagain"),  # again, under the fault
    ]
    phases = [Phase("soak", 0.0, 10.0), Phase("redis-stop", 10.0, 20.0)]
    outbound = [Outbound(c.sid, i, 0) for i, c in enumerate(creates[:3], start=1)]
    recorded = _recorded(
        offered, creates, messages=messages, turns=turns, outbound=outbound, phases=phases
    )
    assert where(findings(recorded), recorded) == (
        Where("pending_turns", "soak", "turn pending, delivery None", 1),
        Where("unanswered", "soak", "turn pending, delivery None", 1),
        Where("answered_twice", "redis-stop", "", 1),
        Where("unrecorded_sends", "redis-stop", "", 1),
    )


def test_a_status_callback_is_refused_without_an_answer_or_a_2xx() -> None:
    recorded = _recorded([], [])
    recorded = Recorded(**{**_fields(recorded), "callbacks": (204, 200, 503, None, 403)})
    assert recorded.callbacks_refused == 3


def _fields(recorded: Recorded) -> dict[str, object]:
    return {name: getattr(recorded, name) for name in Recorded.__dataclass_fields__}


def test_memory_growth_is_the_least_squares_slope_over_the_soak() -> None:
    assert slope_mb_per_min([(0.0, 100.0), (30.0, 101.0), (60.0, 102.0)]) == pytest.approx(2.0)
    assert slope_mb_per_min([(0.0, 100.0)]) is None
    samples = [
        RssSample(t, "background-1", 100.0 + (t if t < 30 else 30)) for t in range(0, 91, 10)
    ]
    soak = Phase("soak", 0.0, 91.0)
    [figures] = memory(samples, soak)
    assert (figures.first_mb, figures.last_mb, figures.peak_mb) == (100.0, 130.0, 130.0)
    assert figures.soak_slope is not None and figures.soak_slope > 0
    assert figures.soak_tail_slope == pytest.approx(0.0)  # flat after the first third


def test_the_serve_log_names_the_children_by_role() -> None:
    log = "\n".join(
        (
            '{"event": "gateway process started", "pid": 7}',
            "not json relaydesk listening",
            '{"event": "relaydesk listening", "pids": [12, 13], "background_pids": [10, 11]}',
        )
    )
    assert serve_roles(log) == {
        "gateway-1": 12,
        "gateway-2": 13,
        "background-1": 10,
        "background-2": 11,
    }
    assert serve_roles('{"event": "gateway process started", "pid": 7}') == {}


def test_children_replaced_by_serve_are_followed_and_their_restarts_timed() -> None:
    roles = {"gateway-1": 12, "background-1": 10}
    children = ServeChildren(roles)
    died = (
        '{"event": "child process died; another takes its place", "child": "background 1", '
        '"pid": 10, "signal": "SIGKILL"}'
    )
    assert children.feed(died, 100.0) is None
    assert "background-1" not in roles  # no pid to fault until its replacement runs
    again = '{"event": "child process started again", "child": "background 1", "pid": 21}'
    assert children.feed(again, 100.2) is None
    assert roles == {"gateway-1": 12, "background-1": 21}
    assert children.feed('{"event": "background process started", "pid": 99}', 100.4) is None
    restart = children.feed('{"event": "background process started", "pid": 21}', 101.5)
    assert restart is not None
    assert (restart.process, restart.exit_code, restart.at) == ("serve background 1", -9, 100.0)
    assert restart.ready_after_s == pytest.approx(1.5)
    assert children.feed("not json", 102.0) is None


def test_the_options_refuse_unknown_or_repeated_faults() -> None:
    with pytest.raises(ValueError, match="unknown faults"):
        ChaosOptions(faults=("redis-stop", "disk-full"))
    with pytest.raises(ValueError, match="at most once"):
        ChaosOptions(faults=("redis-stop", "redis-stop"))
    with pytest.raises(ValueError, match="model latency"):
        ChaosOptions(model_latency_s=-1)
    assert main(["bench", "chaos", "--faults", "disk-full"]) == 2
