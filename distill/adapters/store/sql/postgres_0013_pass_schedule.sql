-- The worker's schedule: one row per scheduled pass of one scope (a project, `scope` '' ; or
-- a subject of it, for a pass run per subject). `generation` counts the runs that ended; a
-- worker takes the lease (`lease_owner` until `lease_expires_at`) only for the generation it
-- read, so that two workers never run the same pass of the same scope for the same due time.
-- `last_clean_at` moves only after a clean run (the checkpoint): the next due time is counted
-- from it, and an unclean run (an error, a cap, a budget stop) leaves it, so that the pass
-- stays due and is retried after `retry_at`. `last_report` is the run's report, counts only
-- (JSON); `health` is ok / degraded / failing (distill/core/schedule.py says when).

CREATE TABLE pass_schedule (
    project           TEXT NOT NULL,
    scope             TEXT NOT NULL DEFAULT '',
    pass_name         TEXT NOT NULL,
    generation        BIGINT NOT NULL DEFAULT 0,
    created_at        TIMESTAMPTZ NOT NULL,
    due_at            TIMESTAMPTZ NOT NULL,
    retry_at          TIMESTAMPTZ,
    last_run_at       TIMESTAMPTZ,
    last_clean_at     TIMESTAMPTZ,
    last_report       JSONB,
    health            TEXT NOT NULL DEFAULT 'ok' CHECK (health IN ('ok', 'degraded', 'failing')),
    last_error        TEXT,
    failures          INTEGER NOT NULL DEFAULT 0,
    runs              BIGINT NOT NULL DEFAULT 0,
    lease_owner       TEXT,
    lease_expires_at  TIMESTAMPTZ,
    PRIMARY KEY (project, scope, pass_name)
);
