"""The CLI as a person meets it: reads that do not load the model, ids that are never cut,
empty results said in words, options where a person types them, a short report of a large
run, an exit code cron can read, and advice in the CLI's own terms.

Every command runs in a subprocess, with this checkout on PYTHONPATH (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.acceptance.test_cli import Cli

ROOT = Path(__file__).resolve().parents[2]
ID = re.compile(r"\b[0-9a-f]{32}\b")


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def _created(report: dict[str, object]) -> list[dict[str, object]]:
    actions = report["actions"]
    assert isinstance(actions, list)
    return [a["after"] for a in actions if a["action"] == "create_fact"]


def _conflict(cli: Cli) -> tuple[str, list[str]]:
    """An open language conflict: its id and its members' ids."""
    cli.add_claims(
        ("language", {"lang": "fr"}, "2024-05-01T10:00:00Z", "create"),
        ("language", {"lang": "en"}, "2024-05-02T10:00:00Z", "create"),
    )
    cli.ok("consolidate")
    (opened,) = cli.ok_json("conflicts")
    return opened["id"], opened["member_ids"]


# -- the model is loaded only to embed ---------------------------------------------------------
def test_reading_commands_never_load_the_embedding_model(cli: Cli, tmp_path: Path) -> None:
    """With the default local embedder, `facts`, `history`, `conflicts`, `audit` and `status`
    run although onnxruntime and tokenizers cannot even be imported; `consolidate`, which
    embeds, is the first command to need them (so the trap works)."""
    _, members = _conflict(cli)  # written with the hashing embedder
    trap = tmp_path / "trap"
    for package in ("onnxruntime", "tokenizers"):
        (trap / package).mkdir(parents=True)
        (trap / package / "__init__.py").write_text(
            f"raise ImportError('{package} was imported: the model was loaded')\n"
        )
    env = {k: v for k, v in cli.env.items() if k != "DISTILL_EMBEDDER"}  # local, the default
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(trap)])

    def run(*args: str) -> tuple[int, str]:
        result = cli.raw("--db", str(cli.db), *args, env=env)
        return result.code, result.stdout + result.stderr

    for args in (
        ["facts"],
        ["facts", "--all", "--json"],
        ["history", members[0]],
        ["conflicts"],
        ["audit"],
        ["status", "--json"],
        ["pin", members[0]],
    ):
        code, output = run(*args)
        assert code == 0, f"{args}: {output}"
        assert "was imported" not in output
    assert json.loads(run("status", "--json")[1])["embedder"] == "all-MiniLM-L6-v2/int8-onnx"

    cli.add_claim("bike_count", {"count": 3}, "2024-05-03T10:00:00Z")
    code, output = run("consolidate")
    assert code == 1
    assert "onnxruntime was imported" in output


# -- ids are never cut -------------------------------------------------------------------------
def test_every_table_shows_whole_ids_at_80_columns(cli: Cli) -> None:
    """The ids `history`, `pin` and `resolve` need can be copied from an 80-column terminal:
    each one appears whole in the table that lists it."""
    conflict_id, members = _conflict(cli)
    cli.add_claim("home_city", {"city": "a rather long city name, " * 4}, "2024-05-03T10:00:00Z")
    cli.ok("consolidate")
    facts = cli.ok_json("facts", "--all")
    cli.env["COLUMNS"] = "80"

    listed = cli.ok("facts", "--all").stdout
    for fact in facts:
        assert fact["id"] in listed
    conflicts = cli.ok("conflicts").stdout
    for wanted in (conflict_id, *members):
        assert wanted in conflicts
    history = cli.ok("history", members[0]).stdout
    assert members[0] in history
    events = {o["event_id"] for o in cli.ok_json("history", members[0])["observations"]}
    assert events and all(e in history for e in events)
    audit = cli.ok("audit").stdout
    assert {e["fact_id"] for e in cli.ok_json("audit") if e["fact_id"]} <= set(ID.findall(audit))
    found = cli.ok("search", "language", "--events").stdout
    hits = cli.ok_json("search", "language", "--events")
    assert hits and all(h["id"] in found for h in hits)
    # The evidence is shown under each hit (its date and words), not only in --json.
    shown = [f"· {e['occurred_at'][:10]}: {e['text'][:8]}" for h in hits for e in h["events"]]
    assert shown and all(line in found for line in shown)
    for output in (listed, conflicts, history, audit, found):
        assert "…" not in output
        assert max(len(line) for line in output.splitlines()) <= 80


