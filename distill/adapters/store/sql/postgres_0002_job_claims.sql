-- Who holds a running job. `claim_token` names the store that claimed it (one per open
-- store), so that only the claimer may finish, fail or release it; it also names the
-- session-level advisory lock that store holds while it is connected, so that a dead
-- connection frees its jobs at once. `claim_host`, `claim_pid` and `claim_started` (the
-- process's start time, seconds since the epoch: a pid alone may be reused) say which process
-- that is, so that a run on the same host can tell at once that the claimer is gone.

ALTER TABLE jobs ADD COLUMN claim_token text;
ALTER TABLE jobs ADD COLUMN claim_host text;
ALTER TABLE jobs ADD COLUMN claim_pid integer;
ALTER TABLE jobs ADD COLUMN claim_started double precision;
ALTER TABLE jobs ADD COLUMN claimed_at timestamptz;
