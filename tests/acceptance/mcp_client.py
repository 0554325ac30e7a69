"""`distill mcp` as a client sees it: the MCP SDK's own client, talking to a real server
process over stdio (the client starts `python -m distill mcp`) or over streamable HTTP.

Every server runs on a temporary database with the hashing embedder and the scripted
`fake` LLM, in a clean environment (no `DISTILL_*` variable of the caller's leaks in).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

CHECKOUT = Path(__file__).resolve().parents[2]
CALL_TIMEOUT = 60  # seconds a tool call may take; each takes well under one here


def server_env(tmp_path: Path, db: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILL_")}
    env.update(
        DISTILL_DATABASE_URL=db,
        DISTILL_EMBEDDER="hashing",
        DISTILL_LLM="fake",
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "xdg"),
        NO_COLOR="1",
    )
    env.update(extra)
    return env


class Tools:
    """A connected client, with calls that say what a test expects of them."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, name: str, **arguments: Any) -> dict[str, Any]:
        """Call a tool that must succeed; its structured result."""
        result = await self.client.call_tool(name, arguments, read_timeout_seconds=CALL_TIMEOUT)
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert not result.is_error, f"{name}({arguments}) failed: {text}"
        assert result.structured_content is not None
        # The same result as text, for clients that read only the content.
        assert json.loads(text) == result.structured_content
        return result.structured_content

    async def error(self, name: str, **arguments: Any) -> str:
        """Call a tool that must fail as a tool error (not a protocol error); its message."""
        result = await self.client.call_tool(name, arguments, read_timeout_seconds=CALL_TIMEOUT)
        assert result.is_error, f"{name}({arguments}) succeeded: {result.structured_content}"
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert "Traceback" not in text
        return text


Scenario = Callable[[Tools], Awaitable[None]]


def over_stdio(
    tmp_path: Path,
    db: str,
    scenario: Scenario,
    *args: str,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run `scenario` against `python -m distill mcp ARGS` started by the SDK's client."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "distill", "mcp", *args],
        env=server_env(tmp_path, db, **(env or {})),
        cwd=str(CHECKOUT),
    )

    _run(Client(params), scenario)


def over_http(url: str, scenario: Scenario, headers: Mapping[str, str] | None = None) -> None:
    """Run `scenario` against a server already listening at `url`, every request sent with
    `headers` (an API key) as a client configured with them sends it."""
    failed: list[AssertionError] = []

    async def run() -> None:
        async with create_mcp_http_client(headers=dict(headers or {})) as http:
            client = Client(streamable_http_client(url, http_client=http))
            await _session(client, scenario, failed)

    anyio.run(run)
    if failed:
        raise failed[0]


def _run(client: Client, scenario: Scenario) -> None:
    """Run `scenario` on `client`; a failed assertion is raised as it is, not wrapped in
    the exception groups of the client's task groups."""
    failed: list[AssertionError] = []
    anyio.run(_session, client, scenario, failed)
    if failed:
        raise failed[0]


async def _session(client: Client, scenario: Scenario, failed: list[AssertionError]) -> None:
    async with client:
        try:
            await scenario(Tools(client))
        except AssertionError as exc:
            failed.append(exc)
