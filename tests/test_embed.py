"""The bundled model, both runtimes. Marked ``model``: they load the real weights (seconds)."""

from __future__ import annotations

import numpy as np
import pytest

from kb.embed import HashEmbedder, NumpyEmbedder, SentenceTransformerEmbedder, load_embedder

TEXTS = [
    "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed.",
    "sampling crashed: the probabilities had NaN or Inf values in them",
    "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache",
    "!!!!!!!!!!!!!!!!!!!!",
    "CUDA error: an illegal memory access was encountered " * 60,  # longer than 256 tokens
    "",
]


@pytest.fixture(scope="module")
def numpy_embedder():
    return NumpyEmbedder()


@pytest.mark.model
def test_numpy_runtime_matches_sentence_transformers(numpy_embedder, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reference = SentenceTransformerEmbedder()
    ours = numpy_embedder.embed(TEXTS)
    theirs = reference.embed(TEXTS)
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    assert reference.name == numpy_embedder.name == "sentence-transformers/all-MiniLM-L6-v2"
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() >= 0.999, cosines


@pytest.mark.model
def test_paraphrased_symptoms_are_closer_than_unrelated(numpy_embedder):
    a, b, unrelated = numpy_embedder.embed(
        [
            "probability tensor contains either inf, nan or element < 0",
            "the sampler found NaN values in the probabilities",
            "the KV cache cannot hold max_model_len tokens; lower --max-model-len",
        ]
    )
    assert float(a @ b) > float(a @ unrelated) + 0.1


@pytest.mark.model
def test_rows_are_unit_length_and_batching_does_not_change_vectors(numpy_embedder):
    together = numpy_embedder.embed(TEXTS)
    alone = np.vstack([numpy_embedder.embed([t]) for t in TEXTS])
    assert np.allclose(np.linalg.norm(together[:-1], axis=1), 1.0, atol=1e-5)
    assert np.allclose(together, alone, atol=1e-5)


def test_hash_embedder_is_deterministic_and_word_based():
    emb = HashEmbedder(dim=64)
    x, y, z = emb.embed(["nan in logits", "logits nan in", "out of memory"])
    assert np.allclose(x, y)
    assert float(x @ z) < float(x @ y)


def test_unknown_embedder_kind_is_one_clear_error():
    from kb.errors import EmbeddingError

    with pytest.raises(EmbeddingError, match=r"--embedder 'onnx': choose one of auto, numpy"):
        load_embedder("onnx")


def test_embed_model_override_must_exist(tmp_path, monkeypatch):
    from kb.errors import EmbeddingError

    monkeypatch.setenv("DEPLOYKB_EMBED_MODEL", str(tmp_path / "nowhere"))
    with pytest.raises(EmbeddingError, match="no config.json there"):
        NumpyEmbedder()
