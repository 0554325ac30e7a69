"""`distill mcp --transport http`: a real server on 127.0.0.1, driven by the MCP SDK's
streamable HTTP client; and the refusal to listen anywhere but on loopback."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from distill.service.mcp_command import loopback
from tests.acceptance.mcp_client import CHECKOUT, Tools, over_http, server_env
from tests.llm_server import unused_port
from tests.processes import Processes, wait_until

START_TIMEOUT = 30  # seconds for the server to listen; it takes about two


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_the_tools_over_streamable_http(processes: Processes, tmp_path: Path) -> None:
    port = unused_port()
    db = str(tmp_path / "m.db")
    server = processes.start(
        [sys.executable, "-m", "distill", "mcp", "--transport", "http", "--port", str(port)],
        "mcp",
        env=server_env(tmp_path, db, DISTILL_PROJECT="web"),
    )
    wait_until(lambda: listening(port) or server.popen.poll() is not None, START_TIMEOUT, "mcp")
    assert server.popen.poll() is None, server.text()

    async def scenario(tools: Tools) -> None:
        names = {t.name for t in (await tools.client.list_tools()).tools}
        assert {"add_memory", "list_memories", "delete_all_memories"} <= names
        (memory,) = (await tools.ok("add_memory", subject="u1", text="I live in Lyon."))["memories"]
        assert memory["project"] == "web"
        (hit,) = (await tools.ok("search_memories", query="Lyon", subject="u1"))["memories"]
        assert hit["id"] == memory["id"]
        history = await tools.ok("get_memory_history", id=memory["id"])
        assert history["memory"]["id"] == memory["id"]
        assert "NotFound" in await tools.error("get_memory", id="ffffffffffff")

    over_http(f"http://127.0.0.1:{port}/mcp", scenario)
    assert "http://127.0.0.1" in server.text()
    # A page another site serves cannot reach it through a rebound name (DNS rebinding).
    rebound = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp",
        data=b"{}",
        headers={"Host": "evil.example", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(rebound, timeout=10)
    refused.value.close()
    assert refused.value.code == 421


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", "::"])
def test_a_non_loopback_host_is_refused(tmp_path: Path, host: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "distill", "mcp", "--transport", "http", "--host", host],
        env=server_env(tmp_path, str(tmp_path / "m.db")),
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "not a loopback address" in done.stderr and "127.0.0.1" in done.stderr
    assert not (tmp_path / "m.db").exists()  # refused before anything was opened


def test_what_counts_as_loopback() -> None:
    assert all(map(loopback, ["127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"]))
    assert not any(map(loopback, ["0.0.0.0", "::", "10.0.0.1", "localhost.evil.com", ""]))


def test_help_says_where_the_project_comes_from_and_where_it_listens(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "distill", "mcp", "--help"],
        env=server_env(tmp_path, str(tmp_path / "m.db")),
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    for words in ("DISTILL_PROJECT", "stdio", "http", "127.0.0.1", "8421", "delete_memory"):
        assert words in done.stdout
