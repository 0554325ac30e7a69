-- A fact created from a claim stated as a change (`supersede`) that matched no known value
-- under another name: the value it replaced has not arrived yet, or is known under a name
-- nothing related. When an older value of a related attribute arrives later, it is judged
-- against this fact as if the change had come second (core/adjudicate.py), so that the two
-- arrival orders end alike (DESIGN invariant 8). The mark moves to each new version of the
-- attribute, and is cleared once a version joins an identity set or an older value of the
-- attribute's own name arrives.
--
-- The facts already stored are marked from their record, as the engine would have marked
-- them: the active version of an identity that began as "new identity" for a `supersede`
-- claim, with no version recorded before that one, none dated before it from a claim that
-- was not a change, and none ever in an identity set.

ALTER TABLE facts ADD COLUMN unpaired_change INTEGER NOT NULL DEFAULT 0;

UPDATE facts SET unpaired_change = 1
WHERE kind = 'state' AND status = 'active' AND identity_key IS NOT NULL
  AND EXISTS (
      SELECT 1 FROM facts AS first JOIN observations AS o ON o.fact_id = first.id
      WHERE first.project = facts.project AND first.subject = facts.subject
        AND first.identity_key = facts.identity_key
        AND o.outcome = 'created' AND o.reason = 'new identity'
        AND json_extract(o.claim, '$.action') = 'supersede'
        AND NOT EXISTS (
            SELECT 1 FROM facts AS g
            WHERE g.project = first.project AND g.subject = first.subject
              AND g.identity_key = first.identity_key AND g.recorded_at < first.recorded_at)
        -- a plain value dated before the change paired it; an earlier change did not
        AND NOT EXISTS (
            SELECT 1 FROM facts AS g JOIN observations AS e ON e.fact_id = g.id
            WHERE g.project = first.project AND g.subject = first.subject
              AND g.identity_key = first.identity_key AND g.valid_from < first.valid_from
              AND coalesce(json_extract(e.claim, '$.action'), 'create') <> 'supersede'))
  AND NOT EXISTS (
      SELECT 1 FROM facts AS v, conflicts AS c, json_each(c.member_ids) AS m
      WHERE v.project = facts.project AND v.subject = facts.subject
        AND v.identity_key = facts.identity_key
        AND c.project = facts.project AND c.subject = facts.subject AND c.kind = 'identity'
        AND stored_id(m.value) = v.id);
