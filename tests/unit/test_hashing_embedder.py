from __future__ import annotations

import numpy as np
import pytest

from distill.adapters.embed.hashing import HashingEmbedder, vectors_at_distance
from distill.errors import ConfigurationError
from distill.ports import Embedder

TEXTS = ["bike count", "bikes owned", "car count", "", "favorite color", "Ünïcode text ✓"]


def test_satisfies_the_embedder_protocol() -> None:
    embedder = HashingEmbedder(64)
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == "hashing-64"
    assert embedder.dimension == 64
    assert embedder.max_batch == 1024


def test_shape_dtype_and_normalisation() -> None:
    vectors = HashingEmbedder().embed_batch(TEXTS)
    assert vectors.shape == (len(TEXTS), 256)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_empty_batch() -> None:
    vectors = HashingEmbedder(32).embed_batch([])
    assert vectors.shape == (0, 32)
    assert vectors.dtype == np.float32


def test_deterministic_across_instances_and_batches() -> None:
    first = HashingEmbedder().embed_batch(TEXTS)
    second = HashingEmbedder().embed_batch(list(reversed(TEXTS)))[::-1]
    one_by_one = np.vstack([HashingEmbedder().embed_batch([t]) for t in TEXTS])
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, one_by_one)


def test_known_value_is_stable() -> None:
    # blake2b, not the salted hash(): the same vector in every process and on every machine.
    # 2 words + 10 trigrams, signed into 16 buckets.
    raw = np.array([1, 0, 2, -2, 1, 0, 1, 2, 1, -1, 0, 0, 0, 0, 0, 1], dtype=np.float64)
    vector = HashingEmbedder(16).embed_batch(["bike count"])[0]
    np.testing.assert_allclose(vector, raw / np.linalg.norm(raw), atol=1e-7)


def test_casefolded() -> None:
    a, b = HashingEmbedder().embed_batch(["Bike Count", "bike count"])
    np.testing.assert_array_equal(a, b)


def test_different_texts_differ_and_overlap_means_closer() -> None:
    vectors = HashingEmbedder().embed_batch(["bike count", "car count", "wake up time"])
    distance = 1.0 - vectors @ vectors.T
    assert distance[0, 1] > 0.05
    assert distance[0, 2] > 0.05
    assert distance[0, 1] < distance[0, 2]  # shares the word "count"


def test_overrides_pin_exact_texts_and_are_normalised() -> None:
    embedder = HashingEmbedder(4, overrides={"pinned": [3.0, 4.0, 0.0, 0.0]})
    pinned, near, other = embedder.embed_batch(["pinned", "Pinned", "other"])
    np.testing.assert_allclose(pinned, [0.6, 0.8, 0.0, 0.0], atol=1e-7)
    # Only the exact text is overridden; everything else is hashed as usual.
    np.testing.assert_array_equal(near, HashingEmbedder(4).embed_batch(["Pinned"])[0])
    np.testing.assert_array_equal(other, HashingEmbedder(4).embed_batch(["other"])[0])


@pytest.mark.parametrize(
    "overrides",
    [{"x": [1.0, 0.0]}, {"x": [0.0, 0.0, 0.0]}, {"x": [float("nan"), 1.0, 0.0]}],
)
def test_bad_overrides_fail_at_construction(overrides: dict[str, list[float]]) -> None:
    with pytest.raises(ConfigurationError):
        HashingEmbedder(3, overrides=overrides)


@pytest.mark.parametrize("distance", [0.0, 0.1, 0.27, 0.5, 1.0, 1.5, 2.0])
@pytest.mark.parametrize("dimension", [2, 256])
def test_vectors_at_distance_are_exact(distance: float, dimension: int) -> None:
    a, b = vectors_at_distance(distance, dimension)
    assert len(a) == len(b) == dimension
    embedder = HashingEmbedder(dimension, overrides={"first": a, "second": b})
    va, vb = embedder.embed_batch(["first", "second"])
    np.testing.assert_allclose(np.linalg.norm([va, vb], axis=1), 1.0, atol=1e-7)
    in_float64 = 1.0 - float(np.dot(va.astype(np.float64), vb.astype(np.float64)))
    in_float32 = float(np.float32(1.0) - np.dot(va, vb))
    for measured in (in_float64, in_float32):
        assert measured == pytest.approx(distance, abs=1e-7)
        assert measured <= distance  # at a threshold means within it


def test_vectors_at_distance_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        vectors_at_distance(-0.1, 8)
    with pytest.raises(ValueError):
        vectors_at_distance(2.1, 8)
    with pytest.raises(ValueError):
        vectors_at_distance(0.5, 1)
