"""The invariants scripts/hygiene_search.py checks after every step of a history, and what
the search found.

After every step (`check_step`), the first violation ending the history:

- nothing is lost: a fact disappears only when prune reports it deleted, never a live or
  pinned one; a decision a person is refused changes nothing;
- receipts: a superseded fact names a successor that exists, a retracted one has its audit
  entry with a reason, both have `retired_at`;
- one active state fact per identity and subject;
- one value at a time (DESIGN invariant 8, as `one_value_at_a_time` in
  tests/unit/test_properties.py): the versions ever true never overlap in world time;
- an automatic step (consolidation, a pass) leaves a pinned fact as it was; makes no fact
  active that only untrusted statements back, unless a person accepted them (the write
  gate); and retires no current fact for a successor less trusted than it (derive excepted:
  votes count alike; summarise too: a summary consumes, it contradicts nothing); and holds
  no value a person kept as a candidate again (a value or quarantine set's decision: an
  identity set's decides a name);
- a fact's value never changes in place (DESIGN invariant 7: a changed value is a new
  version, never a reinforcement);
- a dry run writes nothing (facts, sets, audit trail, jobs);
- every history ends by replaying every job (`Memory.replay`, then a consolidation), which
  changes no fact and no set (DESIGN invariant 4);
- no job fails, no consolidation, dedupe or prune reports an error, no step raises;
- events are never changed;
- an open identity set and an open set of memories hold only live facts (a value or
  quarantine set may hold the version a late claim was held against, by design), and no
  open set holds a value turned down (retracted, a candidate a decision did not keep, or a
  version a person's decision emptied).

Measured 2026-12-04, 40 minutes at 34a05f1, seeds 0 to 29,794: 29,795 histories, 730,155
steps (the open-set check then counted without ending a history, and counted value sets
too). Nine findings, each minimised to a repro; the seeds replay them here at 34a05f1. (1)
Two values at once from consolidation alone: five trusted supersedes of one attribute, one
stating a period (seed 506); fixed by feca36d. (2) summarise consumed both memories of an
open conflict set (seed 2); (3) judge merged two contested memories into each other (seed
165); (7) dedupe offline retired a contested memory (seed 2850): 2, 3 and 7 fixed by
60e80b5. (6) A value filed inside a pinned version after a retraction failed its job on
every run (seed 5530); fixed by 1f2dbfd. (4) An open identity set held a version a later
claim of the same consolidation run superseded, and judge_identities never asked about it
(seed 349); fixed by cf02273. (9) After a retraction, an untrusted claim that restated a
value after a stated period's end was made the active value ("the value was stated again
after its stated end") and two values were true at once (seed 8347; seed 100352 of three
minutes more, seeds 100,000 to 102,500); fixed by 6bc1bbd. Class 5 (not a check here, seen
while minimising 4): a third party's value and a trusted one of the same instant, or a
restatement a late trusted change splits, end differently by arrival order; session 41's
trust rules fix the shapes seen (`scripts/order_search.py --trust` measures the rest). (8)
derive elected a `vote` value under a name the identity judge joined to another, a version
overlapping the retired one (seed 28179); fixed in session 42 (derive counts a vote under
the name a claim of its name is filed under, `passes/derive._named`). Runs: `--minutes 10
--start 200000` at c0537de, 10,146 histories, 70 violations (69 of class 4, first seed
200113; one of 9, seed 204066); `--minutes 3` at cf02273 (`--start 300000`), 3,320
histories, 0; at 6bc1bbd (400000), 2,193 histories, 1 (seed 400906, fixed by 5a53946); at
5a53946 (500000), 3,616 histories, 0; session 41, eight runs of 3 minutes as its changes
landed (seeds 600000 to 673708, about 3,600 histories each): 0, but seed 652601 (9f4877b's
trust check fired inside a split; fixed by cebe205).
(10) Session 43 added the check "untrusted never served" (above) and it found, in its first
two minutes at 32fcf7c (seeds 700000 to 702353, 61 histories), four shapes of one class:
a third value reclassifying a quarantine set made its untrusted member an active event
(seed 700000), an untrusted restatement's stated end closed a more trusted version and a
late change then made it a version of its own (700085), likewise without the end (701386),
and derive elected untrusted votes (700114); and later a late change inside a version with
a stated end whose only later statement was untrusted (710117), and a change adopting an
untrusted value held against the current one from the untrusted date (742257, found by the
next check: it displaced the current value at that date; it begins with the change now).
All fixed in session 43 (tests/unit/test_untrusted_never_served.py). The check's other hits were
statements a person had accepted (a summary of such a memory, a split of such a value),
which it now leaves alone. (11) The check "less trusted displaces nothing" found the memory
judge superseding a person's memory with a third party's (720003) and merges leaving the
survivor's lower trust (720150); fixed in session 43 (a less trusted supersede is
contested; the survivor takes the best trust). (12) The replay that now ends every history
found a job that failed on every run (731106: a new fact made current, held when a late
change in the same job made another current, then current again: the plan writer inserted
it current where it was created, beside the other; fixed in session 43,
`plan_writer._final_versions`). Its other hits were the identity judge answering during the
replay (the model is down for that step now) and a successor after a stated end counted as a
displacement (not one). Runs in session 43: `--minutes 3 --start 730000`, 2,952
histories, 0; `--start 740000`, 2,927 histories, 1 (742257, above); `--minutes 5 --start
750000`, 3,744 histories, 2, both the check's own mistake (a successor that begins at the
end the fact's own statements gave it replaces nothing; 751182); `--minutes 10 --start
770000`, 8,813 histories, 0; `--minutes 3 --start 780000`, 1 (781422: a late change that
adopted the value held against a version whose only later statement was untrusted made
that statement a version; fixed like 710117); then `--minutes 3 --start 790000`, 2,633
histories, 0. (13) `--minutes 10 --start 800000` at 401bde8, 10,259 histories, 3 (first
seed 802880): a trusted 3 from day 25 and a semi-trusted change to 5 for days 29-33 (held
against it), then, late, trusted statements of 5 on day 8 and of 3 on days 18 and 19: the
semi-trusted 5 ended current from day 29, displacing the trusted 3 it was held against
(in world order it stays held). The late 3 split the 5 version and adopted the held 3; the
split held its restated part only when every restatement was untrusted. Fixed in session
44: it is held whenever no restatement could have displaced the change in world order
(`splits._restated_by_less_trusted`, the rule the open-ended case already used). The same
run at e2b6878, 10,439 histories, 2 (14; first seed 805156): a trusted red from day 23,
then a semi-trusted red from day 4 (red is trusted from day 4), then a semi-trusted blue for
days 23-27 (at that instant before red by its words: it split red, itself a version
between the parts), then, late, the person's red of day 18: in world order red was trusted
before blue and blue was held; blue stayed a version, ending where the trusted red began
again. Fixed in session 44 (`TrustOrder._rejoined`): blue is held and the restatement takes
the first part in, which stays as an empty receipt. `--minutes 10 --start 810000` at
a4f7869, 8,065 histories, 0. (15, 16) `--minutes 10 --start 820000` (with session 44's
first trust rules for late arrivals), 9,684 histories, 2. Seed 820407, present since at
least 4e692b6: a semi-trusted 4 from day 14, then in one job a semi-trusted change to 5
for days 24-26, an untrusted 3 for days 28-35 and the person's 4 of day 9: the late 4 made
the first version trusted, but the 5 that replaced it held the untrusted 3, and a held
value kept the 5 a version (`_trust_raised` gave up on any open set); now what it held,
the version holds. Seed 821688, made visible by those rules: a restatement of a
one-statement version decided earlier in a job was not on record for a change dated before
it later in the job (the version's statements were not loaded), so the change ended the
version for good; the restatement is recorded now (`WorkingSet._reinforce`). Then
`--start 830000` at f908581, 10,352 histories, 0. (17) `--start 840000` at a3fb6c7, 10,453
histories, 1 (seed 841825, present at 4e692b6): a semi-trusted 4 on days 1 and 33, then in
one job a semi-trusted 3 for days 28-29 (it split the 4, with a gap after its end) and the
person's 4 of day 27: the 3 stayed a version, since the rejoining of class 14 asked the
restatement to begin where the change ended; it may begin after its stated end now. Then
`--start 850000` at 1db5aef, 10,041 histories, 0. (18, 19) `--minutes 40 --start 860041` at
29c9214, 33,524 histories, 5 (two classes). Seed 873645: the person's change to 5 on day 31,
then a semi-trusted change to 5 of day 10 (5 from day 10), a third party's 4 of day 25 (held
against the semi-trusted 5), a semi-trusted change to 4 for days 24-29 (it split the 5) and
the person's 5 for days 23-25: the late trusted 5 made the first part more trusted than the
4 that replaced it, but the rejoining of class 14 gave up on any open set, and the third
party's held 4 was one; the 4 stayed a version after a trusted value. Now the restatement
takes in what the first part held for its sources (session 45). Seed 864961 (four of the
five): a semi-trusted 4 from day 18 that the person restated as a change much later, then
in one job a semi-trusted change to 5 for days 27-31 (it split the 4) and the person's change
to 3 of day 12: the split left the 4's later statements on record as the first part's, so
the late 3 read the person's restatement as the change that adopted the first part and
moved its start after its end (two values at once). A split now keeps each part's
statements apart (`Splits._change_inside`). (20, 21, 22) `--minutes 25 --start 893565` at
b505044 (session 45's trust rules), 21,573 histories, 5. Seed 899680 (two of them), brought
by those rules and fixed before they landed: a trusted change at the instant of the create
that held a semi-trusted first value replaced that value, though a version a person had
accepted (an untrusted blue, kept from a quarantine set) came before the create; the rule
now asks that the create be the first version. Seeds 898792 and 898222, present at
29c9214, closed in session 46. Seed 898792, minimised: the person's green from day 7, then
in one job the person's blue of day 1 (a change: green is held in conflict behind it), a
third party's blue of day 12 (it restates the current blue) and, told on day 25, the
person's green for days 8-16. The late green split blue and made the third party's
restatement from day 12 a version replacing green: a split held a restated part of less
trusted sources only when the change had no stated end, on the reasoning that a statement
after the end follows a gap; but the in-order path holds a less trusted value after a
trusted version's stated end too, and this one was dated inside it. The split now holds
them whatever the change's end (`splits._restated_by_less_trusted`). Seed 898222: the third
party's `bike_class_count` 3, contested with `bike_count`, was held back when a semi-trusted
source confirmed the 4 it was in conflict with; the identity set kept the held-back 3 (a
candidate, so "live" passed), and a person's resolution of the quarantine set keeping none
retracted it under the open identity set. An identity set now follows a member held back to
its identity's current version (`Rivals._sets_follow_the_current`), a resolution that
retracts a candidate takes it out of the identity sets holding it (`resolve._follow`), and
the check asks that an identity set's candidate member be no identity's held-back value
beside a current one. (23, 24) `--minutes 30 --start 925443` at 8c8c050, 25,885 histories,
6 (two classes, both present at 165444a). Seed 938826, minimised: a third party's change to
blue of day 23 and its red of day 29 (held in conflict), then, late, its change to red of
day 13 (filed before blue, it made the held red a return that replaced blue) and the
person's blue of day 17: it held the first red and made blue trusted, but the return, a
third party's, stayed current after it. A late trusted claim that makes the version it
restates more trusted now asks whether what replaced that version could have
(`LateTrust._trust_raised`, from `_file_late`'s `_over_less_trusted` too). The later red is
held in a set of its own beside the first one's, where in order one set holds both: the
facts agree, the record of sets does not. Seed 928288: a version overruled where it began
(a third party's red, an untrusted green a person kept from that instant) dated earlier by
a semi-trusted claim for days 8-18 kept the end of its empty interval (day 20), past the
start of the person's green of day 19: two values at once. It ends where its claim says
now, and never after the next version from its new start (`WorkingSet._stated_end`).
(25) `--minutes 25 --start 951328` at 65bf5e9, 23,124 histories, 1 (present at 165444a).
Seed 965063, minimised: a third party's 5 for days 19-22, the person's change to 3 for
days 29-35, an untrusted 3 of day 22 that a person kept (filed between them), then, late,
the person's change to 4 of day 12. Filed before the replaced 5, the 4 ended where the 5's
successor began, across the kept 3. It ends at the first version after it now
(`LateArrivals._before_replaced_create`). (26) `--minutes 20 --start 974452` at 5378f96,
18,461 histories, 1 (present at 165444a). Seed 984783, minimised: a semi-trusted 5 of day
11, an untrusted change to 4 of day 32 and the person's change to 5 of day 33; a person
kept the 4 (it replaced the 5 from day 32); then, late, the person's change to 3 of day
10. The 5 was moved to begin at the change of day 33 that would have adopted it in order,
after its own end, and the 3 filed before it ran across the kept 4. A version that ended
before that change keeps its start now (`LateTrust._began_when_adopted`). (27) `--minutes 40
--start 992913` at ea40a23 (session 47), 32,748 histories, 834,972 steps, 3 violations in
two classes. Seed 994886, minimised: a third party's blue of day 1, restated by an
untrusted source later; then, in one consolidation, a trusted blue for days 17-26 and a
third party's change to red of day 18. The change, decided first, split the blue (the
untrusted restatement held against the red); the trusted period made the replaced blue
more trusted, but the red stayed current because it held a statement of the blue's own
value: a third party's value replaced a trusted one. A value of the version's own held for
its source after the version's stated end no longer stops the take-back, and the version,
current again, keeps that end (`LateTrust._trust_raised`, `_end_stated`). (28) Seed 997794:
an untrusted 3 for days 22-28, a third party's 4 for days 15-20 and a semi-trusted change
to 5 of day 37; a person keeps the 3 over the 4 (filed between the 4 and the 5, linked to
neither); then, late, a trusted change to 5 of day 6 made the 5 of day 37 begin on day 6
(`_restated_over` read it as the next version by its links) across the kept 3: two values
at once. Guarding that rule alone filed the late 5 as history before the 4, which then
replaced a trusted value. Now a late first value holds the less trusted versions after it
until a value a person accepted from an untrusted source, and ends there
(`FirstValues._held_until_accepted`). (29) `--minutes 25 --start 1025661` at 008b35a,
16,873 histories, 1 violation (present at ea40a23). Seed 1026335, minimised: a third
party's 5 of day 5; then, in one consolidation, a semi-trusted change to 3 for day 10
only, a trusted 5 for days 8-15 and a trusted 3 of day 31. Decided in the order told, the
change replaces the 5 for its day and the trusted 3 follows after a gap; the trusted
period, decided last, makes the 5 more trusted, but neither take-back applies
(`_trust_raised`: the change is no longer current; `_rejoined`: what follows it is not
the 5 restated), so a semi-trusted value replaced a trusted one. In order the change is
held against the 5, the 5 holds to its stated end, and the trusted 3 adopts the held 3;
so it does now (`LateTrust._adopted_after`), the change left as the later version's
empty receipt. (30) `--minutes 14 --start 1042534` at 402be35, 8,043 histories, 1
violation (present at ea40a23; closed in session 48). Seed 1047906, minimised: `bike_count`
3 (trusted change of day 14) and `bike_class_count` 5 (trusted change of day 35), joined
by the identity judge; a person retracts the current 5; a trusted 4 of "now" becomes
current; then, late, a third party's 3 for days 26-35 and a trusted change to 4 of day 21.
The 3 splits at the change and the third party's part is held against it
(`Splits._hold_restated`); the change takes that part's successor, the retracted 5, which
the snapshot does not hold (it loads no retracted fact), so it was given no end, beside the
current 4. The names play no part: one name shows it (test_late_edges.py). The change now
ends where the part ended, which is where the retracted version began (a retraction
revives nothing before it) or the old value's stated end if that came first. Then
`--minutes 22 --start 1050577` at 133d4d0 (session 48, with that fix): 11,551 histories,
0; `--minutes 15 --start 1062128` at 3e9a9a1: 8,941 histories, 0; `--minutes 30 --start
1071069` at c326d92: 24,345 histories, 0. (31) `--minutes 25 --start 1095414` at 11938d3,
session 49's first version of its adoption rules: 21,396 histories, 3 violations, all
"untrusted never served", made by that version (closed in 8a069fa). Seed 1104145: a late
trusted first value (`FirstValues._earlier_than_rival`) split the version after it at
any change said after the value it made current, here an untrusted one, which became the
current version; it splits only at a change from a source that could replace that value
now. The same seeds at 1e1e00d (`--histories 10698 --start 1095414` and `--start 1106112`,
side by side): 21,396 histories, 0. At e2faecb: `--minutes 20 --start 1116810`, 17,612
histories, 0; `--minutes 17 --start 1300000`, 14,939 histories, 1 violation (32, open,
present at c326d92): seed 1313915, after a person resolves a quarantine set and then a
value set of `bike_class_count` (steps 15 and 16), no version of it is active, the
receipts of three versions run in a circle (each superseded by the next), and an open
identity set still holds one of them, superseded ("live open sets"). Minimised in session
50 (tests/unit/test_shared_candidates.py): a trusted value held both in a value set against
the current version and in a quarantine set against a less trusted earlier one; the person
kept the earlier one in the quarantine set, which turned the trusted value down (never
true), and the value set stayed open over it; keeping it there then retired the current
version for a fact never true. A set that shares a candidate a decision turns down now goes
on without it or closes keeping the version it was held against, and keeping a member no
longer live turns down only the held candidates. The "live open sets" check now also ends a
history at an open set holding a value turned down, and a new one, "decisions stand", at an
automatic step that holds a value a person kept as a candidate again. With the first,
`--minutes 14 --start 1314939` on the class-32 fix (before 7578e19) found three more
classes among 12,436 histories (33, 34, 35 below) and the same from 1200000 none among
12,490; the second found a fourth (36) at c6e1cd7. Each was present at 5886763. (33) seed
1318351, a late
trusted create before a value a person kept filed as history made it a candidate again
(`LateArrivals._replaced_create` took a kept candidate's successor for a change), and the
current version then ran across the kept one; (35) seed 1321793, a third party's late claim
was held in a quarantine set against a value a person had turned down for one retracted
since: `timeline.overruled` did not set aside a version never true whose successor it could
not see (no snapshot loads a retracted fact); (36) at c6e1cd7 `--histories 12436 --start
1314939` and `--minutes 16 --start 1327375` found 236 and 256 histories (of 12,436 and
12,951) where a claim's rule held a value a person kept: a more trusted create held it in
quarantine (`TrustOrder._held_back_by_less_trusted`, seed 1329129), and four late-claim
rules did (seeds 1327744, 1327587, 1328382, 1328462); each now leaves a value a person kept
(`WorkingSet._kept_by_decision`), and each guard is the one a seed needs (removing it fails
that seed). (34) seed 1319028: a late less trusted change split a value a person had kept
from an untrusted source and held the part after the change in quarantine for its source; a
late trusted restatement then left the change current ("less trusted displaces nothing").
Not holding any such part serves statements consolidated after the person's decision that
nobody accepted (seed 1330743, "untrusted never served"); closed in session 51, when a
resolved set began to record the statements the person accepted (`accepted_event_ids`,
schema 23) and a split part holding one of them is not held for its source. At db5c421:
`--minutes 12 --start 1314939`, 11,108 histories, 1 violation (seed 1319028, 34);
`--minutes 12 --start 1340326`, 11,128 histories, 5 violations, each present at 5886763:
"decisions stand" (3, seed 1341788) and "less trusted displaces nothing" (1347999), both
closed in session 51 (a trusted create's walk back over less trusted versions stops at a
value a person kept, `TrustOrder._less_trusted_before`; so does a late restatement's hold
of the change after a version, `LateTrust._after_the_change`, seed 1352351; a change
replaced by a third value is held once a late statement makes the value it replaced more
trusted, `LateTrust._held_before_next`); "live open sets" (1343713), fixed at the end of
session 50: a person kept a pinned value over one of the same instant whose words sort
before it, and `timeline.overruled` took the turned-down value for the earlier of two
versions of one instant, so a late claim was held against it; such a version now counts
only when its successor names it (`supersedes_id`). (37) Session 51, `--minutes 15 --start
1356276` (10,564 histories, on the tree before `_held_before_next`): 1 violation, seed
1361083, present at e85e674: a value held in conflict, dated by a third party's statement,
was made a return to an older value and replaced the person's current value from that date
("less trusted displaces nothing"); `Rivals._now_a_return` now reads the trust of the
statements that date it (`_first_trust`). (38) `--minutes 12 --start 1366840` at 264dafe
(10,605 histories): 2 violations, both present at e85e674. Seed 1374707 ("less trusted
displaces nothing"): a change adopted a value held in conflict from its first statement, an
untrusted one that could not have replaced the current value (`Rivals._adopt` and
`Splits._change_inside` now begin it with its first statement that could,
`_could_replace_from`). Seed 1375924 ("decisions stand"): a person kept a value that began
at the instant of the current one, which was turned down, and the kept value named it as the
version it followed, so `timeline.overruled` took it for the earlier of two versions of one
instant and a late trusted first value held it again (`resolve._turned_down`: the kept
value follows the version before it). (39) `--minutes 12 --start 1377445` at 48c2740
(9,442 histories): 3 violations in two classes. Seed 1380248 ("decisions stand", 2
histories, present at e85e674): a late trusted first value held in quarantine a value a
person kept, as a less trusted version before a value a person accepted
(`FirstValues._held_until_accepted` now stops at it). Seed 1380931 ("untrusted never
served", made this session): the set recorded as accepted the statements of the current
value a person kept, so the untrusted part a later split left of it was served; only a held
value a person makes current records them now, as the check counts acceptance. (40)
`--minutes 12 --start 1386887` and `--minutes 12 --start 1500000` at ca0347c (10,741
and 10,630 histories): one violation each, both present at e85e674. Seed 1393942 ("less
trusted displaces nothing"): a late statement made a version more trusted than the chain of
less trusted versions after it, up to the current one, and only a current successor could
be held (`LateTrust._trust_raised` now holds the whole chain, `_yielding_to`). Seed 1505468
("live open sets", minimised to eight steps in session 52; the replay was only the run of
the last claim): an untrusted 4 a person kept, then a third party's 5 dated after it, held
against it, then a semi-trusted change to 5 at the 4's instant, filed before the next
version: it turned the 4 down, and the held 5 stayed in a set open against it. In world
order the held 5 restated the change; it is now the filed version
(`LateArrivals._held_after`, session 52). (41) The session's last runs, at 4759b26:
`--minutes 10 --start 1397628` (9,353 histories) found 1 (seed 1405180, present at e85e674,
minimised to five steps: a trusted 3 of day 29, then in one run a trusted 3 for days 13-14,
a semi-trusted 3 of day 3 and a semi-trusted change to 5 for days 11-17; the part of 3
before the change ended trusted and the semi-trusted 5 replaced it); `--minutes 10 --start
1510630` (9,426) found none. Session 52: the restatement of day 13 ended the version, whose
statements dated after that end (the trusted one of day 29) became a version of their own,
but the version still counted them among its statements for the rest of the run, and the
change's split read their trust (`Rivals._given_an_end` now leaves it only its own).
(42) Session 52, at 21ec34a: `--minutes 12 --start 1524764` (9,446 histories) found none;
`--minutes 12 --start 1406981` (9,393) found 1, seed 1411524 ("less trusted displaces
nothing", present at e85e674, minimised to six steps): a third party's 5 from day 9 and its
5 for days 30-36, then in one run a semi-trusted 3 for days 27-35 and a trusted 5 of day
19. The 3 replaced the third party's 5, whose 5 of day 30 was held against it; the late
trusted 5 made the version more trusted, but the held restatement of its own value kept
`RaisedTrust._trust_raised` from holding the 3. In world order that statement restated the
trusted version: the version takes it in now (`_take_in_restatements`). `--minutes 10
--start 1534210` (8,650) found 1, seed 1538916 ("live open sets", present at e85e674,
minimised to eight steps): a person kept a held value, which turned down a version that
began after it, and a third party's statement held against that version stayed in a set
open over it; the set holds the kept value instead (`resolve._held_against_kept`).
(43) At 621fc5b: `--minutes 12 --start 1542860` (11,162 histories) found none; `--minutes
12 --start 1416374` (11,145) found 2, both present at 2721841. Seed 1420998 ("untrusted never
served", minimised to eight steps): an untrusted value held in a value conflict against a
pinned version (the pin, not trust, held it) followed the version once it was unpinned and
a trusted restatement gave it an end; a value whose source yields to the version's is held
after the end, as in order (`Rivals._held_after_end`). Seed 1419327 ("live open sets",
nine steps): the check's own mistake. A person kept an untrusted 3 into history; a late
trusted 5 of its instant, whose words sort after it, emptied it (the earlier of two
versions of one instant), and a third party's 4 of that instant stayed held against it, as
in world order. The check counted any candidate once retired as turned down; it now counts
a candidate retired never true, or a version a person's decision emptied (`turned_down`).
With the check refined, seed 1505468 (class 40) no longer counts at 2721841 either; its fix
stands on its own (the held value restated the change in world order). The refined check
counts one more shape, which seed 1538916's full history reached: a person kept a value
over the current one, and a set holding the current one against a value said after the
kept one began stayed open over it; such a set now holds the kept value too, for the
current version a decision replaces as for those it overlaps (`_held_against_kept`).
(44) The refined check's first runs, at e9b7fb2: `--minutes 12 --start 1554022` (11,399
histories) found 4 and `--minutes 12 --start 1425000` (11,550) found 7, all "live open
sets" after a person's decision, present at 2721841 (where the check did not count them):
a version the decision turned down stayed in a set holding a value said before the kept
one began (seed 1560854, six steps) or inside a kept value filed into history (seed
1425121). A version a decision turns down passes what it held to the kept value; one it
ends passes what was said inside the kept value's interval, current or filed into history
(`_held_against_kept`). The same ranges again with that rule found 1 (seed 1561424, nine
steps): the kept value, filed into history, turned down a version whose held value was of
the instant the kept one ends (its words sorting before the next version's); a turned-down
version's set passes to the kept value whether it is current or history now. At 5d60f36:
`--minutes 10 --start 1565421` (8,179 histories) found none; at a842cb2, the session's
final rules: `--minutes 8 --start 1573600` (4,432) found none.
(45) Session 53 changed what a stated end does against trust (a less trusted value dated
after a more trusted version's end follows it; a late statement that makes a version more
trusted voids an end only a less trusted one gave it). The first run of those rules,
`--minutes 12 --start 1586292` on the uncommitted tree (8,569 histories), found 1, made
by them ("one value at a time", seed 1589450, seven steps): a semi-trusted 4 for days 0-2
was replaced by a semi-trusted 3 of day 31, with an untrusted 5 of day 2 that a person
kept between them, linked to neither; a late trusted 4 of day 1 voided the 4's end and
walked across the gap to the 3, past the kept 5, making the 4 current over it. A gap is
crossed only when no version lies in it (`TrustOrder._next_of`). Then `--minutes 10
--start 1594861` at 9e7ab7c (7,202 histories) found none. At 5c7b557 (a value after a gap
is a first value again): `--minutes 12 --start 1602063` (8,381) found none, and
`--minutes 12 --start 1444772` (8,319) found 1, made by that rule ("no failed job", seed
1447309, seven steps): a third party's 3 followed the end of the person's 4, which a
person then pinned; the person's 5, a create, held the 3 as the first value since the gap
and linked the pinned 4 to itself, which the validator refused, failing the job on every
run. A pinned version before the gap keeps the rule from applying (the 5 is held in
conflict behind the 3, as before). At 852408f, the final rules: `--minutes 10 --start
1610444` (7,964 histories) and `--minutes 10 --start 1453091` (7,981) found none.
(46) Session 54 at 395c2ec: `--minutes 14 --start 1461072` (11,223 histories) found 3,
all present at f0f32cb; `--minutes 14 --start 1618408` (11,127) none. "Less trusted
displaces nothing" (seed 1466342): the person's `green` for days 10-20, after their `green`
for days 18-26, ended nothing but let a third party's `blue` of day 22, held against the
version, follow day 20 and displace it. A version holds to its own end (`Rivals.
_given_an_end`). Left open then (strict xfails), closed in session 55: "live open sets"
(1470967), a third party's period told late held against a version a person's decision
turned down: the value kept into history named it, so it read as the earlier of two
versions of one instant (`resolve._turned_down` names the version before it); "less
trusted displaces nothing" (1471067), the person's late `blue` for days 18-19 over a third
party's `blue` its own `red` of day 24 replaced, in one job, with the version's statements
not in the snapshot: the end where `red` began was taken for a stated one
(`WorkingSet._stated_end`; a version loaded open-ended stated none,
`_open_when_loaded`). At 60ae0a7 the first range again found those two.
tests/unit/test_hygiene_histories.py replays the seeds named here.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from datetime import datetime
from typing import Any

from distill import Memory
from distill.core.models import ConflictKind, Fact, FactKind, FactStatus, Resolver

AUTOMATIC = {"consolidate", "replay", "dedupe", "prune", "summarise", "judge", "judge_identities"}
AUTOMATIC |= {"derive"}


class Violation(Exception):
    def __init__(self, invariant: str, message: str) -> None:
        super().__init__(message)
        self.invariant = invariant


def every_fact(mem: Memory) -> list[Fact]:
    return sorted(mem.facts(include_retired=True), key=lambda f: f.id)


def check_state(mem: Memory, facts: dict[str, Fact]) -> None:
    """Receipts, one active state fact per identity, one value at a time, live open sets."""
    active: dict[tuple[str, str], str] = {}
    for f in facts.values():
        if f.status is FactStatus.SUPERSEDED and (f.superseded_by not in facts or not f.retired_at):
            raise Violation("receipts", f"{f.id} superseded by {f.superseded_by}, no receipt")
        if f.status is FactStatus.RETRACTED and not (
            f.retired_at
            and any(
                (e.after or {}).get("status") == FactStatus.RETRACTED.value and e.reason
                for e in mem.store.audit_for(f.project, f.id)
            )
        ):
            raise Violation("receipts", f"{f.id} retracted without its audit entry")
        if f.status is FactStatus.ACTIVE and f.kind is FactKind.STATE:
            other = active.setdefault((f.subject, f.identity_key or ""), f.id)
            if other != f.id:
                raise Violation("one active fact", f"{other} and {f.id}: {f.identity_key}")
    one_value_at_a_time(facts.values())
    for cs in mem.conflicts(status="open"):
        for m in cs.member_ids:  # a value turned down, or retracted, is no question
            if m in facts and turned_down(mem, facts[m]):
                raise Violation("live open sets", f"open {cs.kind} set holds {m}, turned down")
        # A value set may hold the version a late claim was held against (history a person
        # decides about); an identity set asks about current versions, memories have none.
        if cs.kind is ConflictKind.IDENTITY or cs.identity_key is None:
            for m in cs.member_ids:
                if m not in facts or not facts[m].live:
                    status = facts[m].status.value if m in facts else "missing"
                    raise Violation("live open sets", f"open {cs.kind} set holds {m}, {status}")
                held = facts[m].status is FactStatus.CANDIDATE and cs.kind is ConflictKind.IDENTITY
                current = active.get((facts[m].subject, facts[m].identity_key or ""))
                if held and current is not None and current not in cs.member_ids:
                    raise Violation(
                        "live open sets", f"open identity set holds {m}, held back for {current}"
                    )


def turned_down(mem: Memory, fact: Fact) -> bool:
    """Retracted, or retired never true by a decision: a candidate not kept, or a version a
    person's decision emptied (a kept value began before it): a value nobody holds. A
    version of one instant, or one filed into history with an empty interval, is never
    true too, and a set may still weigh a late claim against it, also when it was a
    candidate a person kept into history that a later claim of its instant emptied (seed
    1419327: the earlier of two versions of one instant, until session 52 counted here)."""
    if fact.status is FactStatus.RETRACTED:
        return True
    if fact.status is not FactStatus.SUPERSEDED or not fact.never_true:
        return False
    held, retired = FactStatus.CANDIDATE.value, FactStatus.SUPERSEDED.value
    for e in mem.store.audit_for(fact.project, fact.id):
        before, after = e.before or {}, e.after or {}
        emptied = after.get("valid_to") is not None and (
            datetime.fromisoformat(str(after["valid_to"])) <= fact.valid_from
        )
        not_kept = before.get("status") == held and after.get("status") == retired
        if emptied and (not_kept or e.pass_name == "api"):
            return True
    return False


def one_value_at_a_time(facts: Any) -> None:
    """DESIGN invariant 8: the versions of one identity ever true (active, or superseded
    with a non-empty interval) never overlap in world time."""
    spans: dict[tuple[str, str], list[Fact]] = defaultdict(list)
    for f in facts:
        never = f.valid_to is not None and f.valid_to <= f.valid_from
        true = f.status in (FactStatus.ACTIVE, FactStatus.SUPERSEDED)
        if f.kind is FactKind.STATE and f.identity_key and true and not never:
            spans[(f.subject, f.identity_key)].append(f)
    for versions in spans.values():
        versions.sort(key=lambda f: f.valid_from)
        for a, b in itertools.pairwise(versions):
            if a.valid_to is None or a.valid_to > b.valid_from:
                overlap = f"{a.identity_key}: {line(a)} overlaps {line(b)}"
                raise Violation("one value at a time", overlap)


def stated_ends(f: Fact, events: dict[str, Any]) -> set[datetime]:
    """The ends the claims of `f`'s events stated."""
    claims = [c for e in f.source_event_ids for c in events[e]["claims"]]
    return {c["valid_to"] for c in claims if c.get("valid_to") is not None}


