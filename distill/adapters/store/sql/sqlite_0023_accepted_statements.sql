-- The statements a person accepted when they kept a fact from a conflict set.
--
-- Keeping a held value accepts the statements behind it, whatever their sources' trust: an
-- untrusted statement a person kept is served. A late change can later split that fact, and
-- the part after the change is then a new fact whose statements must be told apart: those
-- the person saw when deciding (served again after the change), and those consolidated
-- since, which nobody accepted (held for their source). The set records the kept fact's
-- source events at the decision (`ConflictSet.accepted_event_ids`), a JSON list; NULL when
-- nothing was kept.
--
-- Sets resolved before this migration keep NULL: which statements their kept fact had then
-- is not recorded anywhere (its sources now may include later ones), so no statement of
-- theirs is taken for accepted, as before.

ALTER TABLE conflicts ADD COLUMN accepted_event_ids TEXT;
