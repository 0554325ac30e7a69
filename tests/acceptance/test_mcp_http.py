"""`distill mcp --transport http`: a real server on 127.0.0.1, driven by the MCP SDK's
streamable HTTP client: without keys on loopback; with the HTTP API's keys, each request on
its key's project (one project's key never reaches another's memories; unknown, revoked and
missing keys are a 401); and the refusal to listen elsewhere without a key."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from distill.service.mcp_command import loopback
from tests.acceptance.mcp_client import CHECKOUT, Scenario, Tools, over_http, server_env
from tests.llm_server import unused_port
from tests.processes import Processes, wait_until

START_TIMEOUT = 30  # seconds for the server to listen; it takes about two


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def distill(tmp_path: Path, db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "distill", *args],
        env=server_env(tmp_path, db),
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def make_key(tmp_path: Path, db: str, *args: str) -> dict[str, str]:
    made = distill(tmp_path, db, "keys", "create", *args, "--json")
    assert made.returncode == 0, made.stderr
    key: dict[str, str] = json.loads(made.stdout)
    return key


def start_mcp(processes: Processes, tmp_path: Path, db: str, port: int) -> None:
    server = processes.start(
        [sys.executable, "-m", "distill", "mcp", "--transport", "http", "--port", str(port)],
        "mcp",
        env=server_env(tmp_path, db),
    )
    wait_until(lambda: listening(port) or server.popen.poll() is not None, START_TIMEOUT, "mcp")
    assert server.popen.poll() is None, server.text()


def post(url: str, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    """An MCP `initialize` POSTed as a client sends it; the status and the JSON body."""
    request = urllib.request.Request(
        url,
        data=json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "probe", "version": "0"},
                },
            }
        ).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answered:
            return answered.status, {}
    except urllib.error.HTTPError as refused:
        with refused:
            return refused.code, json.loads(refused.read())


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


def test_a_key_acts_on_its_own_project_only(processes: Processes, tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    key_a = make_key(tmp_path, db, "--project", "a")
    key_b = make_key(tmp_path, db, "--project", "b")
    admin = make_key(tmp_path, db, "--admin")
    port = unused_port()
    start_mcp(processes, tmp_path, db, port)
    url = f"http://127.0.0.1:{port}/mcp"
    made: dict[str, str] = {}

    def adding(project: str, city: str) -> Scenario:
        async def scenario(tools: Tools) -> None:
            added = await tools.ok("add_memory", subject="u1", text=f"I live in {city}.")
            (memory,) = added["memories"]
            assert memory["project"] == project
            made[project] = memory["id"]

        return scenario

    over_http(url, adding("a", "Lyon"), {"Authorization": f"Bearer {key_a['token']}"})
    over_http(url, adding("b", "Oslo"), {"X-API-Key": key_b["token"]})

    async def as_a(tools: Tools) -> None:
        found = (await tools.ok("search_memories", query="live in Lyon Oslo"))["memories"]
        assert [hit["id"] for hit in found] == [made["a"]]
        listed = await tools.ok("list_memories")
        assert [m["id"] for m in listed["memories"]] == [made["a"]] and listed["total"] == 1
        assert (await tools.ok("get_memory", id=made["a"]))["project"] == "a"
        assert "NotFound" in await tools.error("get_memory", id=made["b"])
        assert "NotFound" in await tools.error("get_memory_history", id=made["b"])
        assert "NotFound" in await tools.error("delete_memory", id=made["b"], reason="probe")

    over_http(url, as_a, {"Authorization": f"Bearer {key_a['token']}"})
    # Naming another project in the URL does not move a project's key.
    status, body = post(f"{url}?project=b", {"Authorization": f"Bearer {key_a['token']}"})
    assert (status, body["error"]["type"]) == (403, "forbidden")

    async def as_admin_on_b(tools: Tools) -> None:
        found = (await tools.ok("search_memories", query="live in Lyon Oslo"))["memories"]
        assert [hit["id"] for hit in found] == [made["b"]]

    over_http(f"{url}?project=b", as_admin_on_b, {"X-API-Key": admin["token"]})
    status, body = post(url, {"X-API-Key": admin["token"]})
    assert (status, body["error"]["type"]) == (400, "project_required")
    assert "?project=" in str(body["error"]["message"])


def test_unknown_missing_and_revoked_keys_are_refused(processes: Processes, tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    key = make_key(tmp_path, db, "--project", "a")
    port = unused_port()
    start_mcp(processes, tmp_path, db, port)
    url = f"http://127.0.0.1:{port}/mcp"
    bearer = {"Authorization": f"Bearer {key['token']}"}
    assert post(url, bearer)[0] == 200
    for headers in ({}, {"Authorization": "Bearer dk_not-a-key"}, {"X-API-Key": "dk_nope"}):
        status, body = post(url, headers)
        assert status == 401, headers
        assert body["error"]["type"] == "unauthorized"
        assert "key" in str(body["error"]["message"])
    calls: list[str] = []

    async def revoked_while_connected(tools: Tools) -> None:
        await tools.ok("list_memories")
        revoked = distill(tmp_path, db, "keys", "revoke", key["id"])
        assert revoked.returncode == 0, revoked.stderr
        calls.append("revoked")
        # The same session's next request is refused: the key is looked up on each one.
        with pytest.raises(MCPError):  # how the SDK's client reports a 401
            await tools.client.list_tools()

    over_http(url, revoked_while_connected, bearer)
    assert calls == ["revoked"]
    status, body = post(url, bearer)
    assert (status, body["error"]["type"]) == (401, "unauthorized")


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", "::"])
def test_a_non_loopback_host_is_refused_without_keys(tmp_path: Path, host: str) -> None:
    done = distill(tmp_path, str(tmp_path / "m.db"), "mcp", "--transport", "http", "--host", host)
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert f"refusing to serve MCP on {host} without API keys" in said
    assert "distill keys create" in said and "127.0.0.1" in said


def test_a_revoked_key_is_no_key_for_another_interface(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    key = make_key(tmp_path, db, "--project", "a")
    assert distill(tmp_path, db, "keys", "revoke", key["id"]).returncode == 0
    done = distill(tmp_path, db, "mcp", "--transport", "http", "--host", "0.0.0.0")
    assert done.returncode == 2 and "without API keys" in done.stderr


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
    said = ("DISTILL_PROJECT", "stdio", "http", "127.0.0.1", "8421", "delete_memory", "Bearer")
    for words in said:
        assert words in done.stdout
