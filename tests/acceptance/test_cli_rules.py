"""`distill rules` as a person runs it, in a subprocess: a person's rules added and listed, a
dry run of `promote` that reports and writes nothing, then the run that adds the learned
rule, asking a real OpenAI-compatible server on 127.0.0.1 that answers by a rule; the
context block then opens with the rules."""

from __future__ import annotations

import json
from pathlib import Path

from distill.core.rules import asked
from tests.acceptance.test_cli import Cli
from tests.llm_server import Reply, Request, ScriptedServer, openai_reply


def promote_by_rule(request: Request) -> Reply:
    """An OpenAI-compatible model: "reply in British English" is a rule, the rest facts."""
    prompt = request.body["messages"][-1]["content"]
    verdicts = []
    for alias, text in asked(prompt):
        if "British" in text:
            verdict = {"verdict": "rule", "rule": "Always reply in British English."}
        else:
            verdict = {"verdict": "not", "rule": None}
        verdicts.append({"memory": alias, **verdict, "reason": "what the person keeps saying"})
    return openai_reply(json.dumps({"verdicts": verdicts}))


def add_said(cli: Cli, text: str, times: int) -> None:
    for day in range(1, times + 1):
        when = f"2024-05-{day:02d}T10:00:00Z"
        cli.ok("add", "--subject", "u1", "--text", text, "--occurred-at", when)


def test_a_persons_rules_are_added_once_and_listed(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    assert "no rules for 'u1'" in cli.ok("rules", "list", "u1").stdout

    added = cli.ok("rules", "add", "u1", "Never schedule meetings before 10am")
    again = cli.ok_json("rules", "add", "u1", "never schedule meetings before 10AM.")

    assert "added rule" in added.stdout
    assert again["added"] is False and again["text"] == "Never schedule meetings before 10am"
    [rule] = cli.ok_json("rules", "list", "u1")
    assert rule["origin"] == "written" and rule["id"] == again["id"]
    assert "Never schedule meetings before 10am" in cli.ok("rules", "list", "u1").stdout
    assert cli.ok_json("rules", "list", "u2") == []
    two_lines = cli("rules", "add", "u1", "one\ntwo")
    assert two_lines.code == 1 and "one line" in two_lines.error
    assert cli("rules", "add", "u1").code == 2  # no text: a usage error


def test_promote_asks_a_real_provider_dry_run_first(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    with ScriptedServer(default=promote_by_rule) as server:
        cli.env.update(
            DISTILL_LLM_MODEL="rules-model",
            DISTILL_LLM_BASE_URL=server.url + "/v1",
            OPENAI_API_KEY="test-key",
        )
        add_said(cli, "Please reply in British English.", times=4)
        add_said(cli, "I live in Leeds.", times=4)
        add_said(cli, "I like tea.", times=2)  # said twice: not offered
        cli.ok("--extractor", "text", "consolidate")

        dry = cli.ok("rules", "promote", "--llm", "openai", "--dry-run")
        assert "offered 2 memory(ies)" in dry.stdout and "would add 1 rule(s)" in dry.stdout
        assert "nothing written" in dry.stdout and cli.ok_json("rules", "list", "u1") == []

        done = cli.ok_json("rules", "promote", "--llm", "openai", "--max-calls", "5")
        assert done["calls"] == 1 and done["not_rules"] == 1 and done["dry_run"] is False
        [promoted] = done["promoted"]
        assert promoted["text"] == "Always reply in British English."
        assert cli.ok_json("rules", "list", "u1") == [promoted]
        assert cli.ok_json("rules", "promote", "--llm", "openai")["calls"] == 0  # nothing new

        context = cli.ok("context", "u1").stdout.splitlines()
        assert context[0].startswith("Rules for u1") and "British English" in context[1]
        assert cli.ok_json("context", "u1")["rules"][0]["id"] == promoted["id"]

        capped = cli.ok_json("rules", "promote", "--llm", "openai", "--max-calls", "0")
        assert capped["calls"] == 0


def test_promote_without_a_model_says_how_to_give_one_and_bad_caps_are_usage_errors(
    tmp_path: Path,
) -> None:
    cli = Cli(tmp_path)
    failed = cli("rules", "promote")
    assert failed.code == 1 and "needs a model" in failed.error
    bad = cli("rules", "promote", "--llm", "openai", "--max-calls", "-1")
    assert bad.code == 2 and "--max-calls" in bad.error
    assert cli("rules", "promote", "--llm", "nobody").code == 2
