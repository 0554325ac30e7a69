"""The size of a request body, bounded before it is read whole.

`MAX_BODY_BYTES` fits the largest useful request, a batch of events (`MAX_BATCH_EVENTS` of
about a kilobyte, a chat history), and one event at its own limit (`EVENT_MAX_BYTES`, 256
KiB) four times over; a body past it is refused with 413 as soon as its `Content-Length`
says so, or, sent in chunks, at the chunk that passes the limit, so that a client cannot
make the server hold gigabytes. Both limits together bound the work of one request.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from distill.service.http.errors import ApiError, error_response
from distill.service.http.schemas import MAX_BATCH_EVENTS

MAX_BODY_BYTES = 1024 * 1024  # 1 MiB: see the module docstring


class BodyLimit:
    """Pure ASGI middleware: 413 for a body over `limit` bytes."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            if declared.isdigit():
                response = error_response(413, "payload_too_large", self._message())
            else:
                response = error_response(400, "bad_request", "Content-Length is not a number")
            await response(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:  # raised inside the body read: the handlers answer it
                    raise ApiError(413, "payload_too_large", self._message())
            return message

        await self.app(scope, counted, send)

    def _message(self) -> str:
        return (
            f"the body is over {self.limit:,} bytes; send events in batches of at most "
            f"{MAX_BATCH_EVENTS:,} and keep documents out of events (name them by reference "
            "in a claim)"
        )
