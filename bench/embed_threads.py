"""How the default embedder should use the cores, on this machine.

    python bench/embed_threads.py                 # the 10,062 texts of a 10,000-event round
    python bench/embed_threads.py --n 3000 --rounds 5

Embeds the texts `bench/consolidate.py` embeds for N events, in the calls a consolidation
makes (the embedder's `max_batch` texts a call), with four settings of `LocalEmbedder`,
alternating, a fresh embedder each time:

- **side by side** (the default): calls of 512 texts, cut into runs of at most 32 rows; one
  onnxruntime run per core at once, each on one thread (`runs` = cores, `intra_op_threads` =
  1);
- **calls of 64**: the same, in calls of 64 texts cut into runs of 64 rows (each call then
  goes in two runs of 32, one a core), as the embedder did before;
- **split**: one run at a time, onnxruntime splitting each operator over the cores (`runs` =
  1, `intra_op_threads` = its default), as the embedder did before that;
- **one core**: one run at a time on one thread.

It prints wall and CPU seconds of each round and, per setting, the median wall time over the
default's. Why it matters (BENCHMARKS.md, "Consolidation cost ÷ embedding cost"): the
embedding is most of a consolidation, and during one the deciding thread competes with the
embedder's threads for the cores; the CPU column shows what each setting leaves for it. Run
it on a quiet machine: under load the figures mean little.
"""

from __future__ import annotations

import statistics
import time

import click
from consolidate import make_events  # bench/ is on the path when run as a script

# name: LocalEmbedder's options (runs None: one per core; intra_op_threads None: onnxruntime's)
SETTINGS: dict[str, dict[str, int | None]] = {
    "side by side": {"runs": None, "intra_op_threads": 1},
    "calls of 64": {"runs": None, "intra_op_threads": 1, "max_batch": 64, "run_rows": 64},
    "split": {"runs": 1, "intra_op_threads": None},
    "one core": {"runs": 1, "intra_op_threads": 1},
}


@click.command()
@click.option("--n", default=10_000, show_default=True, help="Events whose texts are embedded.")
@click.option("--rounds", default=3, show_default=True, help="Rounds of each setting.")
def main(n: int, rounds: int) -> None:
    from distill.adapters.embed.local import LocalEmbedder
    from distill.core.identity import identity_text

    events = make_events(n)
    texts = {e["text"] for e in events}
    texts |= {identity_text(c["predicate"], c["value"]) for e in events for c in e["claims"]}
    ordered = sorted(texts)
    walls: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for _ in range(rounds):
        for name, options in SETTINGS.items():
            embedder = LocalEmbedder(**options)  # type: ignore[arg-type]
            embedder.embed_batch(ordered[:8])  # the model is loaded outside the timing
            t0, cpu0 = time.perf_counter(), time.process_time()
            for start in range(0, len(ordered), embedder.max_batch):
                embedder.embed_batch(ordered[start : start + embedder.max_batch])
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            walls[name].append(wall)
            print(f"{name:12s} {len(ordered):,} texts: {wall:.2f} s wall, {cpu:.2f} s CPU")
    default = statistics.median(walls["side by side"])
    for name, found in walls.items():
        median = statistics.median(found)
        print(f"{name:12s} median wall {median:.2f} s, {median / default:.3f} x the default")


if __name__ == "__main__":
    main()
