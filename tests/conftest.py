"""Shared fixtures: a deterministic fake embedder, a temporary index, the test findings."""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def _user_onnx_dir() -> str:
    from kb.embed import onnx_cache_dir

    return str(onnx_cache_dir())


# the ONNX export made by scripts/setup.sh, found before any test points XDG_CACHE_HOME elsewhere
USER_ONNX_DIR = os.environ.get("DEPLOYKB_ONNX_DIR") or _user_onnx_dir()


@pytest.fixture(autouse=True)
def _one_onnx_export(monkeypatch):
    """Every test reuses the one ONNX export of the bundled model (made once by setup, or by the
    first test that needs it) even when it gives itself a private cache folder; the tests of the
    export itself set ``DEPLOYKB_ONNX_DIR`` to a folder of their own."""
    monkeypatch.setenv("DEPLOYKB_ONNX_DIR", USER_ONNX_DIR)


KB_FINDINGS = FIXTURES / "kb" / "findings"


@pytest.fixture
def fake_embedder():
    """``kb.embed.HashEmbedder(dim=64)``: deterministic bag-of-words vectors, no model load."""
    from kb.embed import HashEmbedder

    return HashEmbedder(dim=64)


@pytest.fixture
def tmp_db(tmp_path: Path):
    """An empty deploykb index (schema created) in a file under ``tmp_path``."""
    from kb.store import ensure_schema, open_db

    db = open_db(tmp_path / "index" / "deploykb.db")
    ensure_schema(db)
    yield db
    db.close()


class CountingFactory:
    """An embedder factory that records how often the (expensive) model would be loaded."""

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make
        self.calls = 0

    def __call__(self):  # type: ignore[no-untyped-def]
        self.calls += 1
        return self.make()


@pytest.fixture
def embedder_factory(fake_embedder) -> CountingFactory:
    """A factory returning ``fake_embedder``; ``.calls`` counts the loads."""
    return CountingFactory(lambda: fake_embedder)


@pytest.fixture
def findings_dir(tmp_path: Path) -> Path:
    """A writable copy of ``tests/fixtures/kb/findings`` (four findings and a README)."""
    target = tmp_path / "findings"
    shutil.copytree(KB_FINDINGS, target)
    return target


@pytest.fixture(scope="session")
def shipped_index_path(tmp_path_factory) -> Path:
    """The shipped findings indexed once per test session with the bundled MiniLM, as `ask`
    builds them (every core). Tests that may change the index copy the file first."""
    from kb.embed import load_embedder
    from kb.ingest import ingest
    from kb.resources import shipped_findings_dir
    from kb.store import open_db

    path = tmp_path_factory.mktemp("shipped-index") / "kb.db"
    db = open_db(path)
    threads = os.cpu_count() or 1
    report = ingest(db, [shipped_findings_dir()], lambda: load_embedder("auto", threads=threads))
    assert report.errors == ()
    db.close()
    return path


class _Remembering:
    """The bundled model, remembering the vectors of each call for the session. A call whose
    texts were all embedded before gets those vectors back without running the model (batching
    does not change a text's vector: tests/test_embed.py), so a test that rebuilds the shipped
    index (a stale schema) does not pay for a second real-model build; any other call runs the
    model as it is."""

    seen: dict[tuple[str, str], object] = {}

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self._inner = inner

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._inner, name)

    def embed(self, texts):  # type: ignore[no-untyped-def]
        import numpy as np

        keys = [(self._inner.name, t) for t in texts]
        if keys and all(k in self.seen for k in keys):
            return np.stack([self.seen[k] for k in keys])
        vectors = self._inner.embed(texts)
        for k, v in zip(keys, vectors, strict=True):
            self.seen.setdefault(k, v.copy())
        return vectors


@pytest.fixture(autouse=True, scope="session")
def _real_model_vectors_remembered():
    """Every ``load_embedder("auto")`` of the session gets the remembering model (see
    ``_Remembering``); the tests of ``kb.embed`` itself build their ``OnnxEmbedder`` directly."""
    import kb.embed

    real = kb.embed._cached_onnx
    remembering = functools.lru_cache(maxsize=2)(lambda threads: _Remembering(real(threads)))
    kb.embed._cached_onnx = remembering
    yield
    kb.embed._cached_onnx = real
