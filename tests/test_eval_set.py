"""The public evaluation set stays valid: every expected finding and log exists, ids are unique."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = {"seed", "paraphrase", "other-rank", "log", "other-model-same-arch", "question", "negative"}


def _queries():
    lines = (ROOT / "eval" / "queries.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_queries_are_well_formed_and_point_at_real_findings():
    queries = _queries()
    ids = [q["id"] for q in queries]
    assert len(ids) == len(set(ids))
    for q in queries:
        assert q["kind"] in KINDS, q["id"]
        assert bool(q.get("text")) != bool(q.get("log")), q["id"]
        if q.get("log"):
            assert (ROOT / q["log"]).is_file(), q["log"]
        for fid in q["expected"]:
            assert (ROOT / "findings" / f"{fid}.md").is_file(), (q["id"], fid)
        if q["kind"] == "negative":
            assert q["expected"] == [] and q["expected_fix"] == []


def test_the_paraphrase_regression_set_keeps_its_negatives_and_seeds():
    # the paraphrase set was written from the first 41 findings and stays as a regression check;
    # the held-out set (tests/test_heldout.py) is the headline
    queries = _queries()
    assert sum(q["kind"] == "negative" for q in queries) >= 10
    assert sum(q["kind"] == "seed" for q in queries) == 3


def test_a_fix_hit_compares_values_as_the_flag_registry_does():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from scripts.eval import fix_hit, fix_keys

    want = fix_keys({"add": ["dtype=torch.float16"]}, "vllm")  # a Python-API report
    assert want == {("--dtype", "torch.float16")}
    assert fix_hit(want, {("--dtype", "half")}, "vllm")  # the finding's `--dtype half`
    assert not fix_hit(want, {("--dtype", "bfloat16")}, "vllm")
    assert not fix_hit(want, {("--max-model-len", "half")}, "vllm")  # another knob
    # a pin is compared as written: one release against another is no hit
    assert not fix_hit({("vllm", "0.6.2")}, {("vllm", "0.6.3")}, "vllm")
    assert fix_hit({("vllm", "0.6.2")}, {("vllm", "0.6.2")}, "vllm")
    # a report from a wrapper framework is compared in the matched finding's framework
    assert fix_hit(want, {("--dtype", "half")}, "orpheus_tts", "vllm")
    assert not fix_hit(want, {("--dtype", "half")}, "orpheus_tts")
