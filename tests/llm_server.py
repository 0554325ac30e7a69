"""A real HTTP server on 127.0.0.1 that speaks an LLM provider's wire protocol from a script.

Tests point the real SDK-backed providers at it, so requests go through the real client,
real sockets and real JSON. Each request is recorded (method, path, headers, JSON body); each
response is taken from the script in order (or the `default` when the script is empty):

    with ScriptedServer(default=openai_reply('{"facts": []}')) as server:
        server.script(Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}))
        llm = OpenAILLM("m", base_url=server.url + "/v1", retry=NO_WAIT)

A reply can also be a callable that receives the recorded request and returns a Reply, so a
scripted model can answer by what the prompt says: `Model(rule)` answers each message of an
extraction prompt with the facts `rule(text)` gives. `Held(reply)` keeps a request waiting
until the test releases it, and says when one arrived (a slow model, to kill or starve a run
while it waits). `SilentServer` accepts connections and never answers (a stuck provider).
An embeddings server computes its vectors from the texts it is sent (`openai_embeddings`,
`ollama_embeddings`); `routes` answers by path, so one server can serve
`/v1/chat/completions` and `/v1/embeddings` together.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or the raw text when it is not JSON


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None  # dict/list → JSON; str/bytes → sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (slow or hanging servers)
    content_type: str = "application/json"


Script = Reply | Callable[[Request], Reply]


class ScriptedServer:
    """`keep_alive=False` (the default) answers every request with `Connection: close`, so no
    client socket outlives its request: a test never depends on when another test's client
    is garbage-collected. Pass True to test what a client does with a kept-alive socket."""

    def __init__(self, default: Script | None = None, keep_alive: bool = False) -> None:
        self.keep_alive = keep_alive
        self.default = default or Reply(500, {"error": {"message": "nothing scripted"}})
        self.requests: list[Request] = []
        self._script: deque[Script] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def reset(self, default: Script | None = None) -> ScriptedServer:
        """Forget the recorded requests and the script, for the next test on this server."""
        with self._lock:
            self.requests.clear()
            self._script.clear()
            if default is not None:
                self.default = default
        return self

    def script(self, *replies: Script) -> ScriptedServer:
        with self._lock:
            self._script.extend(replies)
        return self

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            step = self._script.popleft() if self._script else self.default
        return step(request) if callable(step) else step

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: without this, Nagle's algorithm and the
            # client's delayed ACK add ~40 ms to every response.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8") if length else ""
                try:
                    body: Any = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    body = raw
                request = Request(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                )
                reply = server._next(request)
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body
                if isinstance(payload, dict | list):
                    data = json.dumps(payload).encode()
                elif isinstance(payload, str):
                    data = payload.encode()
                else:
                    data = payload or b""
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    if not server.keep_alive and "connection" not in {
                        k.lower() for k in reply.headers
                    }:
                        self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer

            do_GET = do_POST = _serve

        return Handler


def unused_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (for connection-refused tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RecordingSleep:
    """A `RetryPolicy.sleep` that records the waits instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


# -- replies in each provider's protocol ---------------------------------------------------------


def openai_reply(
    content: str,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    finish_reason: str = "stop",
    model: str = "test-model",
) -> Reply:
    """A `/v1/chat/completions` success, as OpenAI and compatible servers send it."""
    return Reply(
        200,
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
    )


def openai_error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status,
        {"error": {"message": message, "type": "invalid_request_error", "code": None}},
        headers or {},
    )


def ollama_reply(
    content: str,
    prompt_eval_count: int = 100,
    eval_count: int = 20,
    done_reason: str = "stop",
    model: str = "llama3.2",
) -> Reply:
    """An `/api/chat` success with `stream: false`."""
    answer = {"message": {"role": "assistant", "content": content}}
    return _ollama_done(answer, prompt_eval_count, eval_count, done_reason, model)


def ollama_generate_reply(
    content: str,
    prompt_eval_count: int = 100,
    eval_count: int = 20,
    done_reason: str = "stop",
    model: str = "llama3.2",
) -> Reply:
    """An `/api/generate` success with `stream: false`."""
    return _ollama_done({"response": content}, prompt_eval_count, eval_count, done_reason, model)


def _ollama_done(
    answer: dict[str, Any], prompt_eval_count: int, eval_count: int, done_reason: str, model: str
) -> Reply:
    """What both Ollama endpoints answer around their own `answer` field."""
    return Reply(
        200,
        {
            "model": model,
            "created_at": "2024-05-01T10:00:00.000000Z",
            **answer,
            "done": True,
            "done_reason": done_reason,
            "total_duration": 1_000_000,
            "prompt_eval_count": prompt_eval_count,
            "eval_count": eval_count,
        },
    )


def ollama_error(status: int, message: str) -> Reply:
    return Reply(status, {"error": message})


def anthropic_reply(
    tool_input: Any | None = None,
    text: str | None = None,
    input_tokens: int = 100,
    output_tokens: int = 20,
    stop_reason: str = "tool_use",
    model: str = "claude-test",
) -> Reply:
    """A `/v1/messages` success: a `record_facts` tool call, or a text block."""
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    if tool_input is not None:
        content.append(
            {"type": "tool_use", "id": "toolu_test", "name": "record_facts", "input": tool_input}
        )
    return Reply(
        200,
        {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        },
    )


