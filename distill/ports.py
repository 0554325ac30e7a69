"""The ports: what the engine needs from the outside world, as domain operations.

Adapters live in `distill/adapters/<port>/<tech>.py` and implement these protocols. The core
never imports an adapter; the engine wires them together. What the HTTP API keeps beside the
memory (its keys) is a port of its own, in `distill/key_ports.py`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from distill.core.models import (
    Alias,
    AuditEntry,
    ConflictSet,
    ConflictStatus,
    Event,
    Fact,
    Job,
    Observation,
    Rule,
)
from distill.core.patterns import Mention, Procedure, ProcedureStatus, Topic
from distill.core.plan import Plan
from distill.core.schedule import Finish, ScheduleRow

IdTable = Literal["fact", "conflict"]  # what a person may name by an id prefix

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class RecallScope:
    """The facts a search ranks: the active facts of one subject, or of the whole project
    when `subject` is None, of some `kinds` (None: all); or, for a search of the past, the
    facts `among` (any status), which were served then."""

    project: str
    subject: str | None
    model_id: str
    kinds: tuple[str, ...] | None = None
    among: tuple[str, ...] | None = None


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of `dimension` values.

    `model_id` names the vector space: the store keys vectors and cached embeddings by it,
    and the semantic-match threshold is calibrated per model id.
    """

    model_id: str
    max_batch: int

    @property
    def dimension(self) -> int:
        """The size of every vector. A model behind a server may learn it from its first
        answer (asking for it first costs one request)."""
        ...

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        """One row per text, L2-normalised, shape (len(texts), dimension)."""
        ...


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    truncated: bool = False  # the model stopped at its output limit: the text is cut


@dataclass
class LLMUsage:
    """Model calls and tokens spent, as providers reported them."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, completion: Completion) -> None:
        self.include(LLMUsage(1, completion.prompt_tokens, completion.completion_tokens))

    def include(self, other: LLMUsage) -> None:
        """Add what another run spent."""
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together: what a budget counts."""
        return self.prompt_tokens + self.completion_tokens

    def __bool__(self) -> bool:
        return bool(self.calls or self.prompt_tokens or self.completion_tokens)


class LLM(Protocol):
    """A chat model that answers one prompt. Providers translate their errors to
    `distill.errors.ProviderError` subclasses."""

    @property
    def model_id(self) -> str:
        """Names the provider and model, for example ``ollama/llama3.2``."""
        ...

    def complete(
        self, system: str, prompt: str, schema: dict[str, Any] | None = None
    ) -> Completion: ...


@dataclass(frozen=True)
class Neighbour:
    fact_id: str
    distance: float  # cosine distance, 0 = same direction, 2 = opposite


@dataclass(frozen=True)
class IdentityVector:
    """A fact's identity vector: what `nearest_facts` searches for the fact."""

    fact_id: str
    project: str
    subject: str
    text_hash: str  # the content hash of the identity text it embeds
    vector: Vector


@dataclass(frozen=True)
class StoreCounts:
    events: int
    facts_by_status: dict[str, int]
    jobs_by_status: dict[str, int]
    open_conflicts: int
    failed_jobs: tuple[Job, ...]
    llm_usage: LLMUsage = field(default_factory=LLMUsage)
    running_jobs: tuple[Job, ...] = ()
    # Open sets by kind: two values of one identity, a held low-trust claim, two names that
    # may be one attribute.
    open_conflicts_by_kind: dict[str, int] = field(default_factory=dict)
    # Summaries the summarise pass wrote, and the memories they consumed (read from its audit:
    # an erased subject's go with it).
    consolidations: int = 0
    facts_consolidated: int = 0
    # The derive pass's cycles, the facts it wrote and those it closed (from its audit).
    derive_cycles: int = 0
    facts_derived: int = 0
    facts_invalidated: int = 0
    # The procedures and topics kept, by status (candidate / active / deprecated; active /
    # retired).
    procedures_by_status: dict[str, int] = field(default_factory=dict)
    topics_by_status: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Owner:
    """Who makes a store's claims on jobs: a token naming the store, and its process (host,
    pid, and the process's start time, since a dead process's pid may be given to another)."""

    token: str
    host: str
    pid: int
    started: float  # seconds since the epoch

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


