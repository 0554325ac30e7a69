-- A third kind of conflict set: `identity`, two facts under two predicate names that are
-- probably one attribute (distill/core/attribute_match.py). Both stay active and are served
-- as contested until a person or a model says whether they are one attribute.

ALTER TABLE conflicts DROP CONSTRAINT conflicts_kind_check;
ALTER TABLE conflicts ADD CONSTRAINT conflicts_kind_check
    CHECK (kind IN ('conflict', 'quarantine', 'identity'));