def anthropic_error(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> Reply:
    return Reply(
        status, {"type": "error", "error": {"type": kind, "message": message}}, headers or {}
    )


# -- a scripted model that reads its prompt --------------------------------------------------------

_MESSAGE = re.compile(r"^\[(\d+)\] (\S+) from ([^\n]*)\n([^\n]*)", re.MULTILINE)
Rule = Callable[[str], list[dict[str, Any]]]


def prompt_of(request: Request) -> str:
    content = request.body["messages"][1]["content"]
    assert isinstance(content, str)
    return str(content)


def messages_in(request: Request) -> list[tuple[int, str]]:
    """The numbered messages a request shows the model: (number, text)."""
    return [(int(m.group(1)), m.group(4)) for m in _MESSAGE.finditer(prompt_of(request))]


class Model:
    """An OpenAI-compatible model as a callable script: for each message of the prompt it
    answers the facts `rule(text)` gives, numbered with that message. Every reply reports a
    different usage, recorded so tests can compare the run's accounting with it. `delay`
    seconds pass before each answer (a slow model)."""

    def __init__(self, rule: Rule, delay: float = 0.0) -> None:
        self.rule = rule
        self.delay = delay
        self.usage: list[tuple[int, int]] = []

    def __call__(self, request: Request) -> Reply:
        facts = [
            {"message": number, **fact}
            for number, text in messages_in(request)
            for fact in self.rule(text)
        ]
        usage = (200 + 13 * len(self.usage), 30 + 7 * len(self.usage))
        self.usage.append(usage)
        return replace(openai_reply(json.dumps({"facts": facts}), *usage), delay=self.delay)

    @property
    def prompt_tokens(self) -> int:
        return sum(p for p, _ in self.usage)

    @property
    def completion_tokens(self) -> int:
        return sum(c for _, c in self.usage)


def memory_of(text: str) -> list[dict[str, Any]]:
    """Every message is one free-text memory, quoted whole as its evidence."""
    return [{"kind": "memory", "text": text, "action": "create", "evidence_span": text}]


class Held:
    """A scripted reply that keeps its request waiting until `release()` (or `longest`
    seconds), then answers with `then`. `arrived` is set as soon as the request is in."""

    def __init__(self, then: Script, longest: float = 60.0) -> None:
        self.then = then
        self.longest = longest
        self.arrived = threading.Event()
        self.released = threading.Event()

    def __call__(self, request: Request) -> Reply:
        self.arrived.set()
        self.released.wait(self.longest)
        return self.then(request) if callable(self.then) else self.then

    def release(self) -> None:
        self.released.set()


class SilentServer:
    """A port on 127.0.0.1 that accepts connections (the kernel completes them, up to the
    backlog) and never reads nor answers: a provider that hangs. No thread involved."""

    def __init__(self, backlog: int = 64) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(backlog)

    @property
    def url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> SilentServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self._socket.close()


# -- embeddings ----------------------------------------------------------------------------------

Embed = Callable[[str], Sequence[float]]


def routes(table: dict[str, Script]) -> Callable[[Request], Reply]:
    """A script that answers by path (the query string ignored), 404 for any other path:
    one server can then speak chat and embeddings at once, as a real one does."""

    def answer(request: Request) -> Reply:
        step = table.get(request.path.split("?", 1)[0])
        if step is None:
            return Reply(404, {"error": {"message": f"no route {request.path}"}})
        return step(request) if callable(step) else step

    return answer


def _inputs(request: Request) -> list[str]:
    given = request.body.get("input") if isinstance(request.body, dict) else None
    return [given] if isinstance(given, str) else list(given or [])


def openai_embeddings(
    embed: Embed, reverse: bool = False, model: str = "test-embed"
) -> Callable[[Request], Reply]:
    """A `/v1/embeddings` server: one vector per input, computed by `embed`, with its
    `index`. `reverse` sends them last first, as a server may (the index says where each
    goes)."""

    def answer(request: Request) -> Reply:
        vectors = [list(map(float, embed(text))) for text in _inputs(request)]
        return openai_embedding_reply(vectors, reverse=reverse, model=model)

    return answer


def openai_embedding_reply(
    vectors: Sequence[Sequence[float]],
    reverse: bool = False,
    model: str = "test-embed",
    indices: Sequence[int | None] | None = None,
) -> Reply:
    """A `/v1/embeddings` success as OpenAI sends it (`encoding_format: float`)."""
    numbers = indices if indices is not None else range(len(vectors))
    numbered = list(zip(numbers, vectors, strict=True))
    if reverse:
        numbered.reverse()
    data = []
    for index, vector in numbered:
        item: dict[str, Any] = {"object": "embedding", "embedding": list(vector)}
        if index is not None:
            item["index"] = index
        data.append(item)
    return Reply(
        200,
        {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": 8 * len(vectors), "total_tokens": 8 * len(vectors)},
        },
    )


def ollama_embeddings(embed: Embed, model: str = "nomic-embed-text") -> Callable[[Request], Reply]:
    """An `/api/embed` server: one vector per input, in input order, as Ollama answers."""

    def answer(request: Request) -> Reply:
        return ollama_embed_reply([list(map(float, embed(t))) for t in _inputs(request)], model)

    return answer


def ollama_embed_reply(
    vectors: Sequence[Sequence[float]], model: str = "nomic-embed-text"
) -> Reply:
    """An `/api/embed` success."""
    return Reply(
        200,
        {
            "model": model,
            "embeddings": [list(v) for v in vectors],
            "total_duration": 1_000_000,
            "load_duration": 1_000,
            "prompt_eval_count": 8 * len(vectors),
        },
    )