@dataclass(frozen=True)
class Claim:
    """Running jobs held by one owner, and since when."""

    owner: Owner
    jobs: int
    since: datetime | None


@dataclass(frozen=True)
class Reclaimed:
    """What a run found of other runs' claims when it started."""

    gone: tuple[Claim, ...]  # claimers found dead (their process or session ended)
    from_gone: int  # running jobs taken back from them
    stalled: int  # running jobs taken back because their heartbeat was older than the lease
    held: tuple[Claim, ...]  # claims of runs that are alive, left to them

    @property
    def jobs(self) -> int:
        return self.from_gone + self.stalled


@runtime_checkable
class ScheduleStore(Protocol):
    """The worker's schedule (`distill.core.schedule`): one row per scheduled pass of one
    scope, and the lease that keeps two workers from running it for the same due time."""

    def schedule_projects(self) -> list[str]:
        """Every project that stored an event, in order."""
        ...

    def schedule_add(
        self, project: str, scope: str, pass_names: Sequence[str], now: datetime
    ) -> None:
        """A row, due at `now`, for each pass of the scope that has none."""
        ...

    def schedule(self, project: str | None = None) -> list[ScheduleRow]:
        """The rows of a project (of every project with None), by project, scope, pass."""
        ...

    def take_lease(self, row: ScheduleRow, owner: str, now: datetime, until: datetime) -> bool:
        """Hold the pass until `until` for the generation `row` was read at, if nobody holds
        it: atomic, so that of several workers one at most gets it."""
        ...

    def finish_run(
        self, row: ScheduleRow, owner: str, now: datetime, finish: Finish, report: dict[str, Any]
    ) -> bool:
        """Write a run's end and give the lease back; False if the lease was lost (it ran
        out and another worker took the pass), then nothing is written."""
        ...

    def release_lease(self, row: ScheduleRow, owner: str) -> None:
        """Give the lease back without a run: the pass stays as it was."""
        ...

    def backlog(self, project: str) -> int:
        """The events of the project that wait for consolidation (in pending or running
        jobs): what backpressure bounds."""
        ...

    def waiting_events(self, project: str, subject: str, limit: int) -> list[Event]:
        """The subject's newest `limit` events that wait for consolidation, newest first."""
        ...

    def force_due(self, project: str, pass_name: str | None, now: datetime) -> int:
        """Make a project's pass (every pass with None) due now; returns the rows made due."""
        ...


