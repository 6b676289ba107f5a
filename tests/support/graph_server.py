"""A local server speaking the part of Meta's Graph API the WhatsApp Cloud API uses, for tests
that drive the real httpx client against it.

- `POST /{phone-number-id}/messages`: a message (answered with its wamid), or a read receipt /
  typing indicator (`"status": "read"`, answered `{"success": true}`);
- `POST /{phone-number-id}/media`: a multipart upload, answered with a media id;
- `GET /{media-id}`: a media object with the URL it is downloaded from, `GET /download/{id}`;
- `GET /files/{name}`: files a test serves for the gateway to upload (`serve_file`).

Every request is recorded (`requests`) with its path, headers and JSON or multipart body.
Graph calls need `Authorization: Bearer <token>` (a 401 with code 190 otherwise). A test
scripts failures with `fail_next` (e.g. error 131047, outside the 24-hour window).
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, web

from devtools.loopback import serving_on_loopback

ACCESS_TOKEN = "graph-access-token-for-tests"
PHONE_NUMBER_ID = "106540352242922"


@dataclass(frozen=True)
class Upload:
    filename: str | None
    content_type: str | None
    data: bytes


@dataclass(frozen=True)
class GraphRequest:
    method: str
    path: str
    headers: dict[str, str]
    json: Any = None
    form: dict[str, str] = field(default_factory=dict)
    files: dict[str, Upload] = field(default_factory=dict)


@dataclass(frozen=True)
class _Failure:
    kind: str  # "messages", "media", "typing" or "any"
    status: int
    body: dict[str, Any]


@dataclass
class LocalGraph:
    token: str = ACCESS_TOKEN
    requests: list[GraphRequest] = field(default_factory=list)  # every one, refused included
    accepted: list[GraphRequest] = field(default_factory=list)  # the ones answered with success
    message_ids: list[str] = field(default_factory=list)  # the wamids given to messages sent
    media: dict[str, tuple[bytes, str]] = field(default_factory=dict)  # received media by id
    files: dict[str, tuple[bytes, str]] = field(default_factory=dict)  # served for uploads
    root: str = ""
    _failures: deque[_Failure] = field(default_factory=deque)

    # What a test arranges

    def fail_next(
        self,
        code: int,
        message: str = "Graph error",
        *,
        status: int = 400,
        kind: str = "messages",
        subcode: int | None = None,
        error_type: str = "OAuthException",
    ) -> None:
        """The next request of `kind` ("messages", "media", "typing" or "any") is answered
        with this Graph error (`{"error": {"message", "type", "code", "error_subcode",
        "fbtrace_id"}}`)."""
        error: dict[str, Any] = {
            "message": message,
            "type": error_type,
            "code": code,
            "fbtrace_id": "A" + uuid.uuid4().hex[:20],
        }
        if subcode is not None:
            error["error_subcode"] = subcode
        self._failures.append(_Failure(kind, status, {"error": error}))

    def serve_file(self, name: str, data: bytes, content_type: str) -> str:
        """Serve `data` at `/files/{name}`; returns its URL (once `serving`)."""
        self.files[name] = (data, content_type)
        return f"{self.root}/files/{name}"

    # What a test reads

    def sent(self) -> list[dict[str, Any]]:
        """The JSON bodies of the messages accepted (not receipts), in order."""
        return [
            r.json
            for r in self.accepted
            if r.path.endswith("/messages") and r.json.get("status") != "read"
        ]

    def typing(self) -> list[dict[str, Any]]:
        """The JSON bodies of every read receipt / typing indicator request, in order."""
        return [r.json for r in self.requests if _kind(r) == "typing"]

    def uploads(self) -> list[GraphRequest]:
        return [r for r in self.accepted if r.path.endswith("/media")]

    # The server

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/{version}/{number}/messages", self._messages)
        app.router.add_post("/{version}/{number}/media", self._upload)
        app.router.add_get("/{version}/{media_id:[0-9]+}", self._media_object)
        app.router.add_get("/download/{media_id}", self._download)
        app.router.add_get("/files/{name}", self._file)
        return app

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """`app` on a free loopback port; yields the API base (for `WHATSAPP_CLOUD_API_BASE`)."""
        async with serving_on_loopback(self.app()) as root:
            self.root = root
            yield f"{root}/v21.0"

    async def _record(self, request: web.Request) -> GraphRequest:
        headers = dict(request.headers)
        if request.content_type == "application/json":
            recorded = GraphRequest(
                request.method, request.path, headers, json=await request.json()
            )
        elif request.content_type == "multipart/form-data":
            form: dict[str, str] = {}
            files: dict[str, Upload] = {}
            reader = await request.multipart()
            async for part in reader:
                if not isinstance(part, BodyPartReader) or part.name is None:
                    continue
                if part.filename is not None:
                    data = bytes(await part.read(decode=False))
                    ctype = part.headers.get("Content-Type")
                    files[part.name] = Upload(part.filename, ctype, data)
                else:
                    form[part.name] = await part.text()
            recorded = GraphRequest(request.method, request.path, headers, form=form, files=files)
        else:
            recorded = GraphRequest(request.method, request.path, headers)
        self.requests.append(recorded)
        return recorded

    def _refusal(self, recorded: GraphRequest) -> web.Response | None:
        if recorded.headers.get("Authorization") != f"Bearer {self.token}":
            return _error(401, 190, "Invalid OAuth access token.")
        kind = _kind(recorded)
        if self._failures and self._failures[0].kind in {kind, "any"}:
            failure = self._failures.popleft()
            return web.json_response(failure.body, status=failure.status)
        self.accepted.append(recorded)
        return None

    async def _messages(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        refused = self._refusal(recorded)
        if refused is not None:
            return refused
        body = recorded.json if isinstance(recorded.json, dict) else {}
        if body.get("messaging_product") != "whatsapp":
            return _error(400, 100, "The parameter messaging_product is required.")
        if body.get("status") == "read":
            if not str(body.get("message_id", "")).startswith("wamid."):
                return _error(400, 100, "Invalid parameter message_id")
            return web.json_response({"success": True})
        to = str(body.get("to", ""))
        wamid = "wamid." + uuid.uuid4().hex
        self.message_ids.append(wamid)
        return web.json_response(
            {
                "messaging_product": "whatsapp",
                "contacts": [{"input": to, "wa_id": to}],
                "messages": [{"id": wamid}],
            }
        )

    async def _upload(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        refused = self._refusal(recorded)
        if refused is not None:
            return refused
        if recorded.form.get("messaging_product") != "whatsapp" or "file" not in recorded.files:
            return _error(400, 100, "messaging_product and file are required")
        media_id = str(uuid.uuid4().int % 10**16)
        upload = recorded.files["file"]
        self.media[media_id] = (upload.data, upload.content_type or "application/octet-stream")
        return web.json_response({"id": media_id})

    async def _media_object(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        refused = self._refusal(recorded)
        if refused is not None:
            return refused
        media_id = request.match_info["media_id"]
        if media_id not in self.media:
            return _error(404, 100, "Unsupported get request.", status_subcode=33)
        data, content_type = self.media[media_id]
        return web.json_response(
            {
                "messaging_product": "whatsapp",
                "url": f"{self.root}/download/{media_id}",
                "mime_type": content_type,
                "file_size": len(data),
                "id": media_id,
            }
        )

    async def _download(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        if recorded.headers.get("Authorization") != f"Bearer {self.token}":
            return web.Response(status=401)
        data, content_type = self.media[request.match_info["media_id"]]
        return web.Response(body=data, content_type=content_type.split(";")[0])

    async def _file(self, request: web.Request) -> web.Response:
        await self._record(request)
        found = self.files.get(request.match_info["name"])
        if found is None:
            return web.Response(status=404)
        return web.Response(body=found[0], content_type=found[1])


def _kind(recorded: GraphRequest) -> str:
    if recorded.path.endswith("/media"):
        return "media"
    if recorded.path.endswith("/messages"):
        body = recorded.json if isinstance(recorded.json, dict) else {}
        return "typing" if body.get("status") == "read" else "messages"
    return "other"


def _error(
    status: int, code: int, message: str, *, status_subcode: int | None = None
) -> web.Response:
    error: dict[str, Any] = {"message": message, "type": "OAuthException", "code": code}
    if status_subcode is not None:
        error["error_subcode"] = status_subcode
    error["fbtrace_id"] = "A" + uuid.uuid4().hex[:20]
    return web.json_response({"error": error}, status=status)