# -- empty results are said --------------------------------------------------------------------
def test_empty_results_are_said_in_words_not_drawn_as_empty_tables(cli: Cli) -> None:
    said = {
        ("facts",): "no active facts in project 'default'",
        ("facts", "--all"): "no facts in project 'default'",
        ("facts", "--subject", "u9"): "no active facts for subject 'u9' in project 'default'",
        ("conflicts",): "no open conflicts in project 'default'",
        ("conflicts", "--status", "all"): "no conflicts in project 'default'",
        ("audit", "--project", "p2"): "no audit entries in project 'p2'",
        ("consolidate",): "nothing to consolidate: no events are waiting",
        ("consolidate", "--dry-run"): "nothing to consolidate: no events are waiting",
    }
    for args, line in said.items():
        assert cli.ok(*args).stdout == line + "\n", args
    assert cli.ok_json("facts") == []
    assert cli.ok_json("conflicts") == []


# -- options where people type them ------------------------------------------------------------
def test_db_and_json_work_after_the_command_and_h_is_help(cli: Cli, tmp_path: Path) -> None:
    cli.add_claim("bike_count", {"count": 3}, "2024-05-01T10:00:00Z")
    cli.ok("consolidate")
    elsewhere = tmp_path / "other.db"

    after = cli.raw("facts", "--db", str(cli.db), "--json")
    assert after.code == 0, after.stderr
    assert [f["value"] for f in after.json()] == [{"count": 3}]
    before = cli.raw("--json", "--db", str(cli.db), "facts")
    assert before.json() == after.json()
    # After the command wins, as the later word does.
    assert cli.raw("--db", str(elsewhere), "facts", "--db", str(cli.db), "--json").json()
    assert (
        cli.raw("--db", str(cli.db), "status", "--db", str(elsewhere), "--json").json()["events"]
        == 0
    )
    assert cli.raw("--db", str(cli.db), "--json", "status").json()["events"] == 1

    for args in (["-h"], ["facts", "-h"], ["consolidate", "-h"], ["export", "-h"]):
        helped = cli.raw(*args)
        assert helped.code == 0, args
        assert helped.stdout.startswith("Usage:"), args

    misplaced = cli("facts", "--embedder", "hashing")
    assert misplaced.code == 2
    assert "--embedder is an option of distill itself: put it before the command" in (
        misplaced.error
    )


# -- a large run is summed up ------------------------------------------------------------------
def test_a_dry_run_prints_a_summary_and_the_plan_only_on_request(cli: Cli) -> None:
    cli.add_claims(
        *[
            (f"attribute_{n}", {"n": n}, f"2024-05-{n + 1:02d}T10:00:00Z", "create")
            for n in range(12)
        ]
    )
    text = cli.ok("consolidate", "--dry-run").stdout
    assert "the plan has 24 action(s): 12 create_fact, 12 record_observation" in text
    assert "`--plan` prints each" in text
    assert "new identity" not in text  # no action's reason: those come with --plan
    full = cli.ok("consolidate", "--dry-run", "--plan").stdout
    assert full.count("create_fact ") == 12

    summary = cli.ok("consolidate", "--dry-run", "--json")
    assert summary.json()["actions"] is None
    assert summary.json()["actions_total"] == 24
    plan = cli.ok("consolidate", "--dry-run", "--json", "--plan")
    assert len(plan.json()["actions"]) == 24
    assert len(summary.stdout) * 4 < len(plan.stdout)
    assert cli.ok_json("facts") == []  # dry runs all


