"""LoCoMo evaluation: the loader's quirks, a small end-to-end run, the real file's counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devtools.eval.locomo import LocomoDataMissing, data_path, load, split_ids
from devtools.eval.report import summarize
from devtools.eval.run import METHODS, evaluate, normalize

FILLER = [
    "I spent the weekend cleaning the garage and sorting old boxes of books.",
    "That sounds tiring, did you find anything interesting in there?",
    "Mostly old school notebooks and a broken lamp, nothing worth keeping.",
    "Ha, I know that feeling, my attic is full of things like that.",
]


def _session(number: int, lines: list[str]) -> list[dict[str, Any]]:
    return [
        {"speaker": "Ana" if i % 2 == 0 else "Bo", "dia_id": f"D{number}:{i + 1}", "text": text}
        for i, text in enumerate(lines)
    ]


def _sample() -> dict[str, Any]:
    conversation: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Bo"}
    first = [
        "Guess what, I adopted a greyhound called Biscuit from the shelter in Porto!",
        "Congratulations! How is Biscuit settling in?",
        *FILLER,
    ]
    conversation["session_1_date_time"] = "1:56 pm on 8 May, 2023"
    conversation["session_1"] = _session(1, first)
    for number in range(2, 7):
        conversation[f"session_{number}_date_time"] = f"10:00 am on {number} June, 2023"
        conversation[f"session_{number}"] = _session(number, FILLER)
    conversation["session_2"][1]["blip_caption"] = "a photo of a lamp"
    conversation["session_9_date_time"] = "9:00 am on 1 July, 2023"  # a date with no session
    return {
        "sample_id": "conv-x",
        "conversation": conversation,
        "qa": [
            {
                "question": "Which shelter did Ana adopt her greyhound from?",
                "answer": "Porto",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "When?",
                "answer": 2023,
                "evidence": ["D1:1; D2:2", "D:11:26"],
                "category": 2,
            },
            {"question": "Unanswerable?", "adversarial_answer": "x", "evidence": [], "category": 5},
            {"question": "Past the end?", "answer": "y", "evidence": ["D2:99", "D"], "category": 1},
        ],
    }


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_sample()]), encoding="utf-8")
    return path


def test_loader_handles_the_quirks(tmp_path: Path) -> None:
    (conversation,) = load(_write(tmp_path))
    assert [s.number for s in conversation.sessions] == [1, 2, 3, 4, 5, 6]
    assert conversation.sessions[0].started_at.isoformat() == "2023-05-08T13:56:00"
    assert conversation.sessions[1].turns[1].text.endswith("[image: a photo of a lamp]")
    questions = conversation.questions
    assert questions[1].answer == "2023"
    assert questions[1].evidence == ("D1:1", "D2:2")
    assert questions[2].answer is None and questions[2].evidence == ()
    assert questions[3].evidence == ()
    assert split_ids("D9:1 D4:4  D4:6") == ("D9:1", "D4:4", "D4:6")


def test_missing_data_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAYDESK_LOCOMO_PATH", str(tmp_path / "absent.json"))
    with pytest.raises(LocomoDataMissing, match="--data"):
        data_path()
    assert data_path(_write(tmp_path)).name == "locomo.json"


def test_normalize() -> None:
    assert normalize("The  Porto shelter!") == "porto shelter"


async def test_end_to_end_on_a_small_conversation(tmp_path: Path) -> None:
    conversations = load(_write(tmp_path))
    outcomes = await evaluate(conversations, window=8192)
    report = summarize(outcomes, split="dev", window=8192)
    line = json.loads(report.json_line())
    assert set(line) == {"split", "window", "overall", "by_category"}
    assert set(line["overall"]) == set(METHODS)
    for figures in line["overall"].values():
        assert set(figures) >= {
            "evidence_coverage",
            "answer_in_window",
            "tokens_median",
            "token_ratio_to_full",
        }
        assert 0.0 <= figures["evidence_coverage"] <= 1.0
    assert line["overall"]["full"]["evidence_coverage"] == 1.0
    assert set(line["by_category"]) == {"1", "2", "3", "4"}
    # The first question's evidence is the very first turn; recall brings it back.
    ours = [o for o in outcomes if o.method == "relaydesk" and o.category == 4]
    assert ours[0].covered is True and ours[0].answer_in_window is True
