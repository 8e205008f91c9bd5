"""Shared fixtures: a deterministic fake embedder, a temporary index, the test findings."""

from __future__ import annotations

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
    builds them. Tests that may change the index copy the file first."""
    from kb.embed import load_embedder
    from kb.ingest import ingest
    from kb.resources import shipped_findings_dir
    from kb.store import open_db

    path = tmp_path_factory.mktemp("shipped-index") / "kb.db"
    db = open_db(path)
    report = ingest(db, [shipped_findings_dir()], lambda: load_embedder("auto"))
    assert report.errors == ()
    db.close()
    return path
