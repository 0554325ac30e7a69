"""The histories of scripts/hygiene_search.py that once broke an invariant replay clean.

Each seed is one random history of claims from every trust level, a person's decisions and
the hygiene passes, checked after every step (scripts/hygiene_checks.py lists what). These are
the seeds that found a class of violation, kept so that a change to the engine that brings
one back fails here and not only in a search someone has to remember to run. Seed 652601
found, in session 41, a late reinforcement's trust check firing inside a split (the plan
left two active facts and the job failed on every run)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "hygiene_search.py"
SEEDS = [2, 165, 349, 506, 2850, 5530, 8347, 28179, 100352, 200113, 204066, 400906, 652601]
# Class 10 (session 43): an untrusted source's statements served.
SEEDS += [700000, 700085, 700114, 701386, 710117, 742257, 781422]
# Classes 11 and 12 (session 43): trust lost in the judge's and dedupe's merges; a job that
# failed on every run (the plan writer), found by the replay that ends each history.
SEEDS += [720003, 720150, 731106]
# Class 13 (found in session 43, fixed in 44): a less trusted change held against a trusted
# value made current when late trusted statements of that value and of an older one arrive.
SEEDS += [802880]
# Class 14 (session 44): a late trusted restatement left a less trusted change a version
# between a value and its restatement.
SEEDS += [805156]
# Classes 15 and 16 (session 44): a version a late statement made more trusted stayed
# replaced when its less trusted replacement held a value; a restatement made earlier in a
# job was not on record for a change dated before it later in the job.
SEEDS += [820407, 821688]
# Class 17 (session 44): a late trusted statement left a less trusted change with a stated
# end a version when a gap followed it before the value's restatement.
SEEDS += [841825]
# Classes 18 and 19 (session 45): a late trusted statement left a less trusted change a
# version when the value before it held a value for its source; a split left the restated
# part's statements on record as the first part's, for a late change in the same job.
SEEDS += [864961, 873645]
# Class 20 (session 45, found at b505044 before it landed): a change at the instant of the
# create that held a less trusted first value replaced it across a version a person had
# accepted before that create.
SEEDS += [899680]
# Classes 21 and 22 (found in session 45, present at 29c9214): a less trusted change left a
# version after a trusted value (898792, open); a person's resolution left an open identity
# set holding a retracted fact (898222): the set had kept a contested member that a more
# trusted value held back, where it follows the current version (closed in session 46).
SEEDS += [898222, 898792]
# Classes 23 and 24 (found in session 46, present at 165444a): a late trusted value that a
# less trusted change had replaced left the third party's return after it current (938826);
# a version overruled where it began, dated earlier by a late claim, kept the end of its
# empty interval past the next version's start (928288).
SEEDS += [928288, 938826]
# Class 25 (found in session 46, present at 165444a): a late value filed before a replaced
# create ended where that create's successor began, across a value a person kept between.
SEEDS += [965063]
# Class 26 (found in session 46, present at 165444a): a late value moved the start of a
# version a person had replaced to the change that would have adopted it, after its end.
SEEDS += [984783]
# Class 27 (found in session 47, present at ea40a23): a late trusted period left current a
# less trusted change that held a statement of the period's own value.
SEEDS += [994886]
# Class 28 (found in session 47, present at ea40a23): a late trusted first value ran
# across a value a person kept between two versions that its links skip.
SEEDS += [997794]
# Class 29 (found in session 47, present at ea40a23): a late trusted period over a less
# trusted change that ended on its own, then followed by the change's value.
SEEDS += [1026335]
# Class 30 (found in session 47, present at ea40a23, closed in 48): after a person retracted
# a current value, a late change that split the version before it, restated there only by a
# less trusted source, was left with no end beside the value current after the retraction.
SEEDS += [1047906]
# Class 31 (found in session 49 at 11938d3, closed in 8a069fa): a late trusted first value
# split the version after it at an untrusted change (`FirstValues._earlier_than_rival`),
# which became the current version.
SEEDS += [1104145]
# Class 32 (found in session 49, present at c326d92, closed in 50): a person turned down
# a candidate that a value set also held, which stayed open over it; keeping it there then
# retired the current version for a fact never true (test_shared_candidates.py).
SEEDS += [1313915]
# Class 33 (found in session 50, present at 5886763): a late trusted value held again a
# value a person had kept (`LateArrivals._replaced_create`); then the current version ran
# across the kept one.
SEEDS += [1318351]
# Class 34 (found in session 50, present at 5886763, open): a late change split a value a
# person had kept and held its part after the change in quarantine for its source; a late
# trusted restatement then left the less trusted change current.
SEEDS += [1319028]
# Class 35 (found in session 50, present at 5886763): a late claim was held against a value
# a person turned down for one they retracted since (`timeline.overruled` saw no successor).
SEEDS += [1321793]
# Class 36 (found in session 50 by its new check, present at 5886763): a claim's rule held
# again, as a candidate, a value a person had kept: a more trusted create held it in
# quarantine (1329129, the commonest), a late trusted statement before it did (1327744,
# 1327587), a late first value restated by it (1328382), a late value before the one it
# replaced (1328462). Each is one guard (`WorkingSet._kept_by_decision`).
SEEDS += [1329129, 1327744, 1327587, 1328382, 1328462]
# Found by session 50's last run (at db5c421, present at 5886763): a claim's rule still
# holds a value a person kept (1341788, 3 of 11,128 histories, open), a less trusted change
# displaces a version (1347999, open); a late claim was held against a value turned down at
# the instant of the one kept over it, taken for a version of that instant (1343713, closed
# in session 50: `timeline.overruled` asks whether the successor names it as the version
# it followed).
SEEDS += [1341788, 1347999, 1343713]
# Closed in session 51, the last of class 36 (a person's kept value held again as a
# candidate): a trusted create held every less trusted version before the current one,
# back past a value a person kept (1341788: `TrustOrder._less_trusted_before`); a late
# restatement that made a version more trusted held the change after it, which a person
# had kept (1352351: `LateTrust._after_the_change`).
SEEDS += [1352351]
# Closed in session 51: a late statement made a version more trusted than the change that
# replaced it, itself replaced by a third value; the change stayed a version displacing
# the more trusted value (1347999: `LateTrust._held_before_next` holds it).
# Class 34 closed in session 51: the set a person resolves records the statements they
# accepted (`ConflictSet.accepted_event_ids`, schema 23), so the part of a kept value after
# a late change is served when it holds one of them (1319028) and held for its source when
# it holds only statements consolidated since (1330743, which the first fix broke).
SEEDS += [1330743]
# Found by session 51's first run (present at e85e674): a value held in conflict, dated by a
# third party's statement, became a return to an older value and replaced the person's
# current value from that date (1361083: `Rivals._now_a_return` reads the trust its date
# comes from, `_first_trust`).
SEEDS += [1361083]
# Found by session 51's second run (present at e85e674): a change adopted a value held in
# conflict from its first statement, an untrusted one that could not have replaced the
# current value (1374707: `Rivals._adopt` begins it with the first statement that could).
SEEDS += [1374707]
# Also from that run (present at e85e674): a person kept a value that began at the instant
# of the current one, which it turned down, and named it as the version it followed; a late
# trusted first value took it for a version and held it in quarantine again (1375924: the
# kept value follows the version before, `resolve._turned_down`).
SEEDS += [1375924]
# Found by session 51's third run: a late trusted first value held in quarantine a value a
# person kept, as a less trusted version before a value a person accepted (1380248, present
# at e85e674: `FirstValues._held_until_accepted` stops at it); and the first record of
# accepted statements counted those of a current value a person kept, so the untrusted part
# of it a split left was served (1380931, made in session 51: only a held value made
# current records them).
SEEDS += [1380248, 1380931]
# Found by session 51's last runs (at ca0347c, both present at e85e674): a late statement
# made a version more trusted than a chain of less trusted versions after it, and only the
# last could be held (1393942: `LateTrust._trust_raised` holds the chain); and a late
# change filed between a value a person kept and the next version, at the kept value's
# instant, left a statement of its own value held against the kept one, now turned down
# ("live open sets"; 1505468: the held value restated the change, `_held_after`,
# tests/unit/test_late_change_restated.py).
SEEDS += [1393942, 1505468]
# Found by session 51's final runs (at 4759b26, present at e85e674): a trusted 3 of day
# 29, then in one run a trusted 3 for days 13-14, a semi-trusted 3 of day 3 and a
# semi-trusted change to 5 for days 11-17; the first part of 3 ended trusted, replaced by
# the semi-trusted 5 (1405180: a version given an end kept the statements of the version
# restated after it, `Rivals._given_an_end`; tests/unit/test_restated_after_end.py).
SEEDS += [1405180]
# Found by session 52's first run (at 21ec34a, present at e85e674): a late trusted statement
# made a replaced version more trusted, but a third party's restatement of its value, held
# against the semi-trusted value that replaced it, kept that value current (1411524:
# `RaisedTrust._take_in_restatements`; tests/unit/test_restatement_taken_in.py).
SEEDS += [1411524]
# And by its third (at 21ec34a, present at e85e674): a person kept a held value, which
# turned down a version that began after it, and a third party's statement held against
# that version stayed in a set open over it (1538916: the set holds the kept value instead,
# `resolve._held_against_kept`; tests/unit/test_turned_down.py).
SEEDS += [1538916]
# Found by session 52's fourth and fifth runs (at 621fc5b, both present at 2721841): an
# untrusted value held against a pinned version, only for the pin, became current when the
# version was unpinned and a trusted restatement ended it (1420998: an untrusted one is held
# after the end, `Rivals._held_after_end`;
# tests/unit/test_held_while_pinned.py); and the check's own mistake, a candidate a person
# kept into history that a later claim of its instant emptied counted as turned down
# (1419327: the earlier of two versions of one instant; `hygiene_checks.turned_down`).
SEEDS += [1420998, 1419327]
# Found by the refined check's first runs (at e9b7fb2, 11 histories; all present at
# 2721841, where the check did not count them): a version a person's decision turned down
# stayed in a set holding a value said before the kept one began (1560854), inside a kept
# value filed into history (1425121), or at the instant it ends (1561424); such a set
# holds the kept value (`resolve._held_against_kept`).
SEEDS += [1560854, 1425121, 1561424]
# Found by session 53's first run of its new rules (on its working tree, uncommitted): a
# late statement that made a version more trusted and voided the end a less trusted one
# gave it walked across the gap after it to the next version, past a value a person kept
# there, and made the version current over it (1589450: a gap is crossed only when no
# version lies in it, `TrustOrder._next_of`).
SEEDS += [1589450]
# And by its third (at 5c7b557): a trusted create held a third party's value as the first
# since a pinned version's end, and linked the pinned version to itself, a change the pin
# forbids; the job failed on every run (1447309: a pinned version before the gap keeps the
# rule from applying, `TrustOrder._less_trusted_before`).
SEEDS += [1447309]
# Found by session 54's first run (both present at f0f32cb, the session's start): a
# restatement whose stated end fell inside another statement's period let a third party's
# value held against the version follow that end and displace it (1466342: the version
# holds to its own end, `Rivals._given_an_end`); and a third party's period told late was
# held in quarantine against a version a person's decision had turned down, which stays in
# an open set (1470967: the value kept into history named the version it turned down,
# which then read as the earlier of two versions of one instant; it names the one before,
# `resolve._turned_down`, session 55); and a late trusted statement of the value in force,
# stating an end before the third party's change that replaced it, whose statements the
# snapshot had not loaded, took the change's start for the version's own end and left the
# change displacing the now trusted version (1471067: a version the snapshot loaded open
# stated no end, `WorkingSet._stated_end`, session 55).
SEEDS += [1466342, 1470967, 1471067]
# Found by session 55's second run (present at 310f192): a late statement ending a value
# where a third party's change began held that change (1637445: it follows the end).
SEEDS += [1637445]
# Found by session 58's second run, and present at 7f82373, the session's start: a late
# trusted `create` held a less trusted change in quarantine as the first value after less
# trusted versions, and the version that change had replaced kept it as its successor; a
# trusted period of that version's value told later made it trusted, replaced by a held
# value (1680764: the versions before are held too, as in order,
# `TrustOrder._over_less_trusted`).
SEEDS += [1680764]
# Found by session 59's second run, and present at 7796e57, the session's start: a trusted
# period of a version's value, told late and taken in by the version a less trusted change
# had split off, made it trusted while the change still replaced it (1687772: a raised
# trust is asked what it undoes on that path too, `LateArrivals`).
SEEDS += [1687772]
# Found by session 59's run on that fix, present at 7796e57 too: a late change adopted the
# value held against a version, which took the change's trust, and the less trusted version
# after it still replaced it (1700228: the adopting path asks what the raised trust undoes).
SEEDS += [1700228]
# Found by session 59's last runs, on its final code and at 7796e57 alike, fixed in session
# 60: a pin lifted after a less trusted period of another value was told, then a trusted
# value said again undated: the period stayed a version beside the trusted one, two values
# at once (1540638, "one value at a time": a held restatement made current holds the less
# trusted versions inside its days, `TrustOrder._less_trusted_before`); a set a person
# resolved, then a trusted change and a trusted period told late in one job: settling the
# series held the value the person kept (1708775, "decisions stand": a series holding a
# kept value is left as it is, `Series._settle_series`).
SEEDS += [1540638, 1708775]
# Found by session 60's runs on its final code, present at its start too: a late trusted
# restatement made a replaced version trusted, and the less trusted versions after it were
# taken back only up to a gap, so one replacing it stayed (1729830, "less trusted displaces
# nothing": `RaisedTrust._yielding_to` walks past a version's stated end to the next).
SEEDS += [1729830]
# Found by session 61's second run, present at 5fcae7c, its start: a change to a value held
# against the current version beside another held value did not adopt it (only the first
# set holding the version was looked in); it stayed held, and a version filed later between
# the two took it into a set against a value nobody held (1742363, "live open sets":
# `Rivals._held_rival` and a repeated held value look in every set, `WorkingSet._value_sets`).
SEEDS += [1742363]
# Found by session 63's second run, made by its own first rules: a more trusted value that
# took a value held alone as its row after a version's gap linked that version to the row
# it would have made, which was never written ("receipts": `TrustOrder._over_less_trusted`
# links the version once `HeldAlone._create_version` has said which row is the value's).
SEEDS += [1766699]
# Found by session 63's second run, present at ed91dec and at ea2e91b (before session 62's
# rules): a third party's `4` of day 7 replaces a `3` of day 6 that a late semi-trusted
# restatement made more trusted, in a history where a third value made the two events and a
# person resolved their sets ("less trusted displaces nothing"). Not yet understood.
SEEDS += [1766597]
# Found by session 63's third run, present at ed91dec: a third party's `5` of day 10 (a
# change) arrives before the person's `5` of days 4-13, filed late around it; the person's
# version ends where the third party's row begins ("less trusted displaces nothing"), where
# in world order the third party only restated it. The row exists before the claim that
# would make it a restatement: a fact that would have to be deleted.
SEEDS += [1772372]
# Seeds of classes still open (README, Known limits), each a strict xfail.
OPEN: set[int] = {1766597, 1772372}


def search() -> ModuleType:
    if str(SCRIPT.parent) not in sys.path:  # as when it runs as a script: its checks beside it
        sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("hygiene_search", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "seed",
    [
        pytest.param(s, marks=pytest.mark.xfail(strict=True, reason="an open class"))
        if s in OPEN
        else s
        for s in SEEDS
    ],
)
def test_a_history_that_once_broke_an_invariant_replays_clean(seed: int) -> None:
    found, steps = search().play(seed)
    assert steps > 0
    assert found is None, f"seed {seed}: {found}"
