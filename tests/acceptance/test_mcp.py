"""`distill mcp` over stdio, driven by the MCP SDK's own client: the tools a model sees
(names, hints, schemas), and each tool doing what its description promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.mcp_client import CHECKOUT, Tools, over_stdio, server_env
from tests.llm_server import unused_port

TOOLS = {
    "add_memory",
    "search_memories",
    "get_context",
    "get_memory",
    "list_memories",
    "delete_memory",
    "delete_all_memories",
    "get_memory_history",
    "list_conflicts",
    "resolve_conflict",
    "pin_memory",
}
READ_ONLY = {
    "search_memories",
    "get_context",
    "get_memory",
    "list_memories",
    "get_memory_history",
    "list_conflicts",
}
DESTRUCTIVE = {"delete_memory", "delete_all_memories", "resolve_conflict"}


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "m.db")


@pytest.fixture(params=["sqlite", "postgres"])
def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database on each backend, for the tests whose tools write."""
    if request.param == "sqlite":
        return str(tmp_path / "m.db")
    return str(request.getfixturevalue("postgres_database"))


def bikes(count: int, day: str, action: str = "create") -> dict[str, Any]:
    """add_memory's arguments for u1 owning `count` bikes, said on `day` (2024-MM-DD)."""
    return {
        "subject": "u1",
        "text": f"I have {count} bikes",
        "occurred_at": f"{day}T10:00:00Z",
        "claims": [{"predicate": "bike_count", "value": {"count": count}, "action": action}],
    }


# -- what the model sees ---------------------------------------------------------------------
def test_tools_are_listed_with_titles_hints_and_no_project_argument(
    tmp_path: Path, db: str
) -> None:
    async def scenario(tools: Tools) -> None:
        listed = {t.name: t for t in (await tools.client.list_tools()).tools}
        assert set(listed) >= TOOLS
        for name in TOOLS:
            tool = listed[name]
            hints = tool.annotations
            assert hints is not None and hints.title and tool.title == hints.title, name
            assert hints.read_only_hint is (name in READ_ONLY), name
            if name not in READ_ONLY:
                assert hints.destructive_hint is (name in DESTRUCTIVE), name
            assert hints.open_world_hint is False
            assert tool.description and len(tool.description) > 60, name
            # The project is the server's: no tool lets the model name one.
            assert "project" not in tool.input_schema.get("properties", {}), name
        assert listed["add_memory"].annotations.idempotent_hint is True  # type: ignore[union-attr]
        assert "contested" in (listed["search_memories"].description or "")
        assert "confirm" in listed["delete_all_memories"].input_schema["required"] or (
            "confirm" in listed["delete_all_memories"].input_schema["properties"]
        )

    over_stdio(tmp_path, db, scenario)


