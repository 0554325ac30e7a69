-- A fact created from a claim stated as a change (`supersede`) that matched no known value
-- under another name: the value it replaced has not arrived yet, or is known under a name
-- nothing related. When an older value of a related attribute arrives later, it is judged
-- against this fact as if the change had come second (core/adjudicate.py), so that the two
-- arrival orders end alike (DESIGN invariant 8). Cleared once the fact joins an identity set.
--
-- The facts already stored are marked from their record, as the engine would have marked
-- them: a state fact whose creating observation says "new identity" for a `supersede` claim,
-- the first version of its identity, never a member of an identity set.

ALTER TABLE facts ADD COLUMN unpaired_change boolean NOT NULL DEFAULT false;

UPDATE facts SET unpaired_change = true
WHERE kind = 'state' AND supersedes_id IS NULL
  AND EXISTS (
      SELECT 1 FROM observations AS o
      WHERE o.fact_id = facts.id AND o.outcome = 'created' AND o.reason = 'new identity'
        AND o.claim ->> 'action' = 'supersede')
  AND NOT EXISTS (
      SELECT 1 FROM facts AS g
      WHERE g.project = facts.project AND g.subject = facts.subject
        AND g.identity_key = facts.identity_key AND g.recorded_at < facts.recorded_at)
  AND NOT EXISTS (
      SELECT 1 FROM conflicts AS c
      WHERE c.project = facts.project AND c.subject = facts.subject AND c.kind = 'identity'
        AND c.member_ids ? facts.id);
