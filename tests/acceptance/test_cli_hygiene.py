"""`distill dedupe`, `distill judge` and `distill judge-identities` as a person runs them, in
a subprocess: a dry run that reports and writes nothing, then the run that applies. Dedupe
runs on a store that holds duplicates (planted as an earlier version would have left them);
the judges ask a real OpenAI-compatible server on 127.0.0.1 that answers by a rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.core import identity_judge
from distill.core.memory_judge import asked
from tests.acceptance.test_cli import Cli
from tests.contract.test_dedupe import plant
from tests.llm_server import Reply, Request, ScriptedServer, openai_error, openai_reply


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    cli = Cli(tmp_path)
    with Memory(str(cli.db), embedder=HashingEmbedder(256)) as mem:
        plant(mem, "Publishes on Tuesday mornings.", count=2)
        plant(mem, "publishes on tuesday mornings", minutes=1)
        plant(mem, "The deploy runs on Fridays", minutes=2)
        plant(mem, "On Fridays the deploy runs", minutes=3)
    return cli


def test_a_dry_run_lists_every_group_then_the_run_retires_the_duplicate(cli: Cli) -> None:
    before = cli.ok_json("facts", "--subject", "u1")

    dry = cli.ok("dedupe", "--dry-run")

    assert "would retire 1 memory(ies) in 1 group(s)" in dry.stdout
    assert "1 word-order group(s) reported" in dry.stdout and "nothing written" in dry.stdout
    assert cli.ok_json("facts", "--subject", "u1") == before

    done = cli.ok_json("dedupe")

    assert done["retired"] == 1 and done["groups_report_only"] == 1
    [merged] = [g for g in done["groups"] if g["outcome"] == "merged"]
    live = {f["id"]: f for f in cli.ok_json("facts", "--subject", "u1")}
    assert merged["survivor"] in live and merged["retired"][0] not in live
    assert live[merged["survivor"]]["reinforcement_count"] == 3
    again = cli.ok_json("dedupe")
    assert again["retired"] == 0 and again["groups_report_only"] == 1


def test_an_unknown_project_finds_nothing_and_a_negative_cap_is_a_usage_error(cli: Cli) -> None:
    assert cli.ok_json("dedupe", "--project", "nobody")["retired"] == 0
    bad = cli("dedupe", "--max-supersedes", "-1")
    assert bad.code == 2 and "--max-supersedes" in bad.error


def judge_by_rule(request: Request) -> Reply:
    """An OpenAI-compatible judge: a move supersedes, anything else is kept."""
    prompt = request.body["messages"][-1]["content"]
    verdicts = []
    for alias, text, candidates in asked(prompt):
        verdict = {"memory": alias, "action": "nothing", "target": None, "reason": "distinct"}
        if "moved" in text and candidates:
            verdict.update(action="supersede", target=candidates[0][0], reason="the user moved")
        verdicts.append(verdict)
    return openai_reply(json.dumps({"verdicts": verdicts}))


def test_judge_asks_a_real_provider_and_applies_what_passes(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    with ScriptedServer(default=judge_by_rule) as server:
        cli.use_model(server.url, "judge-model")
        cli.ok(
            "add",
            "--subject",
            "u1",
            "--text",
            "I live in Paris.",
            "--occurred-at",
            "2024-05-01T10:00:00Z",
        )
        cli.ok(
            "add",
            "--subject",
            "u1",
            "--text",
            "I moved to Lyon.",
            "--occurred-at",
            "2024-06-01T10:00:00Z",
        )
        cli.ok("--extractor", "text", "consolidate")

        dry = cli.ok("judge", "--dry-run")
        assert "1 superseded" in dry.stdout and "nothing written" in dry.stdout
        assert len(cli.ok_json("facts", "--subject", "u1")) == 2

        done = cli.ok_json("judge")
        assert done["superseded"] == 1 and done["calls"] == 1
        [live] = cli.ok_json("facts", "--subject", "u1")
        assert live["text"] == "I moved to Lyon."
        assert cli.ok_json("judge")["calls"] == 0  # nothing new since the cursor

    (tmp_path / "other").mkdir()
    failed = Cli(tmp_path / "other")("judge")
    assert failed.code == 1 and "needs a model" in failed.error


def test_offline_merges_a_close_paraphrase_that_loses_nothing(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    for day, text in enumerate(["I like jazz music a lot.", "I really like jazz music a lot."]):
        when = f"2024-05-0{day + 1}T12:00:00Z"
        cli.ok("add", "--subject", "u1", "--occurred-at", when, "--text", text)
    cli.ok("consolidate")
    assert cli.ok_json("dedupe")["retired"] == 0

    dry = cli.ok("dedupe", "--offline", "--dry-run")
    assert "would retire 1 memory(ies) in 1 group(s) (1 by the offline tier)" in dry.stdout
    done = cli.ok_json("dedupe", "--offline")

    assert done["retired"] == 1 and done["groups_offline"] == 1
    assert [f["text"] for f in cli.ok_json("facts", "--subject", "u1")] == [
        "I like jazz music a lot."
    ]


def same_by_rule(request: Request) -> Reply:
    """An OpenAI-compatible identity judge: every pair it is shown is one attribute."""
    prompt = request.body["messages"][-1]["content"]
    return openai_reply(identity_judge.scripted(lambda _a, _b: True, "renamed")(prompt))


def test_judge_identities_decides_the_sets_a_run_left_without_a_model(tmp_path: Path) -> None:
    """Consolidated without a model, `bike_count` and `bike_class_count` stay contested; with
    one, `distill judge-identities` asks a real provider: a dry run reports and writes
    nothing, the run keeps the newer value and learns the alias."""
    cli = Cli(tmp_path)
    cli.add_claims(
        ("bike_count", {"count": 3}, "2024-05-01T10:00:00Z", "create"),
        ("bike_class_count", {"count": 4}, "2024-06-01T10:00:00Z", "create"),
    )
    cli.ok("--extractor", "claims", "consolidate")
    assert len(cli.ok_json("facts", "--subject", "u1")) == 2

    with ScriptedServer(default=same_by_rule) as server:
        cli.use_model(server.url, "judge-model")
        dry = cli.ok("judge-identities", "--dry-run")
        assert "would apply: 1 one attribute" in dry.stdout and "nothing written" in dry.stdout
        assert len(cli.ok_json("facts", "--subject", "u1")) == 2

        done = cli.ok_json("judge-identities")
        assert (done["same"], done["llm_calls"], done["projects"]) == (1, 1, 1)
        [live] = cli.ok_json("facts", "--subject", "u1")
        assert (live["predicate"], live["value"]) == ("bike_class_count", {"count": 4})
        assert cli.ok_json("judge-identities")["llm_calls"] == 0  # nothing left open

    del cli.env["DISTILL_LLM"]
    failed = cli("judge-identities")
    assert failed.code == 1 and "needs a model" in failed.error


def test_a_judge_the_model_server_refuses_exits_1_with_and_without_json(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    with ScriptedServer(default=lambda request: openai_error(404, "no model judge-x")) as server:
        cli.use_model(server.url, "judge-x")
        for day, text in ((1, "I live in Paris."), (2, "I moved to Lyon.")):
            cli.ok(
                "add",
                "--subject",
                "u1",
                "--text",
                text,
                "--occurred-at",
                f"2024-05-0{day}T10:00:00Z",
            )
        cli.ok("--extractor", "text", "consolidate")

        shown = cli("judge")
        as_json = cli("judge", "--json")

    assert shown.code == 1 and "stopped: default/u1:" in shown.stdout
    assert as_json.code == 1 and "no model judge-x" in as_json.json()["provider_down"]