# -- adding, reading, pinning ----------------------------------------------------------------
def test_a_memory_added_is_consolidated_at_once_and_read_back(tmp_path: Path, db: str) -> None:
    async def scenario(tools: Tools) -> None:
        added = await tools.ok("add_memory", subject="u1", text="I live in Lyon.")
        assert added["consolidated"] is True and added["already_stored"] is False
        (memory,) = added["memories"]
        assert memory["text"] == "I live in Lyon."
        assert memory["source_event_ids"] == [added["event_id"]]
        assert "searchable" in added["note"]

        (hit,) = (await tools.ok("search_memories", query="where does u1 live", subject="u1"))[
            "memories"
        ]
        assert hit["id"] == memory["id"] and hit["text"] == "I live in Lyon."
        assert hit["score"] > 0 and hit["contested"] is False
        assert hit["evidence_event_ids"] == [added["event_id"]]
        # The shape of get_memory's answer, with the search's own fields beside it.
        assert {
            k: v for k, v in hit.items() if k not in ("score", "parts", "evidence_event_ids")
        } == (await tools.ok("get_memory", id=memory["id"]))
        # The block for a prompt, as `distill context` prints it.
        block = await tools.ok("get_context", subject="u1", query="home", budget_tokens=200)
        assert block["subject"] == "u1" and "I live in Lyon." in block["text"]
        assert "budget_tokens" in await tools.error("get_context", subject="u1", budget_tokens=0)
        everyone = await tools.ok("search_memories", query="Lyon")
        assert [h["id"] for h in everyone["memories"]] == [memory["id"]]
        assert (await tools.ok("search_memories", query="Lyon", subject="u2"))["memories"] == []

        again = await tools.ok("add_memory", subject="u1", text="I live in Lyon.")
        assert again["already_stored"] is True and again["event_id"] == added["event_id"]

        got = await tools.ok("get_memory", id=memory["id"][:8])  # a prefix is enough
        assert got["id"] == memory["id"] and got["status"] == "active"
        assert got["contested"] is False

        listed = await tools.ok("list_memories", subject="u1")
        assert [m["id"] for m in listed["memories"]] == [memory["id"]]
        assert listed["total"] == 1 and listed["truncated"] is False
        assert (await tools.ok("list_memories", subject="u2"))["memories"] == []

    over_stdio(tmp_path, db, scenario)


