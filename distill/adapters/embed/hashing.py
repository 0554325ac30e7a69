"""A deterministic embedder without a model: feature hashing of words and character trigrams.

The fallback when no model may be loaded, and the embedder of unit tests. Vectors depend only
on the text (blake2b, not Python's salted ``hash()``), so they are the same in every process.
Texts with shared words or spellings land close together; meaning is not captured.

Tests can pin exact texts to chosen vectors with ``overrides`` and build such vectors at an
exact cosine distance with :func:`vectors_at_distance`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence

import numpy as np

from distill.errors import ConfigurationError
from distill.ports import Vector

_WORD = re.compile(r"\w+", re.UNICODE)
_EMPTY_FEATURE = "\x00empty"


def _features(text: str) -> list[str]:
    folded = text.casefold()
    words = [f"w:{w}" for w in _WORD.findall(folded)]
    padded = f" {' '.join(folded.split())} "
    trigrams = [f"c:{padded[i : i + 3]}" for i in range(len(padded) - 2)]
    return words + trigrams if words or len(padded) > 2 else [_EMPTY_FEATURE]


def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return (value >> 1) % dimension, (1.0 if value & 1 else -1.0)


def vectors_at_distance(distance: float, dimension: int) -> tuple[list[float], list[float]]:
    """Two unit vectors whose cosine distance (1 - cos) is `distance`, to float32 precision.

    The first is e0, the second (c, s, 0, ...). c is a float32 value rounded towards 1, so the
    distance computed in float32 or float64 from the stored float32 vectors is never more than
    `distance` and short of it by less than 6e-8: a pair placed at a threshold is within it
    under ``distance <= threshold``. Add a margin (say 1e-6) to place a pair just outside.
    """
    if not 0.0 <= distance <= 2.0:
        raise ValueError(f"cosine distance must be within [0, 2], got {distance}")
    if dimension < 2:
        raise ValueError(f"dimension must be at least 2, got {dimension}")
    target = 1.0 - distance
    cos = np.float32(target)
    if float(cos) < target:
        cos = np.nextafter(cos, np.float32(1.0))
    sin = np.float32(math.sqrt(max(0.0, 1.0 - float(cos) ** 2)))
    first = [0.0] * dimension
    second = [0.0] * dimension
    first[0] = 1.0
    second[0], second[1] = float(cos), float(sin)
    return first, second


class HashingEmbedder:
    """Signed feature hashing of casefolded word unigrams and character trigrams."""

    max_batch = 1024
    # It computes in Python, holding the GIL: a search embeds its question in turn, since on
    # another thread it would only take turns with the search's reads (`embedding_pool`).
    holds_gil = True

    def __init__(
        self,
        dimension: int = 256,
        overrides: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        if dimension < 2:
            raise ConfigurationError(f"HashingEmbedder needs dimension >= 2, got {dimension}")
        self.dimension = dimension
        self.model_id = f"hashing-{dimension}"
        self._overrides: dict[str, Vector] = {}
        for text, values in (overrides or {}).items():
            vector = np.asarray(values, dtype=np.float64)
            if vector.shape != (dimension,):
                raise ConfigurationError(
                    f"override for {text!r} has shape {vector.shape}, expected ({dimension},)"
                )
            norm = float(np.linalg.norm(vector))
            if not math.isfinite(norm) or norm == 0.0:
                raise ConfigurationError(f"override for {text!r} must be a finite non-zero vector")
            # A vector that is already unit is kept as given, so exact test vectors stay exact.
            if abs(norm - 1.0) > 1e-6:
                vector = vector / norm
            self._overrides[text] = vector.astype(np.float32)

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            pinned = self._overrides.get(text)
            out[row] = pinned if pinned is not None else self._embed(text)
        return out

    def _embed(self, text: str) -> Vector:
        vector = np.zeros(self.dimension, dtype=np.float64)
        for feature in _features(text):
            index, sign = _bucket(feature, self.dimension)
            vector[index] += sign
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:  # every feature cancelled out: fall back to the empty-text vector
            index, sign = _bucket(_EMPTY_FEATURE, self.dimension)
            vector[index] = sign
            norm = 1.0
        return (vector / norm).astype(np.float32)