def line(f: Fact) -> str:
    """A fact in a line: id, value, status, interval (month-day), successor, trust."""
    end = f.valid_to and f"{f.valid_to:%m-%d}"
    return (
        f"{f.id} {f.predicate or f.kind.value} {f.value or repr(f.text)} {f.status.value} "
        f"[{f.valid_from:%m-%d}, {end}) by={f.superseded_by} {f.trust.value}" + " pinned" * f.pinned
    )


def written(mem: Memory) -> list[list[dict[str, Any]]]:
    """Everything a dry run must leave as it was."""
    rows: list[Any] = [
        mem.facts(include_retired=True),
        mem.conflicts(status=None),
        mem.audit(limit=10**6),
        mem.jobs(),
    ]
    return [[x.model_dump() for x in part] for part in rows]


def check_step(
    mem: Memory,
    kind: str,
    p: dict[str, Any],
    before: dict[str, Fact],
    deleted: set[str],
    dry_before: Any,
    events: dict[str, Any],
    accepted: set[str],
) -> dict[str, Fact]:
    """The checks after one step: nothing lost, pinned facts, dry runs, jobs, events, and
    `check_state`. The facts as they are now. `accepted` gathers the events behind facts a
    person made active (their statements may be served, however trusted)."""
    facts = {f.id: f for f in mem.facts(include_retired=True)}
    if kind not in AUTOMATIC:
        for i, f in facts.items():
            if f.status is FactStatus.ACTIVE and not (
                i in before and before[i].status is FactStatus.ACTIVE
            ):
                accepted.update(f.source_event_ids)
    gone = set(before) - set(facts)
    if gone != deleted:
        raise Violation(
            "nothing lost", f"{kind} deleted {sorted(gone)}, reported {sorted(deleted)}"
        )
    if lost := [g for g in gone if before[g].live or before[g].pinned]:
        raise Violation("nothing lost", f"prune deleted live or pinned {lost}")
    if kind in AUTOMATIC:
        for i, f in before.items():
            if f.pinned and (i not in facts or facts[i] != f):
                raise Violation("pinned unchanged", f"{kind} changed pinned {i}")
        for i, f in facts.items():
            was = before.get(i)
            # Served on a statement an untrusted source made and no person accepted alone.
            backing = [
                e for e in f.source_event_ids if events[e]["trust"] != "untrusted" or e in accepted
            ]
            if (
                f.status is FactStatus.ACTIVE
                and not backing
                and not (was is not None and was.status is FactStatus.ACTIVE)
            ):
                raise Violation("untrusted never served", f"{kind} made {line(f)} active")
        # Votes count alike whatever their source (README, "Votes and drift"); a summary
        # consumes what it sums up (with the least trust of it), it contradicts nothing.
        for i, f in facts.items() if kind not in ("derive", "summarise") else ():
            was = before.get(i)
            by = facts.get(f.superseded_by or "")
            if (
                was is not None
                and was.status is FactStatus.ACTIVE
                and f.status is FactStatus.SUPERSEDED
                and by is not None
                and not by.pinned  # a person's choice
                and by.trust.rank < f.trust.rank
                # one that follows a gap, or the end the fact's own statements gave it,
                # replaces nothing
                and not (f.valid_to is not None and f.valid_to < by.valid_from)
                and not (f.valid_to is not None and f.valid_to in stated_ends(f, events))
            ):
                raise Violation("less trusted displaces nothing", f"{line(f)} by {line(by)}")
        # A value a person kept is never held again by a rule (an identity set's decision
        # is about a name: its kept fact may be held against a value said since).
        for cs in mem.conflicts(status="resolved"):
            kept = facts.get(cs.kept_fact_id or "")
            was = before.get(cs.kept_fact_id or "")
            if (
                cs.resolved_by is not Resolver.CLAIM
                and cs.kind is not ConflictKind.IDENTITY
                and kept is not None
                and kept.status is FactStatus.CANDIDATE
                and was is not None
                and was.status is not FactStatus.CANDIDATE
            ):
                raise Violation("decisions stand", f"{kind} held {line(kept)}, kept in {cs.id}")
    for i, f in facts.items():
        if i in before and before[i].value != f.value:
            raise Violation("a value never changes", f"{kind}: {line(before[i])} → {line(f)}")
    if dry_before is not None and written(mem) != dry_before:
        raise Violation("dry runs write nothing", f"a dry {kind} wrote")
    failed = [j.error for j in mem.jobs() if j.status.value == "failed"]
    if failed or mem.status().counts.failed_jobs:
        raise Violation("no failed job", f"after {kind}: {failed}")
    if {e.id: e.model_dump() for e in mem.events(list(events))} != events:
        raise Violation("events unchanged", f"events changed after {kind}")
    check_state(mem, facts)
    return facts
