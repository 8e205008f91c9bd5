"""scripts/forward_chain.py: a report's precedents are the labelled reports it is compared with; it is
never its own precedent and never sees a report outside the pool it is given."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.forward_chain import Precedents, _with_feature  # noqa: E402

QUERIES = {
    "a": {
        "text": "RuntimeError: CUDA error: peer access is not supported between these two devices",
        "expected": ["p2p"],
    },
    "b": {
        "text": "CUDA error: peer access is not supported between these two devices on 2x 4090",
        "expected": ["p2p"],
    },
    "c": {
        "text": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "expected": ["oom"],
    },
    "d": {"text": "CUDA out of memory while capturing graphs", "expected": []},
}


def test_a_report_is_not_its_own_precedent():
    p = Precedents(QUERIES, "bm25")
    # "a" alone in the pool: nothing to compare with
    assert p.feature("a", ["a"]) == {}
    got = p.feature("a", ["a", "b", "c"])
    assert got["p2p"] == 1.0  # the best precedent (b) scores 1 relative to itself
    assert got.get("oom", 0.0) < 0.5


def test_only_the_pool_is_read():
    p = Precedents(QUERIES, "bm25")
    assert "p2p" not in p.feature("d", ["c"])
    assert set(p.feature("d", ["c"])) == {"oom"}


def test_the_feature_is_appended_per_candidate():
    entries = [{"id": "a", "cands": [{"fid": "p2p", "x": [0.1]}, {"fid": "oom", "x": [0.2]}]}]
    out = _with_feature(entries, {"a": {"p2p": 0.7}})
    assert [c["x"] for c in out[0]["cands"]] == [[0.1, 0.7], [0.2, 0.0]]
    assert entries[0]["cands"][0]["x"] == [0.1]  # the input is not changed