# -- failures are in the exit code -------------------------------------------------------------
def test_consolidate_exits_1_when_jobs_failed_with_their_count(cli: Cli) -> None:
    """A model that cannot be reached fails every job: cron and CI see exit 1 and the count,
    with or without --json (the report is still printed)."""
    cli.ok("add", "--subject", "u1", "--text", "I have three bikes.")
    cli.ok("add", "--subject", "u2", "--text", "I live in Lyon.")
    cli.env.update(
        DISTILL_LLM="openai",
        DISTILL_LLM_BASE_URL="http://127.0.0.1:9/v1",  # discard: nothing listens
        DISTILL_LLM_API_KEY="k",
        DISTILL_LLM_ATTEMPTS="1",  # one try per request: no retry waits (see the test below)
    )
    text = cli("consolidate")
    assert text.code == 1
    assert "Error: 2 job(s) failed" in text.error
    assert "distill status" in text.error
    cli.ok("replay")
    as_json = cli("consolidate", "--json")
    assert as_json.code == 1
    assert as_json.json()["counters"]["jobs_failed"] == 2
    assert "Error: 2 job(s) failed" in as_json.error
    assert cli.ok_json("status")["jobs"]["failed"] == 2


def test_distill_llm_attempts_sets_how_often_a_request_is_tried(cli: Cli) -> None:
    """Two attempts: one retry per request is logged; one attempt: none."""
    cli.ok("add", "--subject", "u1", "--text", "I have three bikes.")
    cli.env.update(
        DISTILL_LLM="openai",
        DISTILL_LLM_BASE_URL="http://127.0.0.1:9/v1",
        DISTILL_LLM_API_KEY="k",
        DISTILL_LLM_ATTEMPTS="2",
    )
    twice = cli("-v", "consolidate")
    assert twice.code == 1
    assert twice.error.count("retry 1 of 1") == 1
    cli.ok("replay")
    cli.env["DISTILL_LLM_ATTEMPTS"] = "1"
    once = cli("-v", "consolidate")
    assert once.code == 1
    assert "retry" not in once.error
    cli.env["DISTILL_LLM_ATTEMPTS"] = "0"
    refused = cli("consolidate")
    assert refused.code == 2
    assert "DISTILL_LLM_ATTEMPTS" in refused.error or "--llm-attempts" in refused.error


# -- advice in the CLI's terms -----------------------------------------------------------------
def test_the_llm_extractor_without_a_model_says_to_set_distill_llm(cli: Cli) -> None:
    cli.ok("add", "--subject", "u1", "--text", "I have three bikes.")
    cli.env["DISTILL_EXTRACTOR"] = "llm"
    for args in (["consolidate"], ["worker", "--once"]):
        result = cli(*args)
        assert result.code == 1, args
        assert "set DISTILL_LLM to openai, ollama or anthropic" in result.error
        assert "Memory" not in result.error
    status = cli.ok_json("status")
    assert status["extractor"] == "llm: unusable, no model is set (DISTILL_LLM)"


def test_the_claims_extractor_over_text_only_events_says_they_gave_nothing(cli: Cli) -> None:
    cli.ok("add", "--subject", "u1", "--text", "I have three bikes. I live in Lyon.")
    cli.ok("add", "--subject", "u2", "--text", "I sail.")
    # Beside an event with a claim, which does make a fact: the two without are still named.
    cli.add_claim("home_city", {"city": "Lyon"}, "2024-05-01T10:00:00Z", subject="u3")
    cli.env["DISTILL_EXTRACTOR"] = "claims"
    result = cli.ok("consolidate")
    assert "2 event(s) produced nothing" in result.error
    assert "DISTILL_EXTRACTOR=auto" in result.error
    assert [f["subject"] for f in cli.ok_json("facts")] == ["u3"]


def test_an_event_with_no_sentence_worth_a_memory_is_said_and_kept(cli: Cli) -> None:
    """ "Hi" gives the text route nothing to keep: the run says so in a line, and the event
    is still there (search, export), so nothing vanished without a word."""
    cli.ok("add", "--subject", "u1", "--text", "Hi")
    cli.ok("add", "--subject", "u1", "--text", "I moved to Lyon.")
    result = cli.ok("consolidate")
    assert "1 event(s) held no sentence worth a memory" in result.error
    assert cli.ok_json("consolidate", "--dry-run")["counters"]["jobs_done"] == 0
    assert [f["text"] for f in cli.ok_json("facts")] == ["I moved to Lyon."]
    assert {e["text"] for e in map(json.loads, cli.ok("export").stdout.split("\n")[:-1])} >= {"Hi"}