class Store(ScheduleStore, Protocol):
    """Durable state. Every method is one domain operation, not a driver call.

    Writes that make up one job happen inside `serialised(project, subject)`: a transaction
    that no other writer for the same (project, subject) can interleave with, rolled back
    whole if the block raises.
    """

    # -- lifecycle ---------------------------------------------------------------------------
    def migrate(self) -> None: ...
    def schema_version(self) -> int:
        """The version of the last migration applied to this database."""
        ...

    def close(self) -> None: ...
    def serialised(self, project: str, subject: str) -> AbstractContextManager[None]: ...
    def dry_run(self) -> AbstractContextManager[None]:
        """A transaction that is always rolled back: everything done inside sees its own
        writes (a dry run's later jobs see what its earlier ones would have written), and
        nobody else ever sees them."""
        ...

    # -- events and jobs ---------------------------------------------------------------------
    def append_events(self, events: Sequence[Event], now: datetime) -> list[tuple[Event, bool]]:
        """Insert events idempotently on (project, idempotency_key) and enqueue their job.
        Returns each stored event with True when it is new, or the existing one and False."""
        ...

    def events(self, project: str, ids: Sequence[str]) -> list[Event]: ...
    def claim_jobs(
        self,
        now: datetime,
        limit: int,
        max_attempts: int,
        min_events: int = 1,
        waited_before: datetime | None = None,
    ) -> list[Job]:
        """Mark due jobs running and return them oldest first: pending ones, and failed ones
        with fewer than `max_attempts` attempts whose backoff has expired. A pending job is
        due once it holds `min_events` events or was created at or before `waited_before`
        (the worker's trigger; by default every pending job is due)."""
        ...

    def reclaim(self, now: datetime, stalled_before: datetime, max_attempts: int) -> Reclaimed:
        """Put `running` jobs back to pending (or to failed, when they have used
        `max_attempts` attempts) whose claimer is known to be gone (`adapters/store/claims`)
        or whose heartbeat is older than `stalled_before`; report what other live runs hold."""
        ...

    def wait_for_events(self, timeout: float, stop: threading.Event) -> bool:
        """Wait until new events are stored (by any process), `timeout` seconds pass, or
        `stop` is set. True when woken by new events; backends that cannot tell return
        False after the wait and callers poll."""
        ...

    def earlier_open_job(self, job_id: str) -> bool:
        """Whether the job's subject has an earlier job still pending or running: a
        subject's jobs are decided in the order they were created."""
        ...

    def heartbeat(self, now: datetime) -> None:
        """Mark every job this store has claimed and holds as still being worked on."""
        ...

    def finish_job(self, job_id: str, now: datetime, attempts: int | None = None) -> None:
        """Mark a job this store holds done; `ClaimLost` if it was taken back meanwhile (so a
        caller inside the job's transaction rolls its writes back). `attempts`, the job's
        count when it was claimed, names the claim: a job taken back and claimed again by
        the same store is not the same claim."""
        ...

    def fail_job(
        self,
        job_id: str,
        error: str,
        now: datetime,
        retry_at: datetime | None,
        attempts: int | None = None,
    ) -> None: ...
    def release_jobs(self, job_ids: Sequence[str], now: datetime) -> None:
        """Put jobs this store claimed and never started back to pending."""
        ...

    def requeue_jobs(self, project: str | None, now: datetime) -> int:
        """Put every done or failed job back to pending (replay). Returns how many."""
        ...

    def add_job_usage(self, job_id: str, usage: LLMUsage) -> None:
        """Add model calls and tokens to what a job has cost."""
        ...

    def job(self, job_id: str) -> Job: ...
    def jobs(self, project: str | None = None) -> list[Job]: ...

    # -- reads for adjudication --------------------------------------------------------------
    def facts_by_ids(self, project: str, fact_ids: Sequence[str]) -> list[Fact]:
        """The project's facts among `fact_ids`, any status; unknown ids are left out."""
        ...

    def pass_cursor(self, project: str, subject: str, pass_name: str) -> str | None:
        """Where `pass_name` stopped in the scope's append-only stream (derive's votes, topics'
        events; None: it never moved); a plan moves it (`MoveCursor`). Passes that read
        memories use the watermark (`unmarked_memories`) instead."""
        ...

    def unmarked_memories(self, project: str, subject: str, pass_name: str) -> list[Fact]:
        """The extraction watermark's backlog (`core.watermark`): the scope's live memories
        that `pass_name` has no mark of their present text for (new, or their text changed),
        least recently reinforced first; a plan marks them (`MarkFacts`)."""
        ...

    def fact_marks(self, project: str, pass_name: str, fact_ids: Sequence[str]) -> dict[str, str]:
        """The signatures `pass_name` marked the facts among `fact_ids` with (unmarked ones
        are left out)."""
        ...

    def rules(self, project: str, subject: str | None) -> list[Rule]:
        """The rules of a subject (of every subject of the project with None), by subject,
        then oldest first; a plan adds one (`AddRule`), nothing revises one."""
        ...

    def rule_scopes(self, projects: Sequence[str], threshold: int) -> list[tuple[str, str]]:
        """(project, subject) of every scope holding an active memory re-observed at least
        `threshold` times, in order; only those of `projects` unless it is empty."""
        ...

    def memory_scopes(self, projects: Sequence[str]) -> list[tuple[str, str]]:
        """(project, subject) of every scope holding two or more active memories, in order;
        only those of `projects` unless it is empty."""
        ...

    def votes(self, project: str, subject: str, after: str | None, limit: int) -> list[Observation]:
        """A scope's votes (observations with outcome `vote`) recorded after the observation
        id `after` (None: from the first), oldest first, at most `limit`."""
        ...

    def vote_scopes(self, projects: Sequence[str]) -> list[tuple[str, str]]:
        """(project, subject) of every scope holding votes, in order; only those of
        `projects` unless it is empty."""
        ...

    def subjects(self, project: str) -> list[str]:
        """The project's subjects (those with stored events), in order."""
        ...

    def derive_invalidations(
        self, project: str | None, subject: str | None, since: datetime
    ) -> list[tuple[str, str, datetime]]:
        """(project, subject, world time) of each fact the derive pass closed after `since`
        (its `valid_to`), of one subject, of a project (`subject` None) or of every project
        (both None), in that order."""
        ...

    def tombstone_scopes(self, projects: Sequence[str]) -> list[tuple[str, str]]:
        """(project, subject) of every scope holding a superseded or retracted fact (what
        prune decides about), in order; only those of `projects` unless it is empty."""
        ...

    def facts_by_identity(self, project: str, subject: str, keys: Sequence[str]) -> list[Fact]:
        """Every non-retracted fact whose identity key is in `keys`, any status."""
        ...

    def active_facts_by_predicate(
        self, project: str, subject: str, predicates: Sequence[str]
    ) -> list[Fact]:
        """Active state facts of these predicates, whatever their qualifiers."""
        ...

    def memories_by_norm(
        self, project: str, subject: str, norm_hashes: Sequence[str]
    ) -> list[Fact]:
        """Live memory facts whose normalised text hash is in `norm_hashes`."""
        ...

    def facts_with_sources(
        self, project: str, subject: str, event_ids: Sequence[str]
    ) -> list[Fact]:
        """Facts (any status) that name one of these events among their sources."""
        ...

    def nearest_facts(
        self, project: str, subject: str, vectors: Vector, k: int, model_id: str
    ) -> list[list[Neighbour]]:
        """For each row of `vectors`, the k nearest active state facts of the subject whose
        identity vector was made by `model_id`, nearest first."""
        ...

    def recall_words(
        self, scope: RecallScope, terms: Sequence[str], limit: int
    ) -> list[tuple[str, float]]:
        """The lexical arm of search: facts of the scope holding any of `terms` (as
        `core.recall.query_terms` gives them), best BM25 first, with their score."""
        ...

    def recall_nearest(
        self, scope: RecallScope, vector: Vector | Callable[[], Vector], k: int
    ) -> list[Neighbour]:
        """The vector arm of search: the k facts of the scope whose recall vector, made by
        the scope's model, is nearest `vector`, nearest first. `vector` may be a function
        that returns it (a question still being embedded): the store then does what needs
        no vector first, and calls it once, or not at all when there is nothing to search."""
        ...

    def aliases(self, project: str, predicates: Sequence[str]) -> dict[str, Alias]: ...
    def conflicts_for(self, project: str, subject: str, keys: Sequence[str]) -> list[ConflictSet]:
        """The open and resolved sets of these names, oldest first (`_adoption_undone`)."""
        ...

    def seen_claims(self, event_ids: Sequence[str]) -> set[tuple[str, str]]:
        """(event_id, claim_hash) pairs that already have an observation."""
        ...

    def active_facts(self, project: str, subject: str, limit: int) -> list[Fact]:
        """Active state facts of the subject, most recently reinforced first."""
        ...

    def observations_for_events(self, project: str, event_ids: Sequence[str]) -> list[Observation]:
        """Every observation recorded for these events."""
        ...

    def facts_to_reembed(
        self, model_id: str, project: str | None, after_id: str | None, limit: int
    ) -> list[Fact]:
        """Active state facts (of one project, or all) whose identity vector is missing or
        was made by another model than `model_id`, in id order after `after_id`."""
        ...

    def replace_identity_vectors(self, model_id: str, vectors: Sequence[IdentityVector]) -> None:
        """Give these facts identity vectors made by `model_id`, in place of any other."""
        ...

    def prune_vector_log(self, keep: int | None = None) -> int:
        """Delete all but about the newest `keep` rows (default `VECTOR_LOG_KEEP`) of the
        log that in-memory vector indexes catch up from; returns how many went. An index
        whose mark they were newer than is built again when next searched."""
        ...

    # -- writes (inside `serialised`) --------------------------------------------------------
    def apply(self, plan: Plan, job_id: str | None, audit: Sequence[AuditEntry]) -> None:
        """Write every action of an already validated plan and its audit entries."""
        ...

    # -- embedding cache ---------------------------------------------------------------------
    def cached_embeddings(self, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]: ...
    def cache_embeddings(self, model_id: str, vectors: dict[str, Vector]) -> None: ...

    # -- extraction cache --------------------------------------------------------------------
    def cached_extractions(self, extractor: str, event_ids: Sequence[str]) -> dict[str, list[Any]]:
        """The raw candidates `extractor` (prompt version and model) proposed per event."""
        ...

    def cache_extractions(
        self, extractor: str, answers: dict[str, list[Any]], now: datetime
    ) -> None: ...

    def forget_extractions(self, project: str | None) -> int:
        """Drop the kept model answers of a project's events (all when None): the next
        extraction asks again. Returns how many were dropped."""
        ...

    # -- queries -----------------------------------------------------------------------------
    def fact(self, project: str, fact_id: str) -> Fact:
        """The fact with this id in this project; `NotFound` for an id of another project,
        exactly as for one that does not exist."""
        ...

    def ids_with_prefix(self, table: IdTable, project: str, prefix: str, limit: int) -> list[str]:
        """Up to `limit` ids of the project's facts or conflict sets that begin with `prefix`
        (lower-case hex; anything else matches nothing), in id order."""
        ...

    def facts(
        self,
        project: str,
        subject: str | None,
        include_retired: bool,
        as_of: datetime | None,
    ) -> list[Fact]: ...
    def audit_for(self, project: str, fact_id: str) -> list[AuditEntry]: ...
    def audit(self, project: str, subject: str | None, limit: int) -> list[AuditEntry]:
        """The latest `limit` audit entries of a project (or one subject), oldest first."""
        ...

    def fact_changes_after(
        self, project: str, subject: str | None, after: datetime
    ) -> list[AuditEntry]:
        """The audit entries of fact actions (`*_fact`) of a project, or one subject, made
        after `after`, oldest first."""
        ...

    def observations_for(self, project: str, fact_id: str) -> list[Observation]: ...
    def conflict(self, project: str, conflict_id: str) -> ConflictSet: ...
    def conflicts(
        self, project: str, subject: str | None, status: ConflictStatus | None
    ) -> list[ConflictSet]: ...
    def counts(self, project: str | None) -> StoreCounts: ...
    def iter_events(self, project: str | None, subject: str | None = None) -> Iterator[Event]: ...
    def erasable(self, project: str, subject: str | None) -> dict[str, int]:
        """The rows an erase of the subject (every subject with None) would delete, by kind:
        events, facts, observations, conflicts, jobs, audit."""
        ...

    def forget_erased(self) -> None:
        """After an erase, outside any transaction: leave no copy of erased rows in the
        database's own files where the backend can (SQLite empties its write-ahead log)."""
        ...

    # -- reads for procedures and topics (their writes are plan actions: `core.cortex_plan`) --
    def action_events(self, project: str, subject: str) -> list[Event]:
        """The subject's events that record an action, in (occurred_at, id) order."""
        ...

    def action_scopes(self, projects: Sequence[str]) -> list[tuple[str, str]]:
        """(project, subject) of every scope with an action event, in order; only those of
        `projects` unless it is empty."""
        ...

    def procedures(
        self, project: str, subject: str | None, status: ProcedureStatus | None = None
    ) -> list[Procedure]:
        """A subject's procedures (every subject's with None), of one status or all."""
        ...

    def event_scopes(self, projects: Sequence[str]) -> list[tuple[str, str]]:
        """(project, subject) of every scope with an event, in order."""
        ...

    def events_recorded_after(
        self, project: str, subject: str, after: tuple[datetime, str] | None, limit: int
    ) -> list[tuple[Event, bool]]:
        """The subject's events recorded after `after` (recorded_at, id), in that order, at
        most `limit`, each with whether a job holding it is still to run."""
        ...

    def mentions(self, project: str, subject: str) -> list[Mention]:
        """Every entity the subject's events name, by event."""
        ...

    def topics(
        self, project: str, subject: str | None, include_retired: bool = False
    ) -> list[Topic]:
        """A subject's topics (every subject's with None), active ones only unless asked."""
        ...
