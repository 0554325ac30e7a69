"""The MCP server: a project's memory as tools a model calls (`distill mcp`).

Tool names are the ones users know from other memory servers (`add_memory`,
`search_memories`, `get_memory`, `list_memories`, `delete_memory`, `delete_all_memories`),
plus what only Distill has: a memory's history, its conflicts and their resolution, pins.
A "memory" is a fact: what consolidation made of the events the agent added.

The project is never a tool argument: a model can neither read nor write another project,
nor learn that one exists. Over stdio it is the server's, fixed when it starts (`--project`,
`DISTILL_PROJECT`). Over HTTP it is decided for each request from the key it carries
(`distill.service.mcp_access`) and reaches the tools through `ACTING_PROJECT`, set around
each message by `_acting_project`, the one place that reads it off the HTTP request; a
message over HTTP that arrives without one is refused, never served on a default. The
subject (whose memory) is an argument of every tool that needs one.

`delete_memory` and `delete_all_memories` keep the names users expect but mean different
things, as DESIGN does: the first *retracts* (the fact is retired with a receipt and the
caller's reason, never erased, never served again), the second *erases* a subject (the one
hard delete; it asks for `confirm=true`).

Results are structured JSON; a Distill error (no such id, bad input, an operation the state
does not allow) is a tool error whose message names the error and the fix, never a
traceback. The SDK is imported only by this module, which `distill mcp` imports when it
runs: the default install does without it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Annotated, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_REQUEST, ToolAnnotations
from pydantic import Field

from distill.core.context import CONTEXT_TOKENS
from distill.core.models import ConflictSet, Fact, FactStatus, JobStatus
from distill.core.recall import MAX_SEARCH_LIMIT
from distill.errors import AlreadyResolved, DistillError, InvalidInput, InvalidOperation
from distill.memory import Memory
from distill.service.mcp_access import PROJECT_SCOPE_KEY

# Memories one `list_memories` call returns at most: a page a model can read in its context.
LIST_LIMIT_MAX = 100
LIST_LIMIT_DEFAULT = 20
SEARCH_LIMIT_DEFAULT = 10  # as `Memory.search`

INSTRUCTIONS = """\
Long-term memory for agents. Add what you learn about a subject (a user, a customer, a \
project) with add_memory; Distill consolidates it into durable facts: a new value of an \
attribute supersedes the old one (kept in its history), a contradiction it cannot decide \
is held as a conflict and its facts are marked contested. Recall with search_memories \
(as_of for what was true at a past time), or get_context for a block to put in a \
prompt. Ids may be given whole or by a unique prefix of at least 4 characters. {scope}"""
ONE_PROJECT = "This server works on one project, chosen by its operator: {project!r}."
KEYED = (
    "This server works on the project of the API key your client connects with (without "
    "keys, on the one its operator chose)."
)

# The project of the message being handled, over HTTP; unset over stdio.
ACTING_PROJECT: ContextVar[str] = ContextVar("distill_mcp_project")

Subject = Annotated[
    str, Field(description="Whose memory: a user, customer or entity id, as you named it.")
]
MemoryId = Annotated[str, Field(description="A memory's id, or a unique prefix of it.")]
AsOf = Annotated[
    str | None,
    Field(
        description="ISO-8601 time with a timezone: answer with what was true in the world "
        "at that time (default: now)."
    ),
]
KnownAt = Annotated[
    str | None,
    Field(
        description="ISO-8601 time with a timezone: answer as Distill believed it at that "
        "time, before anything it learnt since (default: now)."
    ),
]


class MemoryTools:
    """The tools, on one Memory and one project. Each method is one tool: its docstring is
    the description the model reads, its signature the input schema."""

    def __init__(self, memory: Memory, project: str) -> None:
        self.memory = memory
        self._project = project
        # One consolidation at a time in this server: tool calls run on worker threads, and
        # two runs at once would only contend for the same jobs.
        self._consolidating = threading.Lock()

    @property
    def project(self) -> str:
        """The project this call acts on: its request's over HTTP, the server's over stdio."""
        return ACTING_PROJECT.get(self._project)

    # -- writing -------------------------------------------------------------------------------
    def add_memory(
        self,
        subject: Subject,
        text: Annotated[str, Field(description="What happened or was said, in plain words.")],
        occurred_at: Annotated[
            str | None,
            Field(description="ISO-8601 time with a timezone when it happened (default: now)."),
        ] = None,
        source: Annotated[
            str, Field(description="Where it comes from (a channel, an app).")
        ] = "mcp",
        claims: Annotated[
            list[dict[str, Any]] | None,
            Field(
                description="Optional structured claims, for callers that already know the "
                'attribute: [{"predicate": "city", "value": {"name": "Lyon"}, "action": '
                '"supersede"}]; "supersede" says the value replaces the current one, "create" '
                "(the default) that it is stated anew, a conflict if it differs. Without "
                "claims the text is read by the configured extractor."
            ),
        ] = None,
        consolidate: Annotated[
            bool,
            Field(
                description="Consolidate now so the memory is searchable when this returns "
                "(default). False leaves it to a running `distill worker`."
            ),
        ] = True,
    ) -> dict[str, Any]:
        """Add a memory about a subject: an event Distill consolidates into facts. By
        default it is consolidated right away (every pending event of the database is, as
        `distill consolidate` does), so it is searchable when this returns; the result
        lists the memories made or reinforced from it. Adding the same content again is a
        no-op (`already_stored` is true)."""
        event: dict[str, Any] = {
            "project": self.project,
            "subject": subject,
            "text": text,
            "source": source,
        }
        if occurred_at is not None:
            event["occurred_at"] = occurred_at
        if claims:
            event["claims"] = claims
        added = self.memory.append([event])
        stored = added.events[0]
        result: dict[str, Any] = {
            "event_id": stored.id,
            "subject": stored.subject,
            "already_stored": added.already_stored[0],
            "consolidated": False,
        }
        if not consolidate:
            result["note"] = "stored; searchable once a `distill worker` consolidates it"
            return result
        with self._consolidating:
            report = self.memory.consolidate()
        if report.errors or report.stopped_by_provider:
            # The run is the database's: only this event's own job is the caller's business.
            waiting = [
                j
                for j in self.memory.jobs(self.project)
                if stored.id in j.event_ids and j.status is not JobStatus.DONE
            ]
            if waiting:
                why = waiting[0].error or report.stopped_by_provider
                result["note"] = (
                    f"stored, not consolidated yet ({waiting[0].status}: {why}); a later "
                    "run retries it"
                )
                return result
        result["consolidated"] = True
        served = self.memory.facts(stored.subject, self.project)
        made = [f for f in served if stored.id in f.source_event_ids]
        # What is held back sits in an open set: read those, not the subject's whole history.
        open_sets = self.memory.conflicts(stored.subject, self.project)
        members = sorted({m for c in open_sets for m in c.member_ids})
        held = [
            f
            for f in (self.memory.fact(m, self.project) for m in members)
            if f.status is FactStatus.CANDIDATE and stored.id in f.source_event_ids
        ]
        refused = [r for r in report.rejections if r.event_id == stored.id]
        result["memories"] = self._described(made)
        result["held"] = self._described(held)
        result["refused"] = [{"reason": r.reason, "detail": r.detail} for r in refused]
        note = f"consolidated: {len(made)} memory(ies) made or reinforced, searchable now"
        if held:
            note += (
                f"; {len(held)} held back, not served (a contradiction or a less trusted "
                "source: list_conflicts shows the open sets, resolve_conflict decides)"
            )
        if refused:
            note += f"; {len(refused)} refused ({', '.join(sorted({r.reason for r in refused}))})"
        result["note"] = note
        return result

    # -- reading -------------------------------------------------------------------------------
    def search_memories(
        self,
        query: Annotated[str, Field(description="What you want to recall, in plain words.")],
        subject: Annotated[
            str | None, Field(description="Whose memories; omit to search every subject.")
        ] = None,
        as_of: AsOf = None,
        known_at: KnownAt = None,
        limit: Annotated[
            int, Field(ge=1, le=MAX_SEARCH_LIMIT, description="How many memories at most.")
        ] = SEARCH_LIMIT_DEFAULT,
    ) -> dict[str, Any]:
        """Recall: the memories most relevant to `query`, best first, by words and by
        meaning, among those served now (or true `as_of`, or believed `known_at`).
        Superseded and retracted memories are never returned as current. Each has its
        score, its dates (valid_from, valid_to) and its evidence event ids. `contested`
        (with `conflict_ids`) means another value is held against it, undecided: do not
        present it as settled; list_conflicts shows every value."""
        hits = self.memory.search(
            query,
            subject=subject,
            project=self.project,
            as_of=as_of,
            known_at=known_at,
            limit=limit,
        )
        # Each hit in get_memory's shape (every field, times as they write them), with what
        # the search adds: its score, the arms that found it, its evidence's ids as named by
        # the HTTP API's hits.
        described = self._described([hit.fact for hit in hits])
        return {
            "memories": [
                {**shown, "score": hit.score, "parts": hit.parts,
                 "evidence_event_ids": list(hit.fact.source_event_ids)}
                for shown, hit in zip(described, hits, strict=True)
            ]
        }  # fmt: skip

    def get_context(
        self,
        subject: Subject,
        query: Annotated[
            str | None,
            Field(description="What the prompt is about: the most relevant facts come first."),
        ] = None,
        as_of: AsOf = None,
        known_at: KnownAt = None,
        budget_tokens: Annotated[
            int, Field(ge=1, description="Tokens the block may take (default 1,000).")
        ] = CONTEXT_TOKENS,
    ) -> dict[str, Any]:
        """The block to put in a prompt about a subject: its standing rules first, then
        what is known now (or as_of, or known_at), each fact with its dates, within
        budget_tokens; a contested fact is shown with its rivals, never silently picked;
        events not consolidated yet are listed as such. `text` is the block itself."""
        block = self.memory.context(
            subject,
            query=query,
            project=self.project,
            as_of=as_of,
            known_at=known_at,
            budget_tokens=budget_tokens,
        )
        return block.to_dict()

    def get_memory(self, id: MemoryId) -> dict[str, Any]:
        """One memory by id, whatever its status (active, superseded, retracted), with its
        validity, evidence event ids, and `contested` when it sits in an open conflict."""
        return self._described([self.memory.fact(id, self.project)])[0]

    def list_memories(
        self,
        subject: Annotated[
            str | None, Field(description="Whose memories; omit for every subject.")
        ] = None,
        as_of: AsOf = None,
        known_at: KnownAt = None,
        limit: Annotated[
            int, Field(ge=1, le=LIST_LIMIT_MAX, description="How many memories at most.")
        ] = LIST_LIMIT_DEFAULT,
    ) -> dict[str, Any]:
        """The memories served as current (or true `as_of`, or believed `known_at`), most
        recently recorded first. A memory marked `contested` (with `conflict_ids`) has
        another value held against it, undecided: do not present it as settled;
        list_conflicts shows every value."""
        found = self.memory.facts(subject, self.project, as_of=as_of, known_at=known_at)
        found.sort(key=lambda f: (f.recorded_at, f.id), reverse=True)
        return {
            "memories": self._described(found[:limit]),
            "total": len(found),
            "truncated": len(found) > limit,
        }

    def get_memory_history(self, id: MemoryId) -> dict[str, Any]:
        """A memory's life: every version of its attribute (what it was before, what
        superseded it), the observations that claimed it, and the audit trail: who or which
        pass changed it, when and why (a retraction keeps its reason here)."""
        history = self.memory.history(id, self.project)
        return {
            "memory": self._described([history.fact])[0],
            "versions": self._described(history.versions),
            "observations": [o.model_dump(mode="json") for o in history.observations],
            "audit": [e.model_dump(mode="json") for e in history.audit],
        }

    def list_conflicts(
        self,
        subject: Annotated[
            str | None, Field(description="Whose conflicts; omit for every subject.")
        ] = None,
    ) -> dict[str, Any]:
        """Open conflict sets: values Distill could not decide between (a contradiction, a
        low-trust claim held back, two names that may be one attribute), each with its
        member memories. Resolve one with resolve_conflict."""
        found = self.memory.conflicts(subject, self.project)
        return {"conflicts": [self._conflict(c) for c in found]}

    # -- decisions -----------------------------------------------------------------------------
    def resolve_conflict(
        self,
        conflict_id: Annotated[str, Field(description="The conflict set's id (or a prefix).")],
        keep: Annotated[
            str | None,
            Field(
                description="The id of the member memory that is right; the others are "
                "superseded by it. Null keeps none of the held candidates."
            ),
        ],
    ) -> dict[str, Any]:
        """Decide an open conflict: keep one member memory, the others are superseded by it
        (kept in history, no longer served). Returns the resolved set. Asked again with the
        same decision (a retry after a lost reply), it returns the set as it was decided."""
        try:
            return self._conflict(self.memory.resolve_conflict(conflict_id, keep, self.project))
        except AlreadyResolved:
            decided = self.memory.conflict(conflict_id, self.project)
            kept = None if keep is None else self.memory.fact(keep, self.project).id
            if decided.kept_fact_id != kept:
                raise  # decided otherwise: the caller must know
            return self._conflict(decided)

    def pin_memory(
        self,
        id: MemoryId,
        pinned: Annotated[bool, Field(description="True pins it, false removes the pin.")] = True,
    ) -> dict[str, Any]:
        """Pin a memory so that consolidation never changes it (a new value is held as a
        conflict instead of superseding it), or unpin it. Returns the memory."""
        return self._described([self.memory.pin(id, pinned, self.project)])[0]

    def delete_memory(
        self,
        id: MemoryId,
        reason: Annotated[str, Field(description="Why it is wrong; kept in its history.")],
    ) -> dict[str, Any]:
        """Retract a wrong memory: it is retired and never served again, with a receipt and
        your reason in its history; nothing is erased (delete_all_memories erases). A pinned
        memory must be unpinned first; one in an open conflict is decided by
        resolve_conflict. Returns the retracted memory; asked again (a retry after a lost
        reply), it returns it as it was retracted."""
        try:
            return self._described([self.memory.retract(id, reason, self.project)])[0]
        except InvalidOperation:
            fact = self.memory.fact(id, self.project)
            if fact.status is not FactStatus.RETRACTED:
                raise
            return self._described([fact])[0]

    def delete_all_memories(
        self,
        subject: Subject,
        confirm: Annotated[bool, Field(description="Must be true: it cannot be undone.")] = False,
    ) -> dict[str, Any]:
        """Erase everything about a subject, for good: its events, memories, history and
        conflicts are deleted from the database; only an audit entry without content
        remains (when, how many rows). Irreversible: ask the user first, then call with
        confirm=true. Returns how many rows of each kind were erased."""
        if not subject.strip():  # in this tool's words: `erase` would offer None
            raise InvalidInput("subject: name the subject whose memories to erase")
        if not confirm:
            raise InvalidInput(
                f"erasing {subject!r} cannot be undone: call again with confirm=true once "
                "the user has agreed (delete_memory retracts one memory instead)"
            )
        return {"subject": subject, "erased": self.memory.erase(self.project, subject)}

    # -- shapes --------------------------------------------------------------------------------
    def _described(self, facts: list[Fact]) -> list[dict[str, Any]]:
        """Facts as JSON, each marked `contested` with the open sets that hold it."""
        subjects = {f.subject for f in facts}
        sets = self.memory.conflicts(
            next(iter(subjects)) if len(subjects) == 1 else None, self.project
        )
        holding: dict[str, list[str]] = {}
        for conflict in sets:
            for member in conflict.member_ids:
                holding.setdefault(member, []).append(conflict.id)
        return [
            {
                **f.model_dump(mode="json"),
                "contested": f.id in holding,
                "conflict_ids": holding.get(f.id, []),
            }
            for f in facts
        ]

    def _conflict(self, conflict: ConflictSet) -> dict[str, Any]:
        members = [self.memory.fact(m, self.project) for m in conflict.member_ids]
        return {**conflict.model_dump(mode="json"), "members": self._described(members)}


def _reported(tool: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """A tool whose Distill errors reach the model as tool errors naming the error and the
    fix. Anything else is a crash the SDK logs with its traceback and reports to the client
    as `Error executing tool` alone."""

    @functools.wraps(tool)
    def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return tool(*args, **kwargs)
        except DistillError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    return call


def _hints(
    title: str, read_only: bool = False, destructive: bool = False, idempotent: bool = False
) -> ToolAnnotations:
    # Every tool works on this database alone: a closed world.
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


# Writes that only add (an event, a pin) are not destructive; the same
# content added twice is one event, a pin set twice is one pin. Retracting and resolving
# retire facts (kept in history, no longer served); erasing deletes. A second retraction,
# resolution or erasure of the same thing changes nothing (it returns what was done, or
# finds nothing left to erase).
TOOLS: dict[str, ToolAnnotations] = {
    "add_memory": _hints("Add a memory", idempotent=True),
    "search_memories": _hints("Search memories", read_only=True),
    "get_context": _hints("Get the context block for a prompt", read_only=True),
    "get_memory": _hints("Get a memory", read_only=True),
    "list_memories": _hints("List memories", read_only=True),
    "get_memory_history": _hints("Get a memory's history", read_only=True),
    "list_conflicts": _hints("List open conflicts", read_only=True),
    "resolve_conflict": _hints("Resolve a conflict", destructive=True, idempotent=True),
    "pin_memory": _hints("Pin or unpin a memory", idempotent=True),
    "delete_memory": _hints("Retract a memory", destructive=True, idempotent=True),
    "delete_all_memories": _hints(
        "Erase every memory of a subject", destructive=True, idempotent=True
    ),
}


def _acting_project(over_http: bool) -> Callable[..., Any]:
    """Middleware around every message: over HTTP, the project `mcp_access` decided for
    the request that carried it becomes the tools' `ACTING_PROJECT` while it is handled."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if not over_http:
            return await call_next(ctx)
        project = getattr(ctx.request, "scope", {}).get(PROJECT_SCOPE_KEY)
        if project is None:  # not through `KeyedEndpoint`: refused rather than defaulted
            raise MCPError(INVALID_REQUEST, "no project for this request; see distill mcp --help")
        token = ACTING_PROJECT.set(project)
        try:
            return await call_next(ctx)
        finally:
            ACTING_PROJECT.reset(token)

    return middleware


def build_server(
    memory: Memory, project: str, version: str, log_level: str, *, over_http: bool = False
) -> MCPServer:
    """The MCP server on `memory`; the caller runs it and closes the memory. Over stdio
    every call acts on `project`; `over_http`, on the project of its request's key (or on
    `project` where `mcp_access` serves without keys)."""
    tools = MemoryTools(memory, project)
    scope = KEYED if over_http else ONE_PROJECT.format(project=project)
    server: MCPServer = MCPServer(
        "distill",
        title="Distill memory",
        instructions=INSTRUCTIONS.format(scope=scope),
        version=version,
        log_level=log_level,  # type: ignore[arg-type]
        middleware=[_acting_project(over_http)],
    )
    for name, hints in TOOLS.items():
        server.add_tool(
            _reported(getattr(tools, name)), name=name, title=hints.title, annotations=hints
        )
    return server
