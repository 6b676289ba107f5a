"""One transcript format (named on the command line) through `parse_transcript`: a transcript,
`PayloadInvalid`, or a crash. One harness per format, e.g.

    .venv/bin/python fuzz/transcripts.py whisper -runs=100000
"""

from __future__ import annotations

import importlib
import sys

import atheris
from seeds import TRANSCRIPTS
from structured import document, keys_of, run  # first: puts the repository on sys.path

with atheris.instrument_imports(include=["channels"]):
    from channels.base import PayloadInvalid
    from channels.transcripts import FORMATS, parse_transcript


FORMAT = sys.argv.pop(1) if len(sys.argv) > 1 and sys.argv[1] in FORMATS else ""
if not FORMAT:
    sys.exit(f"usage: transcripts.py {{{'|'.join(FORMATS)}}} [libFuzzer flags]")
KEYS = keys_of(
    importlib.import_module(f"channels.transcripts.{FORMAT}"),
    importlib.import_module("channels.transcripts._read"),
)


def test(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    speaker = fdp.PickValueInList([None, "customer", "agent", "A", "spk_0", "ch_1", "0", "x"])
    payload = document(fdp, TRANSCRIPTS[FORMAT], KEYS)
    if not isinstance(payload, dict):
        payload = {fdp.PickValueInList(KEYS): payload}
    try:
        parsed = parse_transcript(FORMAT, payload, customer_speaker=speaker)
    except PayloadInvalid:
        return
    assert all(segment.speaker in ("customer", "agent") for segment in parsed.segments)
    assert parsed.customer_confidence is None or 0.0 <= parsed.customer_confidence <= 1.0


if __name__ == "__main__":
    run(test)