def test_status_names_the_extractor_and_model_a_run_would_use(cli: Cli) -> None:
    plain = cli.ok_json("status")
    assert plain["llm"] == "none"
    assert (
        plain["extractor"] == "auto: an event's own claims, else its sentences as memories (no LLM)"
    )
    cli.env.update(DISTILL_LLM="openai")  # no model named: its default, resolved
    configured = cli.ok_json("status")
    assert configured["llm"] == "openai/gpt-4o-mini"
    assert configured["extractor"] == "auto: an event's own claims, else the LLM openai/gpt-4o-mini"
    cli.env.update(DISTILL_LLM="ollama", DISTILL_LLM_MODEL="qwen2.5", DISTILL_EXTRACTOR="text")
    text = cli.ok("status").stdout
    assert "ollama/qwen2.5" in text
    assert "text: each sentence a memory (no LLM)" in text


# -- ids scoped by project ---------------------------------------------------------------------
def test_history_and_pin_of_another_projects_fact_are_not_found(cli: Cli) -> None:
    cli.add_claim("bike_count", {"count": 3}, "2024-05-01T10:00:00Z")
    (fact,) = _created(cli.ok_json("consolidate", "--plan"))
    fact_id = str(fact["id"])
    for args in (
        ["history", fact_id, "--project", "other"],
        ["pin", fact_id, "--project", "other"],
        ["pin", fact_id, "--unpin", "--project", "other"],
    ):
        result = cli(*args)
        assert result.code == 1, args
        assert result.stderr.startswith(f"Error: no fact {fact_id}")
    (still,) = cli.ok_json("facts")
    assert still["pinned"] is False
    assert cli.ok_json("history", fact_id, "--project", "default")["fact"]["id"] == fact_id
    assert cli.ok_json("pin", fact_id, "--project", "default")["pinned"] is True


def test_history_and_pin_with_the_facts_own_project(cli: Cli) -> None:
    claim = json.dumps({"predicate": "bike_count", "value": {"count": 3}})
    cli.ok("add", "--project", "p2", "--subject", "u1", "--text", "3 bikes", "--claim", claim)
    (fact,) = _created(cli.ok_json("consolidate", "--plan"))
    fact_id = str(fact["id"])
    history = cli.ok_json("history", fact_id, "--project", "p2")
    assert [v["id"] for v in history["versions"]] == [fact_id]
    assert cli.ok_json("pin", fact_id, "--project", "p2")["pinned"] is True
    assert cli.ok_json("pin", fact_id, "--unpin", "--project", "p2")["pinned"] is False
    default = cli("history", fact_id)
    assert default.code == 1
    assert default.stderr.startswith(f"Error: no fact {fact_id}")


def test_ids_may_be_typed_as_unique_prefixes(cli: Cli) -> None:
    """What the user typed goes to Memory as it is: a unique prefix names its fact or
    conflict, as with git; an ambiguous one is an error that lists the candidates."""
    conflict_id, members = _conflict(cli)
    assert cli.ok_json("history", members[0][:20])["fact"]["id"] == members[0]
    assert cli.ok_json("pin", members[1][:20])["id"] == members[1]
    shared = next(members[0][:n] for n in range(32, 0, -1) if members[1].startswith(members[0][:n]))
    assert len(shared) >= 4  # made in one run: the same millisecond, or nearly
    ambiguous = cli("history", shared)
    assert ambiguous.code == 1
    assert "ambiguous" in ambiguous.error
    assert all(m in ambiguous.error for m in members)
    kept = cli.ok_json("resolve", conflict_id[:20], "--keep", members[1][:20])
    assert kept["kept_fact_id"] == members[1]