def test_add_memory_without_consolidation_waits_for_a_worker(tmp_path: Path, db: str) -> None:
    async def scenario(tools: Tools) -> None:
        added = await tools.ok("add_memory", subject="u1", text="I like tea.", consolidate=False)
        assert added["consolidated"] is False and "worker" in added["note"]
        assert (await tools.ok("list_memories", subject="u1"))["total"] == 0

    over_stdio(tmp_path, db, scenario)
    worked = subprocess.run(
        [sys.executable, "-m", "distill", "worker", "--once"],
        env=server_env(tmp_path, db, DISTILL_WORKER__MIN_EVENTS="1"),  # one event is enough
        cwd=CHECKOUT,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert worked.returncode == 0, worked.stderr

    async def after(tools: Tools) -> None:
        listed = await tools.ok("list_memories", subject="u1")
        assert [m["text"] for m in listed["memories"]] == ["I like tea."]

    over_stdio(tmp_path, db, after)


def test_list_memories_pages_newest_first(tmp_path: Path, db: str) -> None:
    async def scenario(tools: Tools) -> None:
        for n in range(3):
            await tools.ok("add_memory", subject="u1", text=f"Fact number {n}.")
        page = await tools.ok("list_memories", subject="u1", limit=2)
        assert [m["text"] for m in page["memories"]] == ["Fact number 2.", "Fact number 1."]
        assert page["total"] == 3 and page["truncated"] is True
        assert "limit" in await tools.error("list_memories", limit=0)

    over_stdio(tmp_path, db, scenario)


def test_pin_memory_pins_and_unpins_and_is_in_the_history(tmp_path: Path, db: str) -> None:
    async def scenario(tools: Tools) -> None:
        (memory,) = (await tools.ok("add_memory", **bikes(3, "2024-05-01")))["memories"]
        pinned = await tools.ok("pin_memory", id=memory["id"], pinned=True)
        assert pinned["pinned"] is True
        assert (await tools.ok("pin_memory", id=memory["id"], pinned=True))["pinned"] is True
        refused = await tools.error("delete_memory", id=memory["id"], reason="wrong")
        assert "PinnedFact" in refused and "unpin" in refused
        assert (await tools.ok("pin_memory", id=memory["id"], pinned=False))["pinned"] is False
        history = await tools.ok("get_memory_history", id=memory["id"])
        assert [e["action"] for e in history["audit"]].count("pin_fact") == 2  # pin, unpin

    over_stdio(tmp_path, db, scenario)


# -- time --------------------------------------------------------------------------------------
def test_a_new_value_supersedes_the_old_and_as_of_reads_the_past(
    tmp_path: Path, any_db: str
) -> None:
    async def scenario(tools: Tools) -> None:
        (three,) = (await tools.ok("add_memory", **bikes(3, "2024-05-01")))["memories"]
        (four,) = (await tools.ok("add_memory", **bikes(4, "2024-06-01", "supersede")))["memories"]
        now = await tools.ok("list_memories", subject="u1")
        assert [m["value"] for m in now["memories"]] == [{"count": 4}]
        then = await tools.ok("list_memories", subject="u1", as_of="2024-05-15T00:00:00Z")
        assert [m["value"] for m in then["memories"]] == [{"count": 3}]
        found = await tools.ok("search_memories", query="bike count", subject="u1")
        assert [h["value"] for h in found["memories"]] == [{"count": 4}]
        found = await tools.ok(
            "search_memories", query="bike count", subject="u1", as_of="2024-05-15T00:00:00Z"
        )
        assert [h["value"] for h in found["memories"]] == [{"count": 3}]
        assert "limit" in await tools.error("search_memories", query="bikes", limit=101)

        history = await tools.ok("get_memory_history", id=four["id"])
        assert [v["id"] for v in history["versions"]] == [three["id"], four["id"]]
        assert [v["status"] for v in history["versions"]] == ["superseded", "active"]
        assert history["observations"] and history["audit"]

        # known_at: before the second event was recorded, Distill believed 3.
        believed = await tools.ok("list_memories", subject="u1", known_at=three["recorded_at"])
        assert [m["value"] for m in believed["memories"]] == [{"count": 3}]
        bad = await tools.error("list_memories", as_of="last tuesday")
        assert "InvalidInput" in bad and "as_of" in bad

    over_stdio(tmp_path, any_db, scenario)


# -- conflicts -------------------------------------------------------------------------------
def test_a_conflict_is_listed_contested_and_resolved(tmp_path: Path, any_db: str) -> None:
    async def scenario(tools: Tools) -> None:
        def language(lang: str, day: str) -> dict[str, Any]:
            claim = {"predicate": "language", "value": {"lang": lang}, "action": "create"}
            return {
                "subject": "u1",
                "text": f"I speak {lang}",
                "occurred_at": f"{day}T10:00:00Z",
                "claims": [claim],
            }

        await tools.ok("add_memory", **language("fr", "2024-05-01"), consolidate=False)
        added = await tools.ok("add_memory", **language("en", "2024-05-02"))
        # What was made of the event is said, held back or not: `en` waits in a conflict.
        assert added["memories"] == [] and added["refused"] == []
        assert [m["value"] for m in added["held"]] == [{"lang": "en"}]
        assert "1 held back, not served" in added["note"]
        (conflict,) = (await tools.ok("list_conflicts", subject="u1"))["conflicts"]
        assert conflict["status"] == "open" and conflict["kind"] == "conflict"
        members = {m["value"]["lang"]: m for m in conflict["members"]}
        assert set(members) == {"fr", "en"}
        assert all(
            m["contested"] and m["conflict_ids"] == [conflict["id"]] for m in members.values()
        )
        # The value held first is served, marked contested; the other waits in the set.
        assert members["en"]["status"] == "candidate"
        listed = await tools.ok("list_memories", subject="u1")
        assert [(m["id"], m["contested"]) for m in listed["memories"]] == [
            (members["fr"]["id"], True)
        ]
        (hit,) = (await tools.ok("search_memories", query="language", subject="u1"))["memories"]
        assert hit["id"] == members["fr"]["id"]
        assert hit["contested"] is True and hit["conflict_ids"] == [conflict["id"]]
        assert (await tools.ok("list_conflicts", subject="u2"))["conflicts"] == []

        resolved = await tools.ok(
            "resolve_conflict", conflict_id=conflict["id"], keep=members["en"]["id"]
        )
        assert resolved["status"] == "resolved"
        assert resolved["kept_fact_id"] == members["en"]["id"]
        assert (await tools.ok("list_conflicts"))["conflicts"] == []
        now = await tools.ok("list_memories", subject="u1")
        assert [(m["value"], m["contested"]) for m in now["memories"]] == [({"lang": "en"}, False)]
        # Idempotent, as its hint says: the same decision again (a retry after a lost reply)
        # returns the set as decided; another decision is refused.
        again = await tools.ok(
            "resolve_conflict", conflict_id=conflict["id"], keep=members["en"]["id"]
        )
        assert again == resolved
        other = await tools.error(
            "resolve_conflict", conflict_id=conflict["id"], keep=members["fr"]["id"]
        )
        assert "AlreadyResolved" in other

    over_stdio(tmp_path, any_db, scenario)


# -- retract and erase -----------------------------------------------------------------------
def test_delete_memory_retracts_with_a_receipt(tmp_path: Path, any_db: str) -> None:
    async def scenario(tools: Tools) -> None:
        (memory,) = (await tools.ok("add_memory", subject="u1", text="I live in Lyon."))["memories"]
        retracted = await tools.ok("delete_memory", id=memory["id"], reason="never lived there")
        assert retracted["status"] == "retracted"
        assert (await tools.ok("list_memories", subject="u1"))["memories"] == []
        assert (await tools.ok("search_memories", query="Lyon", subject="u1"))["memories"] == []
        # Never erased: it is still there to read, with the reason in its history.
        assert (await tools.ok("get_memory", id=memory["id"]))["status"] == "retracted"
        history = await tools.ok("get_memory_history", id=memory["id"])
        (receipt,) = [e for e in history["audit"] if e["action"] == "retract_fact"]
        assert "never lived there" in receipt["reason"]
        # Idempotent, as its hint says: a retry after a lost reply gets the same memory.
        again = await tools.ok("delete_memory", id=memory["id"], reason="never lived there")
        assert again == retracted
        assert "reason" in await tools.error("delete_memory", id=memory["id"], reason=" ")

    over_stdio(tmp_path, any_db, scenario)


def test_delete_all_memories_asks_for_confirmation_then_erases(tmp_path: Path, any_db: str) -> None:
    async def scenario(tools: Tools) -> None:
        (memory,) = (await tools.ok("add_memory", subject="u1", text="My PIN is Quokka4321."))[
            "memories"
        ]
        await tools.ok("add_memory", subject="u2", text="I live in Oslo.")
        refused = await tools.error("delete_all_memories", subject="u1")
        assert "confirm=true" in refused
        blank = await tools.error("delete_all_memories", subject=" ", confirm=True)
        assert "name the subject" in blank
        assert (await tools.ok("list_memories", subject="u1"))["total"] == 1
        found = await tools.ok("search_memories", query="PIN")
        assert found["memories"][0]["id"] == memory["id"]

        erased = await tools.ok("delete_all_memories", subject="u1", confirm=True)
        assert erased["subject"] == "u1"
        assert erased["erased"]["events"] == 1 and erased["erased"]["facts"] == 1
        assert (await tools.ok("list_memories", subject="u1"))["memories"] == []
        found = await tools.ok("search_memories", query="PIN")
        assert [h["subject"] for h in found["memories"]] == ["u2"]
        assert "NotFound" in await tools.error("get_memory", id=memory["id"])
        # Another subject is untouched; erasing again finds nothing.
        assert (await tools.ok("list_memories", subject="u2"))["total"] == 1
        again = await tools.ok("delete_all_memories", subject="u1", confirm=True)
        assert set(again["erased"].values()) == {0}

    over_stdio(tmp_path, any_db, scenario)
    if Path(any_db).exists():  # SQLite: the file holds no trace of the erased text
        # A word no hex id or timestamp can spell by chance. Digits alone can: a CI run found
        # "4321" in a file that held no PIN. Lower-cased, as the full-text index folds words.
        stored = Path(any_db).read_bytes().lower()
        assert b"quokka" not in stored


# -- errors ------------------------------------------------------------------------------------
def test_bad_ids_and_input_are_tool_errors_and_the_server_keeps_serving(
    tmp_path: Path, db: str
) -> None:
    async def scenario(tools: Tools) -> None:
        missing = await tools.error("get_memory", id="ffffffffffffffffffffffffffffffff")
        assert "NotFound" in missing and "ffffffff" in missing
        assert "NotFound" in await tools.error("get_memory_history", id="ffffffff")
        assert "too short" in await tools.error("pin_memory", id="ab", pinned=True)
        assert "NotFound" in await tools.error(
            "resolve_conflict", conflict_id="ffffffffffff", keep=None
        )
        assert "InvalidInput" in await tools.error("add_memory", subject=" ", text="hi")
        assert "subject" in await tools.error("add_memory", text="no subject")  # schema
        # Still serving after every error.
        assert (await tools.ok("add_memory", subject="u1", text="Still here."))["memories"]

    over_stdio(tmp_path, db, scenario)


# -- the project is the server's ---------------------------------------------------------------
def test_each_server_sees_only_its_project(tmp_path: Path, db: str) -> None:
    made: dict[str, str] = {}

    async def in_alpha(tools: Tools) -> None:
        (memory,) = (await tools.ok("add_memory", subject="u1", text="Alpha secret."))["memories"]
        assert memory["project"] == "alpha"
        made["id"] = memory["id"]

    async def in_beta(tools: Tools) -> None:
        assert (await tools.ok("list_memories"))["memories"] == []
        assert "NotFound" in await tools.error("get_memory", id=made["id"])
        assert "NotFound" in await tools.error("delete_memory", id=made["id"], reason="x")
        # A project argument the model slips in is not obeyed.
        result = await tools.client.call_tool("list_memories", {"project": "alpha"})
        assert result.is_error or result.structured_content == {
            "memories": [],
            "total": 0,
            "truncated": False,
        }

    over_stdio(tmp_path, db, in_alpha, "--project", "alpha")
    over_stdio(tmp_path, db, in_beta, env={"DISTILL_PROJECT": "beta"})


def test_the_server_needs_the_mcp_extra(tmp_path: Path, db: str) -> None:
    """Without the SDK, `distill mcp` says which pip line installs it."""
    blocked = tmp_path / "no-mcp"
    (blocked / "mcp").mkdir(parents=True)
    (blocked / "mcp" / "__init__.py").write_text("raise ImportError('no mcp here')\n")
    env = server_env(tmp_path, db)
    env["PYTHONPATH"] = f"{blocked}:{CHECKOUT}"
    done = subprocess.run(
        [sys.executable, "-m", "distill", "mcp"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    told = " ".join(done.stderr.split())
    assert "pip install 'distill[mcp]'" in told
    assert "in a clone of the repository: pip install -e '.[mcp]'" in told
    assert "Traceback" not in done.stderr


def test_a_failed_consolidation_is_said_and_the_event_kept(tmp_path: Path, db: str) -> None:
    """A model that cannot be reached: the event is stored, the result says why it is not
    consolidated yet, and the server goes on serving."""
    unreachable = {
        "DISTILL_LLM": "openai",
        "DISTILL_LLM_BASE_URL": f"http://127.0.0.1:{unused_port()}/v1",
        "DISTILL_LLM_API_KEY": "sk-test",
        "DISTILL_LLM_ATTEMPTS": "1",
        "DISTILL_EXTRACTOR": "llm",
    }

    async def scenario(tools: Tools) -> None:
        added = await tools.ok("add_memory", subject="u1", text="I live in Lyon.")
        assert added["consolidated"] is False and "memories" not in added
        assert "not consolidated yet" in added["note"] and "retries" in added["note"]
        assert added["event_id"]
        assert (await tools.ok("list_memories", subject="u1"))["total"] == 0

    over_stdio(tmp_path, db, scenario, env=unreachable)
