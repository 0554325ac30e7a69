"""`distill procedures` and `distill topics` as a person runs them, in a subprocess: actions
added with `add --action` and from a JSONL file, procedures promoted (a dry run first), a
use reported, a state matched; topics detected and listed; an export carries the actions and
a copy the procedures and topics."""

from __future__ import annotations

import json
from pathlib import Path

from tests.acceptance.test_cli import Cli


def add_step(cli: Cli, kind: str, session: str, seq: int, outcome: str = "success") -> None:
    action = {"type": kind, "outcome": outcome, "session": session, "seq": seq}
    action["state"] = {"repo": "py"}
    cli.ok(
        "add", "--subject", "agent", "--text", f"{kind} {session}", "--action", json.dumps(action)
    )


def test_procedures_promoted_used_and_matched(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    for session in ("s1", "s2", "s3"):
        add_step(cli, "build", session, 1)
        add_step(cli, "test", session, 2)

    dry = cli.ok_json("procedures", "promote", "--dry-run")
    assert (dry["procedures_created"], dry["procedures_promoted"], dry["dry_run"]) == (1, 1, True)
    assert cli.ok_json("procedures", "list") == []

    done = cli.ok("procedures", "promote")
    assert "created 1 procedure(s), 1 promoted" in done.stdout
    [p] = cli.ok_json("procedures", "list", "--subject", "agent")
    assert (p["name"], p["status"], p["support"], p["precondition"]) == (
        "build → test",
        "active",
        3,
        "repo=py",
    )
    assert cli.ok_json("procedures", "promote")["outcomes"] == {"unchanged": 1}

    used = cli.ok_json("procedures", "use", p["id"][:8], "--failure")  # 0/1 < 0.4
    assert (used["status"], used["was"], used["effectiveness"]) == ("deprecated", "active", 0.0)
    again = cli.ok("procedures", "use", p["id"], "--success")  # 1/2 = 0.5: under 0.6, stays
    assert "1/2 successful uses, deprecated" in again.stdout
    assert cli.ok_json("procedures", "match", "repo=py") == []
    assert "no active procedure matches" in cli.ok("procedures", "match").stdout

    bad = cli("procedures", "match", "repo")
    assert bad.code == 1 and "key=value" in bad.error
    assert cli("procedures", "use", p["id"]).code == 2  # --success or --failure
    unknown = cli("procedures", "use", "f" * 32, "--success")
    assert unknown.code == 1 and "no procedure" in unknown.error


def test_a_bad_action_is_refused_with_its_line(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    bad = cli("add", "--subject", "agent", "--action", '{"type": "build"}')
    assert bad.code == 1 and "outcome" in bad.error
    lines = tmp_path / "events.jsonl"
    good = {"subject": "agent", "action": {"type": "build", "outcome": "success"}}
    wrong = {"subject": "agent", "action": {"type": "build", "outcome": "perhaps"}}
    lines.write_text(json.dumps(good) + "\n" + json.dumps(wrong) + "\n")
    refused = cli("add", "--file", str(lines))
    assert refused.code == 1 and ":2:" in refused.error and "nothing was added" in refused.error


def test_topics_detected_listed_and_carried_by_export_and_copy(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    for text in ("Alice met Bob in Lyon.", "Bob and Alice flew to Lyon.", "Carol called Dave."):
        cli.ok("add", "--subject", "u1", "--text", text)
    add_step(cli, "build", "s1", 1)
    cli.ok("consolidate")

    dry = cli.ok_json("topics", "detect", "--dry-run")
    assert dry["topics_created"] == 2 and cli.ok_json("topics", "list") == []
    detected = cli.ok("topics", "detect")
    assert "created 2 topic(s)" in detected.stdout
    listed = cli.ok_json("topics", "list", "--subject", "u1")
    assert sorted(t["name"] for t in listed) == ["Alice, Bob, Lyon", "Carol, Dave"]
    assert all(t["embedded"] for t in listed)
    assert cli.ok_json("topics", "detect")["events"] == 0

    exported = [json.loads(line) for line in cli.ok("export").stdout.splitlines()]
    actions = [line["action"] for line in exported if "action" in line]
    assert actions == [
        {"type": "build", "outcome": "success", "session": "s1", "seq": 1, "state": {"repo": "py"}}
    ]

    cli.ok("procedures", "promote")  # one build: no pair, no procedure
    copy = tmp_path / "copy.db"
    cli.ok("copy", "--to", str(copy))
    other = Cli(tmp_path)
    other.db = copy
    assert sorted(t["name"] for t in other.ok_json("topics", "list")) == [
        "Alice, Bob, Lyon",
        "Carol, Dave",
    ]
