-- Who holds a running job. `claim_token` names the store that claimed it (one per open
-- store), so that only the claimer may finish, fail or release it; `claim_host`, `claim_pid`
-- and `claim_started` (the process's start time, seconds since the epoch: a pid alone may
-- be reused) say which process that is, so that a run on the same host can tell at once that
-- the claimer is gone instead of waiting for its heartbeat to go stale.

ALTER TABLE jobs ADD COLUMN claim_token TEXT;
ALTER TABLE jobs ADD COLUMN claim_host TEXT;
ALTER TABLE jobs ADD COLUMN claim_pid INTEGER;
ALTER TABLE jobs ADD COLUMN claim_started REAL;
ALTER TABLE jobs ADD COLUMN claimed_at TEXT;
