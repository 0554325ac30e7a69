"""Votes: who decides an attribute's value, and how many noisy observations elect one.

**Policies.** A predicate's policy says who decides its current value:

- `latest` (the default): the last statement wins. This is adjudication (`core.adjudicate`),
  made for first-hand statements: a person who says "I moved to Lyon" means it, once is
  enough, and a later statement replaces an earlier one (with the trust gate and the
  conflict sets that guard it).
- `vote`: many noisy sources (web pages, other agents, a model reading documents) say
  things about the subject, some wrong, many in other words; the value is decided by the
  evidence. Adjudication records such a claim as an observation with outcome `vote` and
  leaves the facts alone; the derive pass (`core.derive`) counts the votes.

The policy is keyed by predicate only, not by source or trust class: one identity has one
decider, or two passes would write the same fact by two rules (a trusted `latest` statement
and a third-party vote on the same attribute would each undo the other).

**Clustering and the mode.** Surface forms ("adoption agencies", "adoption agency") are
clustered by embedding: greedy, over the distinct forms in sorted order, each joining the
cluster whose running-mean centroid is nearest if it is within the calibrated distance
(`DERIVE_CLUSTER` in distill/adapters/embed/calibrations.json, measured by
scripts/calibrate_derive.py), else opening a new one. Sorted order makes the cluster ids a
function of the set of forms, whatever order the observations came in. Without a distance
(an uncalibrated embedder) or a vector, each form is its own cluster: the exact mode.

The canonical value is the mode over clusters, then over surface forms inside the winning
cluster; ties go to the most recent (the latest world time among the tied ones' votes),
then to the smaller cluster id or the smaller form, so that nothing depends on input order
but recency.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from distill.core.identity import canonical_json
from distill.core.models import Trust, normalise_predicate
from distill.errors import ConfigurationError


class Policy(StrEnum):
    LATEST = "latest"  # the last statement wins (adjudication): first-hand statements
    VOTE = "vote"  # the evidence decides (the derive pass): many noisy sources


@dataclass(frozen=True)
class Policies:
    """The policy of each predicate that has one declared; every other is `latest`."""

    by_predicate: Mapping[str, Policy] = field(default_factory=dict)

    @classmethod
    def of(cls, given: Mapping[str, str | Policy] | None) -> Policies:
        """Policies from `{predicate: "latest" | "vote"}`, predicates normalised as claims'
        are (`Employer` and `employer` are one)."""
        if isinstance(given, Policies):
            return given
        found: dict[str, Policy] = {}
        for raw, policy in (given or {}).items():
            name = normalise_predicate(str(raw))
            if not name:
                raise ConfigurationError(f"policies: {raw!r} is not a predicate name")
            try:
                found[name] = Policy(str(getattr(policy, "value", policy)))
            except ValueError:
                raise ConfigurationError(
                    f"policies: {raw!r} has policy {policy!r}; give 'latest' or 'vote'"
                ) from None
        return cls(found)

    def of_predicate(self, predicate: str | None) -> Policy:
        if predicate is None:
            return Policy.LATEST
        return self.by_predicate.get(predicate, Policy.LATEST)

    def votes(self, predicate: str | None) -> bool:
        return self.of_predicate(predicate) is Policy.VOTE

    def to_dict(self) -> dict[str, str]:
        return {k: v.value for k, v in sorted(self.by_predicate.items())}


def surface(value: Mapping[str, Any]) -> str:
    """An observed value as the words that are clustered: a one-key value is its value's
    text ({"name": "Rust"} → "Rust"); a value of several keys, `key=value` pairs in key
    order."""
    if len(value) == 1:
        (only,) = value.values()
        return only.strip() if isinstance(only, str) else canonical_json(only)
    return ", ".join(
        f"{k}={v.strip() if isinstance(v, str) else canonical_json(v)}"
        for k, v in sorted(value.items())
    )


@dataclass(frozen=True)
class Ballot:
    """One observation's vote: its value, the words clustered, and when it was true."""

    observation_id: str
    event_id: str
    value: dict[str, Any]
    surface: str
    at: datetime  # world time: the claim's own valid_from, else its event's time
    trust: Trust


