"""`distill serve` and `distill keys` in subprocesses, as a user runs them: the address it binds
and when it refuses to, access without keys on loopback, keys made, listed and revoked from
the command line against a running server, and a clean stop on SIGTERM."""

from __future__ import annotations

import re
import signal
import socket
from pathlib import Path

import httpx

from tests.http_server import assert_error, claim_event, wait_for
from tests.processes import Proc, Processes

LISTENING = re.compile(r"distill serve: (http://\S+) ")


def serve(processes: Processes, db: Path, *options: str) -> tuple[Proc, str]:
    """`distill serve` on a free port; returns it and its URL once it listens."""
    # Each event extracted at the worker's next poll (not after 20, the default trigger): the
    # tests read what they sent back at once.
    processes.env.setdefault("DISTILL_WORKER__MIN_EVENTS", "1")
    proc = processes.distill(str(db), "serve", "--port", "0", "--interval", "0.1", *options)
    found = wait_for(lambda: LISTENING.search(proc.text()), 30, "distill serve to listen")
    url = found[1]
    wait_for(lambda: _healthy(url), 30, "distill serve to answer")
    return proc, url


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz").status_code == 200
    except httpx.TransportError:
        return False


def test_serve_refuses_another_interface_without_keys(processes: Processes, tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    refused = processes.run(db, "serve", "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode == 2
    assert "refusing to serve on 0.0.0.0 without API keys" in " ".join(refused.stderr.split())
    made = processes.run(db, "keys", "create", "--project", "demo", "--json")
    assert made.returncode == 0, made.stderr
    revoked = processes.run(db, "keys", "revoke", re.findall(r'"id": "(\w+)"', made.stdout)[0])
    assert revoked.returncode == 0, revoked.stderr
    again = processes.run(db, "serve", "--host", "0.0.0.0", "--port", "0")
    assert again.returncode == 2, "a revoked key is no key"


def test_a_port_in_use_is_refused_in_one_line(processes: Processes, tmp_path: Path) -> None:
    """Another program listens on the port: `serve` and `mcp --transport http` say so and
    what to do, as every error is said (exit 1, `Error: ...`), not in uvicorn's words."""
    db = str(tmp_path / "m.db")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for command in (["serve"], ["mcp", "--transport", "http"]):
            refused = processes.run(db, *command, "--port", port)
            assert refused.returncode == 1, refused.stderr
            told = " ".join(refused.stderr.split())
            assert told.startswith(f"Error: distill {command[0]} cannot listen on 127.0.0.1:")
            assert "--port 0" in told and "ERROR" not in told


def test_on_loopback_without_keys_every_local_caller_is_served_until_a_key_exists(
    processes: Processes, tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    proc, url = serve(processes, db)
    assert url.startswith("http://127.0.0.1:")
    assert "no API keys yet" in proc.text()
    sent = httpx.post(f"{url}/v1/events", json=claim_event("u1", "home_city", {"city": "Oslo"}))
    assert sent.status_code == 202
    listed = wait_for(
        lambda: httpx.post(f"{url}/v1/memories/list", json={}).json()["results"],
        what="the worker to consolidate",
    )
    assert listed[0]["project"] == "default"
    elsewhere = httpx.get(f"{url}/v1/status", headers={"Host": "rebind.example"})
    assert_error(elsewhere, 401, "unauthorized")

    made = processes.run(str(db), "keys", "create", "--project", "default")
    assert made.returncode == 0 and "shown once" in made.stderr
    token = made.stdout.strip()
    assert token.startswith("dk_")
    assert_error(httpx.get(f"{url}/v1/status"), 401, "unauthorized")
    keyed = httpx.get(f"{url}/v1/status", headers={"X-API-Key": token})
    assert keyed.status_code == 200 and keyed.json()["events"] == 1

    proc.popen.send_signal(signal.SIGTERM)
    assert processes.finish(proc, timeout=30) == 0
    assert "distill serve: stopped" in proc.text()


def test_keys_made_listed_and_revoked_from_the_command_line(
    processes: Processes, tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    made = processes.run(str(db), "keys", "create", "--project", "acme", "--name", "bot")
    admin = processes.run(str(db), "keys", "create", "--admin", "--json")
    assert made.returncode == admin.returncode == 0
    token = made.stdout.strip()
    both = processes.run(str(db), "keys", "create", "--admin", "--project", "acme")
    assert both.returncode == 2 and "--admin" in both.stderr

    listed = processes.run(str(db), "--json", "keys", "list")
    assert listed.returncode == 0 and token not in listed.stdout
    assert '"project": "acme"' in listed.stdout and '"admin": true' in listed.stdout
    table = processes.run(str(db), "keys", "list", "--project", "acme")
    assert "bot" in table.stdout and "(admin)" not in table.stdout

    _, url = serve(processes, db)
    headers = {"Authorization": f"Bearer {token}"}
    assert httpx.get(f"{url}/v1/status", headers=headers).status_code == 200
    key_id = re.findall(r"\b[0-9a-f]{32}\b", table.stdout)[0]
    revoked = processes.run(str(db), "keys", "revoke", key_id)
    assert revoked.returncode == 0 and key_id in revoked.stdout
    assert_error(httpx.get(f"{url}/v1/status", headers=headers), 401, "unauthorized")
    missing = processes.run(str(db), "keys", "revoke", "0" * 32)
    assert missing.returncode == 1 and "no API key" in missing.stderr
