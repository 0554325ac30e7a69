"""Events and the job queue, over named SQL: appending events, claiming, reclaiming,
finishing and failing jobs, for every backend (see `sql_base` for what a backend supplies,
and `claims` for who holds a running job and when it is taken back)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from distill import ids
from distill.adapters.store import rows
from distill.adapters.store.claims import process_alive
from distill.adapters.store.sql_base import DB, SqlBase
from distill.core.models import Event, Job
from distill.errors import ClaimLost, NotFound
from distill.ports import Claim, LLMUsage, Owner, Reclaimed


class SqlJobs(SqlBase):
    """The events and jobs part of `distill.ports.Store`."""

    # -- events and jobs ---------------------------------------------------------------------------
    def append_events(self, events: Sequence[Event], now: datetime) -> list[tuple[Event, bool]]:
        c = self.codec
        stamp = c.time(now)
        params = [rows.event_params(e, c) for e in events]  # refuses naive datetimes up front
        stored: list[tuple[Event, bool]] = []
        with self._tx() as db:
            # In a fixed order, so that two batches naming the same subjects cannot deadlock.
            # Not the consolidation lock: an agent never waits for a consolidation.
            for project, subject in sorted({(e.project, e.subject) for e in events}):
                self._lock(db, "append", project, subject)
            for event, event_row in zip(events, params, strict=True):
                if self._run(db, "insert_event", event_row).rowcount == 0:
                    key = {k: event_row[k] for k in ("project", "idempotency_key")}
                    found = self._one(db, "event_by_key", key)
                    stored.append((rows.event_from_row(found, c), False))
                    continue
                scope = {"project": event.project, "subject": event.subject, "now": stamp}
                pending = self._run(db, "pending_job_for_subject", scope).fetchone()
                if pending is None:
                    job_id = c.id(ids.new_id())  # sorts in creation order: ties on time are fair
                    self._run(db, "insert_job", {**scope, "id": job_id})
                else:
                    job_id = pending["id"]
                    self._run(db, "touch_job", {"id": job_id, "now": stamp})
                link = {"job_id": job_id, "event_id": event_row["id"]}
                self._run(db, "attach_event_to_job", link)
                stored.append((event, True))
            if any(new for _, new in stored):
                self._events_stored(db)
        return stored

    def events(self, project: str, ids: Sequence[str]) -> list[Event]:
        """The project's stored events among `ids`, in (occurred_at, id) order."""
        if not ids:
            return []
        found = self._read("events_by_ids", {"project": project, "ids": self._array(ids)})
        return [rows.event_from_row(r, self.codec) for r in found]

    def claim_jobs(
        self,
        now: datetime,
        limit: int,
        max_attempts: int,
        min_events: int = 1,
        waited_before: datetime | None = None,
    ) -> list[Job]:
        if limit <= 0:
            return []
        stamp = self.codec.time(now)
        self._hold_claims()
        params = {
            "now": stamp,
            "limit": limit,
            "max_attempts": max_attempts,
            "min_events": min_events,
            "waited_before": self.codec.time(waited_before or now),
        }
        with self._tx() as db:
            due = self._run(db, "due_jobs", params).fetchall()
            if not due:
                return []
            found = self._array([self.codec.read_id(r["id"]) for r in due])
            owner = self.owner
            claim = {"token": owner.token, "host": owner.host, "pid": owner.pid}
            claim["started"] = owner.started
            self._run(db, "mark_jobs_running", {"ids": found, "now": stamp, **claim})
            return self._load_jobs(db, "jobs_by_ids", {"ids": found})

    def reclaim(self, now: datetime, stalled_before: datetime, max_attempts: int) -> Reclaimed:
        """Take back the running jobs of claimers that are gone (see `claims`), and of any
        claimer whose heartbeat is older than `stalled_before`; say what is still held."""
        others = [c for c in self._running_claims() if c.owner.token != self.owner.token]
        gone = [c for c in others if self._claimer_gone(c.owner)]
        stamp, stalled_at = self.codec.time(now), self.codec.time(stalled_before)
        params = {"now": stamp, "max_attempts": max_attempts}
        with self._tx() as db:
            taken = 0
            if gone:
                tokens = self._array([c.owner.token for c in gone])
                taken = self._run(db, "reclaim_claims", {**params, "tokens": tokens}).rowcount
            stalled = self._run(
                db, "reclaim_stalled", {**params, "stalled_before": stalled_at}
            ).rowcount
        held = [c for c in self._running_claims() if c.owner.token != self.owner.token]
        return Reclaimed(tuple(gone), int(taken), int(stalled), tuple(held))

    def _running_claims(self) -> list[Claim]:
        claims = []
        for r in self._read("running_claims", {}):
            token = r["claim_token"] or ""  # a claim made before claims had owners
            host, pid, started = r["claim_host"] or "", r["claim_pid"] or 0, r["claim_started"]
            owner = Owner(token, host, pid, float(started or 0.0))
            claims.append(Claim(owner, int(r["jobs"]), self.codec.read_time(r["since"])))
        return claims

    def _claimer_gone(self, owner: Owner) -> bool:
        """Whether the owner of a claim is known to be gone: its session, where the backend
        can tell (that covers every host, and a live process whose connection died), else its
        process, on this host. Unknown owners are left to the lease."""
        if not owner.token:
            return False
        session_gone = self._session_gone(owner.token)
        if session_gone is not None:
            return session_gone
        return owner.host == self.owner.host and not process_alive(owner.pid, owner.started)

    def earlier_open_job(self, job_id: str) -> bool:
        return bool(self._read("earlier_open_job", {"id": self.codec.id(job_id)}))

    def heartbeat(self, now: datetime) -> None:
        """Mark every job this store holds as still being worked on."""
        self._write("heartbeat", {"token": self.owner.token, "now": self.codec.time(now)})

    def finish_job(self, job_id: str, now: datetime, attempts: int | None = None) -> None:
        params = {"id": job_id, "now": self.codec.time(now), "token": self.owner.token}
        self._claimed_job("finish_job", {**params, "attempts": attempts})

    def fail_job(
        self,
        job_id: str,
        error: str,
        now: datetime,
        retry_at: datetime | None,
        attempts: int | None = None,
    ) -> None:
        c = self.codec
        params = {"id": job_id, "error": error, "now": c.time(now), "retry_at": c.time(retry_at)}
        self._claimed_job("fail_job", {**params, "token": self.owner.token, "attempts": attempts})

    def _claimed_job(self, query: str, params: dict[str, Any]) -> None:
        """Change a job this store holds; raise `ClaimLost` if it holds it no longer."""
        with self._tx() as db:
            if self._run(db, query, {**params, "id": self.codec.id(params["id"])}).rowcount:
                return
            if not self._run(db, "jobs_by_ids", {"ids": self._array([params["id"]])}).fetchall():
                raise NotFound(f"no job {params['id']}")
        raise ClaimLost(
            f"job {params['id']} is no longer held by this run: it was taken back (its claim "
            "looked abandoned) and may be another run's now"
        )

    def add_job_usage(self, job_id: str, usage: LLMUsage) -> None:
        params = {
            "id": job_id,
            "calls": usage.calls,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
        }
        self._update_job("add_job_usage", params)

    def _update_job(self, query: str, params: dict[str, Any]) -> None:
        if self._write(query, {**params, "id": self.codec.id(params["id"])}) == 0:
            raise NotFound(f"no job {params['id']}")

    def release_jobs(self, job_ids: Sequence[str], now: datetime) -> None:
        if job_ids:
            params = {
                "ids": self._array(job_ids),
                "now": self.codec.time(now),
                "token": self.owner.token,
            }
            self._write("release_jobs", params)

    def requeue_jobs(self, project: str | None, now: datetime) -> int:
        return self._write("requeue_jobs", {"project": project, "now": self.codec.time(now)})

    def job(self, job_id: str) -> Job:
        with self._tx(write=False) as db:
            found = self._load_jobs(db, "jobs_by_ids", {"ids": self._array([job_id])})
        if not found:
            raise NotFound(f"no job {job_id}")
        return found[0]

    def jobs(self, project: str | None = None) -> list[Job]:
        with self._tx(write=False) as db:
            return self._load_jobs(db, "jobs_list", {"project": project})

    def _load_jobs(self, db: DB, query: str, params: dict[str, Any]) -> list[Job]:
        found = self._run(db, query, params).fetchall()
        if not found:
            return []
        read_id = self.codec.read_id
        event_ids: dict[str, list[str]] = {read_id(r["id"]): [] for r in found}
        for link in self._run(db, "job_event_ids", {"ids": self._array(list(event_ids))}):
            event_ids[read_id(link["job_id"])].append(read_id(link["event_id"]))
        return [rows.job_from_row(r, tuple(event_ids[read_id(r["id"])]), self.codec) for r in found]
