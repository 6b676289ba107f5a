"""Web chat input the way `/webchat/ws` and `POST /webchat/messages` read it: a JSON frame
(hello or message) or a REST body. A message, the errors the socket answers with an error
frame (`PayloadInvalid`, invalid JSON, `BadRequest`), or a crash.

    .venv/bin/python fuzz/webchat_frames.py -runs=100000
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import atheris
from seeds import WEBCHAT
from structured import document, run  # first: puts the repository on sys.path

with atheris.instrument_imports(include=["channels", "gateway.webchat.frames"]):
    from channels.base import PayloadInvalid, RawRequest
    from channels.webchat import WebChatChannel, message_from
    from gateway.http.errors import BadRequest
    from gateway.webchat.frames import check_storable, read_frame, read_hello


NOW = datetime(2026, 11, 29, tzinfo=UTC)
KEYS = ["type", "hello", "message", "visitor_id", "identity_token", "after", "text",
        "client_message_id", "v1sitor-0123456789", "m-1", "null", "42"]  # fmt: skip
SOCKET_ERRORS = (PayloadInvalid, json.JSONDecodeError, BadRequest)


async def _deliver(_: object) -> None:
    return None


CHANNEL = WebChatChannel(_deliver, lambda: NOW)


def frame_of(fdp: atheris.FuzzedDataProvider) -> str:
    if fdp.ConsumeIntInRange(0, 3) == 0:
        return fdp.ConsumeUnicode(fdp.remaining_bytes())
    return json.dumps(document(fdp, WEBCHAT, KEYS))


def test(data: bytes) -> None:
    text = frame_of(atheris.FuzzedDataProvider(data))
    try:
        frame = read_frame(text)
        if frame.get("type") == "hello":
            read_hello(frame)
        else:
            message = message_from(
                frame, visitor_id="v1sitor-0123456789", token=None, received_at=NOW
            )
            check_storable(message.text)
    except SOCKET_ERRORS:
        pass
    body = text.encode("utf-8", "surrogatepass")
    try:
        CHANNEL.parse(RawRequest("POST", "https://example.test/webchat/messages", {}, body))
    except (PayloadInvalid, ValueError, RecursionError):
        # The REST route turns the last two into PayloadInvalid (gateway/webchat/routes.py).
        pass


if __name__ == "__main__":
    run(test)
