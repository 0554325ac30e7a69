-- A placeholder for another branch's migration of this number: drop this file at merge.
SELECT 1;
