"""Small valid inputs for each parser: the harnesses mutate these, so most cases reach the
parsing behind the first "is it an object" checks."""

from __future__ import annotations

from typing import Any

_USER = {"id": 4242, "is_bot": False, "first_name": "Ana"}
_CHAT = {"id": 4242, "type": "private"}
_MESSAGE = {"message_id": 7, "date": 1764400000, "chat": _CHAT, "from": _USER, "text": "oi"}

TELEGRAM: list[dict[str, Any]] = [
    {"update_id": 1, "message": _MESSAGE},
    {"update_id": 2, "edited_message": {**_MESSAGE, "edit_date": 1764400100}},
    {"update_id": 3, "message": {**_MESSAGE, "text": None, "voice": {
        "file_id": "v1", "file_unique_id": "u1", "duration": 3, "mime_type": "audio/ogg"}}},
    {"update_id": 4, "message": {**_MESSAGE, "text": None, "contact": {
        "phone_number": "+5511998765432", "first_name": "Ana", "user_id": 4242}}},
    {"update_id": 5, "message": {**_MESSAGE, "text": None, "caption": "foto", "photo": [
        {"file_id": "p1", "file_unique_id": "q1", "width": 90, "height": 90}]}},
    {"update_id": 6, "message": {**_MESSAGE, "text": None, "location": {
        "latitude": -23.5, "longitude": -46.6}}},
    {"update_id": 7, "callback_query": {"id": "c1", "from": _USER, "chat_instance": "i",
                                        "data": "yes", "message": _MESSAGE}},
]  # fmt: skip

_WORDS = [
    {"word": "meu", "start": 0.1, "end": 0.3, "confidence": 0.9, "speaker": 0},
    {"word": "pedido", "start": 0.3, "end": 0.7, "confidence": 0.6, "speaker": 1},
]

TRANSCRIPTS: dict[str, list[dict[str, Any]]] = {
    "native": [{"language": "pt", "segments": [
        {"speaker": "agent", "text": "Olá", "start": 0.0, "end": 1.0, "confidence": 0.9},
        {"speaker": "customer", "text": "meu pedido 4471", "start": 1.0, "end": 2.5,
         "confidence": 0.7, "flags": ["x"], "words": [
             {"text": "4471", "confidence": 0.5, "start": 2.0, "end": 2.5}]},
    ]}],
    "aws_transcribe": [{"jobName": "j", "status": "COMPLETED", "results": {
        "transcripts": [{"transcript": "olá meu pedido"}],
        "speaker_labels": {"speakers": 2, "segments": [
            {"speaker_label": "spk_0", "start_time": "0.0", "end_time": "0.5", "items": [
                {"speaker_label": "spk_0", "start_time": "0.0", "end_time": "0.5"}]}]},
        "items": [
            {"type": "pronunciation", "start_time": "0.0", "end_time": "0.5",
             "speaker_label": "spk_0", "alternatives": [{"content": "olá", "confidence": "0.9"}]},
            {"type": "punctuation", "alternatives": [{"content": ",", "confidence": "0.0"}]},
            {"type": "pronunciation", "start_time": "0.6", "end_time": "0.9",
             "speaker_label": "spk_1", "alternatives": [{"content": "pedido",
                                                          "confidence": "0.4"}]},
        ]}}],
    "deepgram": [{"metadata": {"channels": 1}, "results": {
        "channels": [{"alternatives": [{"transcript": "meu pedido", "confidence": 0.8,
                                         "words": _WORDS}]}],
        "utterances": [{"start": 0.1, "end": 0.7, "confidence": 0.8, "channel": 0,
                        "speaker": 0, "transcript": "meu pedido", "words": _WORDS}]}}],
    "whisper": [{"text": "meu pedido", "language": "pt", "segments": [
        {"id": 0, "start": 0.0, "end": 1.2, "text": "meu pedido", "avg_logprob": -0.3,
         "no_speech_prob": 0.1, "compression_ratio": 1.2,
         "words": [{"word": "meu", "start": 0.0, "end": 0.4, "probability": 0.9}]}]}],
    "assemblyai": [{"status": "completed", "text": "meu pedido", "confidence": 0.8,
                    "words": [{"text": "meu", "start": 100, "end": 400, "confidence": 0.9,
                               "speaker": "A"}],
                    "utterances": [{"speaker": "A", "text": "meu pedido", "start": 100,
                                    "end": 900, "confidence": 0.8, "words": []}]}],
}  # fmt: skip

WEBCHAT: list[dict[str, Any]] = [
    {"type": "hello", "visitor_id": "v1sitor-0123456789", "identity_token": None, "after": "12"},
    {"type": "message", "text": "oi", "client_message_id": "m-1"},
    {"visitor_id": "v1sitor-0123456789", "text": "oi", "client_message_id": "m-1"},
]

IDENTITY_CLAIMS: list[dict[str, Any]] = [
    {"sub": "acct-1", "phone_number": "+55 11 98765-4321", "phone_number_verified": True,
     "email": "Ana@Example.com", "email_verified": True, "name": "Ana", "iat": 1764400000},
]  # fmt: skip
