"""The bundled model through both runtimes. Marked ``model``: they load the real weights (seconds;
the first run also exports the ONNX graph, about ten seconds, into the user's cache)."""

from __future__ import annotations

import numpy as np
import pytest

from kb.embed import HashEmbedder, OnnxEmbedder, SentenceTransformerEmbedder, load_embedder

TEXTS = [
    "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed.",
    "sampling crashed: the probabilities had NaN or Inf values in them",
    "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache",
    "!!!!!!!!!!!!!!!!!!!!",
    "CUDA error: an illegal memory access was encountered " * 60,  # longer than 256 tokens
    "",
]


@pytest.fixture(scope="module")
def onnx_embedder():
    return OnnxEmbedder()


@pytest.mark.model
def test_onnx_runtime_matches_sentence_transformers(onnx_embedder, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reference = SentenceTransformerEmbedder()
    ingest_threads = OnnxEmbedder(threads=2)
    theirs = reference.embed(TEXTS)
    assert reference.name == onnx_embedder.name == "sentence-transformers/all-MiniLM-L6-v2"
    for ours in (onnx_embedder.embed(TEXTS), ingest_threads.embed(TEXTS)):
        assert ours.shape == theirs.shape == (len(TEXTS), 384)
        cosines = (ours * theirs).sum(axis=1)
        assert cosines.min() >= 0.999, cosines


@pytest.mark.model
def test_paraphrased_symptoms_are_closer_than_unrelated(onnx_embedder):
    a, b, unrelated = onnx_embedder.embed(
        [
            "probability tensor contains either inf, nan or element < 0",
            "the sampler found NaN values in the probabilities",
            "the KV cache cannot hold max_model_len tokens; lower --max-model-len",
        ]
    )
    assert float(a @ b) > float(a @ unrelated) + 0.1


@pytest.mark.model
def test_rows_are_unit_length_and_batching_does_not_change_vectors(onnx_embedder):
    together = onnx_embedder.embed(TEXTS)
    alone = np.vstack([onnx_embedder.embed([t]) for t in TEXTS])
    assert np.allclose(np.linalg.norm(together[:-1], axis=1), 1.0, atol=1e-5)
    assert np.allclose(together, alone, atol=1e-5)


@pytest.mark.model
def test_the_export_is_made_locally_once_and_reused(monkeypatch, tmp_path):
    """A fresh cache gets its graph from the bundled weights (HF_HUB_OFFLINE: no download), and a
    second load finds it instead of exporting again."""
    import kb.embed as embed

    monkeypatch.setenv("DEPLOYKB_ONNX_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    first = OnnxEmbedder()
    files = list(tmp_path.rglob("model.onnx"))
    assert len(files) == 1
    exports = []
    monkeypatch.setattr(embed, "export_onnx", lambda *a: exports.append(a))
    second = OnnxEmbedder()
    assert exports == []
    assert np.allclose(first.embed(TEXTS[:2]), second.embed(TEXTS[:2]))


def test_a_broken_export_is_one_clear_error(monkeypatch, tmp_path):
    from kb.embed import bundled_model_path, onnx_model_file
    from kb.errors import EmbeddingError

    monkeypatch.setenv("DEPLOYKB_ONNX_DIR", str(tmp_path))
    target = onnx_model_file(bundled_model_path())
    target.parent.mkdir(parents=True)
    target.write_bytes(b"not an onnx graph")
    with pytest.raises(EmbeddingError, match=r"cannot load the ONNX model .*delete it to export"):
        OnnxEmbedder()


def test_hash_embedder_is_deterministic_and_word_based():
    emb = HashEmbedder(dim=64)
    x, y, z = emb.embed(["nan in logits", "logits nan in", "out of memory"])
    assert np.allclose(x, y)
    assert float(x @ z) < float(x @ y)


def test_unknown_embedder_kind_is_one_clear_error():
    from kb.errors import EmbeddingError

    with pytest.raises(
        EmbeddingError,
        match=r"--embedder 'numpy': choose one of auto, onnx, sentence-transformers, hash",
    ):
        load_embedder("numpy")


def test_embed_model_override_must_exist(tmp_path, monkeypatch):
    from kb.errors import EmbeddingError

    monkeypatch.setenv("DEPLOYKB_EMBED_MODEL", str(tmp_path / "nowhere"))
    with pytest.raises(EmbeddingError, match="no config.json there"):
        OnnxEmbedder()
