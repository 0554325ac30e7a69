-- Reserved for another branch's migration (issue 16's parallel work): this placeholder only keeps
-- the numbering without gaps on this branch. Delete it when that branch's file is merged.
SELECT 1;
