"""`distill summarise` as a person runs it, in a subprocess, asking a real OpenAI-compatible
server on 127.0.0.1 that summarises what it is shown: a dry run that reports and writes
nothing, the run that writes the summary with its receipts, `status` counting it (human and
JSON), and a second run over unchanged memory that asks nothing."""

from __future__ import annotations

import json
from pathlib import Path

from distill.core.summarise import asked
from tests.acceptance.test_cli import Cli
from tests.llm_server import Reply, Request, ScriptedServer, openai_reply

OLD = ["I have 3 bikes.", "I like green tea.", "I do not eat meat."]
SUMMARY = "The user has 3 bikes, likes green tea and does not eat meat."


def summariser(request: Request) -> Reply:
    """An OpenAI-compatible model that consumes every memory it is shown."""
    prompt = request.body["messages"][-1]["content"]
    consumes = [alias for alias, _ in asked(prompt)]
    return openai_reply(json.dumps({"summary": SUMMARY, "consumes": consumes}))


def remember(cli: Cli, server: ScriptedServer) -> None:
    """Point the CLI at `server` and store three old memories and a recent one."""
    cli.env.update(
        DISTILL_LLM_MODEL="summary-model",
        DISTILL_LLM_BASE_URL=server.url + "/v1",
        OPENAI_API_KEY="test-key",
    )
    for day, text in enumerate([*OLD, "I play chess."], 1):
        when = f"2024-05-{day:02d}T10:00:00Z"
        cli.ok("add", "--subject", "u1", "--text", text, "--occurred-at", when)
    cli.ok("--extractor", "text", "consolidate")


def test_summarise_asks_a_real_provider_dry_run_first(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    with ScriptedServer(default=summariser) as server:
        remember(cli, server)

        dry = cli.ok("summarise", "--llm", "openai", "--keep", "1", "--dry-run")
        assert "offered 3 memory(ies)" in dry.stdout and "would write 1 summary" in dry.stdout
        assert "nothing written" in dry.stdout
        assert cli.ok_json("status")["consolidations"] == 0

        done = cli.ok_json("summarise", "--llm", "openai", "--keep", "1", "--project", "default")
        assert done["calls"] == 1 and done["consumed"] == 3 and done["refused"] == []
        [summary] = done["summaries"]
        assert summary["text"] == SUMMARY

        status = cli.ok_json("status")
        assert (status["consolidations"], status["facts_consolidated"]) == (1, 3)
        human = cli.ok("status").stdout
        assert "1 summary(ies) written, 3 memory(ies) consumed" in human

        again = cli.ok_json("summarise", "--llm", "openai", "--keep", "1")
        assert again["calls"] == 0  # nothing changed that is old enough


def test_summarise_reports_what_it_refused_and_why(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    lossy = json.dumps({"summary": "The user has bikes.", "consumes": ["M1", "M7"]})
    with ScriptedServer(default=openai_reply(lossy)) as server:
        remember(cli, server)
        shown = cli.ok("summarise", "--llm", "openai", "--keep", "1").stdout
        assert "wrote 0 summary" in shown
        assert "lost_number 1" in shown and "not_shown 1" in shown
        assert "nothing_consumed 1" in shown
        assert cli.ok_json("status")["consolidations"] == 0


def test_summarise_without_a_model_says_how_to_give_one(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    failed = cli("summarise")
    assert failed.code == 1 and "needs a model" in failed.error
    assert cli("summarise", "--llm", "openai", "--keep", "-1").code == 2