def cluster_forms(
    forms: Sequence[str],
    vectors: Mapping[str, npt.NDArray[np.float32]],
    max_distance: float | None,
) -> dict[str, int]:
    """Each distinct form's cluster id (0, 1, ... in order of opening): greedy over the
    forms in sorted order, joining the nearest centroid within `max_distance` (cosine
    distance), ties to the smaller id; centroids are running means of their members."""
    clusters: dict[str, int] = {}
    centroids: list[npt.NDArray[np.float64]] = []
    sizes: list[int] = []
    for form in sorted(set(forms)):
        vector = vectors.get(form)
        best, best_distance = -1, float("inf")
        if vector is not None and max_distance is not None:
            v = np.asarray(vector, dtype=np.float64)
            norm = float(np.linalg.norm(v))
            v = v / norm if norm else v
            for index, centroid in enumerate(centroids):
                if sizes[index] == 0:  # a form without a vector: a cluster of its own
                    continue
                c_norm = float(np.linalg.norm(centroid))
                distance = 1.0 - float(np.dot(v, centroid)) / c_norm if c_norm else 2.0
                if distance < best_distance:
                    best, best_distance = index, distance
            if best >= 0 and best_distance <= max_distance:
                n = sizes[best]
                centroids[best] = (centroids[best] * n + v) / (n + 1)
                sizes[best] = n + 1
                clusters[form] = best
                continue
            centroids.append(v)
            sizes.append(1)
        else:
            centroids.append(np.zeros(1))
            sizes.append(0)
        clusters[form] = len(centroids) - 1
    return clusters


@dataclass(frozen=True)
class Tally:
    """The outcome of one identity's vote."""

    winner: Ballot  # the most recent vote for the canonical form
    cluster: int  # the canonical form's cluster
    clusters: Mapping[str, int]  # every form's cluster (the prior fact's too, if any)
    votes: Mapping[int, int]  # ballots per cluster
    total: int

    def share_outside(self, cluster: int) -> float:
        """The share of the evidence outside `cluster`."""
        return (self.total - self.votes.get(cluster, 0)) / self.total if self.total else 0.0

    def ballots_in(self, ballots: Sequence[Ballot], cluster: int) -> list[Ballot]:
        return [b for b in ballots if self.clusters[b.surface] == cluster]


def tally(
    ballots: Sequence[Ballot],
    vectors: Mapping[str, npt.NDArray[np.float32]],
    max_distance: float | None,
    also: Sequence[str] = (),
) -> Tally:
    """Count `ballots` (at least one): the mode over clusters, then over forms inside the
    winning cluster, ties to the most recent. `also` are forms clustered without a vote (the
    prior fact's value, so that its cluster is known)."""
    if not ballots:
        raise ValueError("a tally needs at least one ballot")
    clusters = cluster_forms([b.surface for b in ballots] + list(also), vectors, max_distance)
    votes: Counter[int] = Counter(clusters[b.surface] for b in ballots)
    latest: dict[int, datetime] = {}
    for b in ballots:
        c = clusters[b.surface]
        latest[c] = max(latest.get(c, b.at), b.at)
    # Most votes, then the most recent vote, then the smaller id (sorted forms: order-free).
    cluster = min(votes, key=lambda c: (-votes[c], -latest[c].timestamp(), c))
    inside = [b for b in ballots if clusters[b.surface] == cluster]
    forms: Counter[str] = Counter(b.surface for b in inside)
    newest: dict[str, Ballot] = {}
    for b in inside:
        was = newest.get(b.surface)
        if was is None or (b.at, b.observation_id) > (was.at, was.observation_id):
            newest[b.surface] = b
    form = min(forms, key=lambda f: (-forms[f], -newest[f].at.timestamp(), f))
    return Tally(newest[form], cluster, clusters, dict(votes), len(ballots))
