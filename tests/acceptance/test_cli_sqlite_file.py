"""The SQLite file given to `--db`, from the command line: another writer holding its lock,
another application's database, a database opened read-only. Run in a subprocess as a user
runs them, with this checkout's code.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acceptance.test_cli import Cli as InstalledCli

ROOT = Path(__file__).resolve().parents[2]
READ_COMMANDS = ["facts", "status", "audit", "conflicts", "export"]
HOLD_THE_LOCK = """import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
time.sleep(60)
"""


class Cli(InstalledCli):
    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path)
        self.env["PYTHONPATH"] = str(ROOT)

    def on(self, database: str, *args: str) -> tuple[int, str, str]:
        """`distill --db <database> ...`: exit code, stdout, stderr (unwrapped)."""
        result = self.raw("--db", database, *args)
        return result.code, result.stdout, result.error


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    made = Cli(tmp_path)
    made.ok("add", "--subject", "alice", "--text", "Alice lives in Paris")
    made.ok("consolidate")
    return made


@pytest.fixture
def holder(cli: Cli) -> Iterator[subprocess.Popen[str]]:
    """Another program holding the database's write lock."""
    command = [sys.executable, "-c", HOLD_THE_LOCK, str(cli.db)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
            yield proc
        finally:
            proc.kill()


def test_a_writer_kept_waiting_exits_1_naming_the_holder_and_the_wait(
    cli: Cli, holder: subprocess.Popen[str]
) -> None:
    bob = ["add", "--subject", "bob", "--text", "Bob is here"]
    code, _, error = cli.on(f"sqlite:///{cli.db}?busy_timeout=0.3", *bob)
    assert code == 1
    assert error.startswith(f"Error: the SQLite database at {cli.db} is locked by another writer")
    if Path("/proc/locks").exists():
        assert f"pid {holder.pid} (python" in error
    assert "gave up after waiting 0.3 s" in error and "?busy_timeout=SECONDS" in error


def test_with_verbose_a_long_wait_is_announced_before_it_ends(
    cli: Cli, holder: subprocess.Popen[str]
) -> None:
    bob = ["add", "--subject", "bob", "--text", "Bob is here"]
    code, _, error = cli.on(f"{cli.db}?busy_timeout=1.2", "-v", *bob)
    assert code == 1
    assert error.count("WARNING") == 1
    assert "is locked by another writer" in error
    assert re.search(r"waiting up to 0\.\d s more for it \(busy_timeout=1\.2\)", error)


def test_read_commands_do_not_wait_for_a_writer(cli: Cli, holder: subprocess.Popen[str]) -> None:
    code, out, error = cli.on(f"{cli.db}?busy_timeout=0.3", "facts", "--json")
    assert code == 0, error
    assert [f["text"] for f in json.loads(out)] == ["Alice lives in Paris"]


def test_another_applications_database_is_refused_untouched(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    path = tmp_path / "app.db"
    app = sqlite3.connect(path)
    app.executescript("CREATE TABLE users (id INTEGER); CREATE TABLE orders (id INTEGER);")
    app.close()
    before = path.read_bytes(), path.stat().st_mtime_ns, sorted(os.listdir(tmp_path))
    for command in ("facts", "status", "migrate"):
        code, _, error = cli.on(str(path), command)
        assert code == 1
        assert error == (
            f"Error: the SQLite file {path} is not a distill database: it has tables orders, "
            "users and no distill schema; distill will not add its tables to another "
            "application's database (nothing was written): give distill a new or empty file"
        )
    assert (path.read_bytes(), path.stat().st_mtime_ns, sorted(os.listdir(tmp_path))) == before


def test_a_database_opened_read_only_serves_every_read_command(cli: Cli) -> None:
    [fact] = cli.ok_json("facts")
    read_only = f"sqlite:///{cli.db}?mode=ro"
    for command in [*READ_COMMANDS, f"history {fact['id']}"]:
        args = command.split()
        if args[0] != "export":
            args.append("--json")
        writable = cli.ok(*args).stdout
        code, out, error = cli.on(read_only, *args)
        assert code == 0, f"{command}: {error}"
        if args[0] != "status":  # status names the database it read
            assert out == writable, command


@pytest.mark.parametrize(
    "command",
    [["add", "--subject", "bob", "--text", "Bob is here"], ["consolidate"], ["migrate"]],
)
def test_a_database_opened_read_only_refuses_writes_and_says_why(
    cli: Cli, command: list[str]
) -> None:
    before = cli.db.read_bytes()
    code, _, error = cli.on(f"{cli.db}?mode=ro", *command)
    if command == ["migrate"]:  # up to date: nothing to write, so nothing to refuse
        assert code == 0, error
    else:
        assert code == 1
        assert error == (
            f"Error: the SQLite database at {cli.db} is read-only (opened with mode=ro), and "
            "this writes to it; nothing was written"
        )
    assert cli.db.read_bytes() == before


@pytest.mark.skipif(
    os.geteuid() == 0, reason="runs as root, and root may write a file whatever its mode"
)
def test_a_file_this_user_cannot_write_serves_reads(cli: Cli) -> None:
    cli.db.chmod(0o444)
    try:
        code, out, error = cli.on(str(cli.db), "facts", "--json")
        assert code == 0, error
        assert [f["text"] for f in json.loads(out)] == ["Alice lives in Paris"]
        code, _, error = cli.on(str(cli.db), "add", "--subject", "bob", "--text", "Bob")
        assert code == 1 and "is read-only (this user cannot write the file)" in error
    finally:
        cli.db.chmod(0o644)
