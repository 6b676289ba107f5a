"""Voice notes: a Twilio audio message is fetched with the account's credentials and
transcribed through a local server speaking the OpenAI transcription API; the transcript is
stored as a new version with its confidence. Offline, the note stays marked as not
transcribed and the reply says what it got."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from sqlalchemy import select
from twilio.request_validator import RequestValidator

from gateway.storage.models import Fact, Message
from tests.support.fixtures import FIXTURES
from tests.support.stack import Stack, running_stack
from tests.support.twilio_server import FakeTwilio

TOKEN = "twilio-auth-token-for-tests"
SID = "AC" + "b" * 32
AUDIO = b"OggS\x00fake-opus-audio"


class VoiceServices:
    """Twilio's media host and an OpenAI-compatible transcription endpoint, on one server."""

    def __init__(self) -> None:
        self.media_requests: list[str | None] = []
        self.transcriptions: list[dict[str, str]] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/media/{name}", self.media)
        app.router.add_post("/v1/audio/transcriptions", self.transcribe)
        return app

    async def media(self, request: web.Request) -> web.Response:
        self.media_requests.append(request.headers.get("Authorization"))
        expected = "Basic " + base64.b64encode(f"{SID}:{TOKEN}".encode()).decode()
        if request.headers.get("Authorization") != expected:
            return web.Response(status=401)
        return web.Response(body=AUDIO, content_type="audio/ogg")

    async def transcribe(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form["file"]
        assert isinstance(upload, web.FileField)
        assert upload.file.read() == AUDIO
        self.transcriptions.append({k: str(v) for k, v in form.items() if k != "file"})
        return web.json_response(
            {
                "task": "transcribe",
                "language": "portuguese",
                "duration": 3.2,
                "text": "Quero saber do pedido 4471",
                # Segment words with probabilities, as faster-whisper based servers send them.
                "segments": [
                    {
                        "id": 0,
                        "seek": 0,
                        "start": 0.0,
                        "end": 3.2,
                        "text": " Quero saber do pedido 4471",
                        "tokens": [1, 2],
                        "temperature": 0.0,
                        "avg_logprob": -0.25,
                        "compression_ratio": 1.1,
                        "no_speech_prob": 0.01,
                        "words": [
                            {"word": " Quero", "start": 0.0, "end": 0.4, "probability": 0.98},
                            {"word": " saber", "start": 0.4, "end": 0.8, "probability": 0.97},
                            {"word": " do", "start": 0.8, "end": 0.9, "probability": 0.95},
                            {"word": " pedido", "start": 0.9, "end": 1.5, "probability": 0.96},
                            {"word": " 4471", "start": 1.5, "end": 2.4, "probability": 0.41},
                        ],
                    }
                ],
            }
        )


@pytest.fixture
async def services():  # type: ignore[no-untyped-def]
    voice, twilio = VoiceServices(), FakeTwilio()
    servers = [TestServer(voice.app()), TestServer(twilio.app())]
    for server in servers:
        await server.start_server()
    yield (
        voice,
        twilio,
        str(servers[0].make_url("")).rstrip("/"),
        str(servers[1].make_url("")).rstrip("/"),
    )
    for server in servers:
        await server.close()


def _voice_webhook_body(media_url: str) -> dict[str, str]:
    raw = (FIXTURES / "twilio_whatsapp" / "inbound_image.form.txt").read_text()
    params = dict(parse_qsl(raw, keep_blank_values=True))
    params["MediaContentType0"] = "audio/ogg"
    params["MediaUrl0"] = media_url
    return params


async def _deliver(stack: Stack, params: dict[str, str]) -> None:
    url = "https://relay.example.org/webhooks/twilio/whatsapp"
    signature = RequestValidator(TOKEN).compute_signature(url, params)
    response = await stack.client.post(
        "/webhooks/twilio/whatsapp",
        data=urlencode(params).encode(),
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Twilio-Signature": signature,
        },
    )
    assert response.status == 200


def _settings(twilio_base: str, **more: object) -> dict[str, object]:
    return {
        "TWILIO_ACCOUNT_SID": SID,
        "TWILIO_AUTH_TOKEN": TOKEN,
        "TWILIO_WHATSAPP_FROM": "whatsapp:+14155238886",
        "TWILIO_API_BASE": twilio_base,
        "RELAYDESK_PUBLIC_URL": "https://relay.example.org",
        **more,
    }


async def test_voice_note_is_transcribed_and_stored_with_its_confidence(
    tmp_path: Path, services
) -> None:  # type: ignore[no-untyped-def]
    voice, twilio, voice_base, twilio_base = services
    settings = _settings(
        twilio_base,
        RELAYDESK_TRANSCRIBER_MODEL="whisper-1",
        RELAYDESK_TRANSCRIBER_BASE_URL=f"{voice_base}/v1",
        # The media host is on loopback: listed as a host of the deployment's own.
        RELAYDESK_FETCH_ALLOW="127.0.0.1",
    )
    async with running_stack("embedded", tmp_path, **settings) as stack:
        await _deliver(stack, _voice_webhook_body(f"{voice_base}/media/voice.ogg"))
        await stack.idle()
        async with stack.sessions()() as session:
            rows = list(await session.scalars(select(Message).order_by(Message.id)))
            stored_facts = list(await session.scalars(select(Fact)))
    placeholder, transcript, reply = rows
    assert placeholder.text == "[voice note, not transcribed]"
    assert transcript.supersedes_id == placeholder.id
    assert transcript.text == "Quero saber do pedido 4471?"  # the doubtful number is marked
    assert transcript.transcript_confidence is not None
    assert 0.4 < transcript.transcript_confidence < 1.0
    assert transcript.words is not None and len(transcript.words["words"]) == 5
    [request] = voice.transcriptions
    assert (request["model"], request["response_format"]) == ("whisper-1", "verbose_json")
    assert voice.media_requests and voice.media_requests[0] is not None
    assert "Quero saber do pedido 4471?" in reply.text
    assert "Quero saber do pedido 4471?" in twilio.created[0]["Body"]
    # The order heard in the note is a fact of the transcript: unconfirmed, and no surer than
    # the words it was heard in.
    [order] = stored_facts
    assert (order.key, order.value, order.source_message_id) == ("order_id", "4471", transcript.id)
    assert order.confirmed is False
    assert order.confidence <= transcript.transcript_confidence


async def test_offline_the_note_is_kept_and_the_window_says_so(tmp_path: Path, services) -> None:  # type: ignore[no-untyped-def]
    voice, twilio, voice_base, twilio_base = services
    async with running_stack("embedded", tmp_path, **_settings(twilio_base)) as stack:
        await _deliver(stack, _voice_webhook_body(f"{voice_base}/media/voice.ogg"))
        await stack.idle()
        async with stack.sessions()() as session:
            rows = list(await session.scalars(select(Message).order_by(Message.id)))
    note, reply = rows
    assert note.text == "[voice note, not transcribed]"
    assert note.media["items"][0]["url"].endswith("/media/voice.ogg")
    assert "[voice note, not transcribed]" in reply.text
    assert voice.transcriptions == [] and voice.media_requests == []
