"""The retrieval and ranking path (``Searcher`` and ``answer``) over the four fixture findings with the
hash embedder: fast, no model, and what a user checks on an answer — which case comes first, why,
whether it is confident, and what to change."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.answer import answer, build_context
from agent.logs import triage
from agent.search import Searcher

KB_FINDINGS = Path(__file__).parent / "fixtures" / "kb" / "findings"

DSV3 = "dsv3-fp8-b200-illegal-memory-access"
LLAMA = "llama-fp8-h100-startup-oom"
QWEN = "qwen-moe-nvfp4-sm120-garbage"

IMA_LOG = """\
[2026-03-02 10:20:01 TP0] Capturing batches (bs=160 avail_mem=12.20 GB)
[2026-03-02 10:20:02 TP3] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2413, in run
RuntimeError: CUDA error: an illegal memory access was encountered
"""

OOM_LOG = """\
INFO 03-02 10:20:01 model_runner.py:1: Loading weights took 70.20 GB
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity \
of 79.19 GiB of which 1.10 GiB is free.
"""


@pytest.fixture(scope="module")
def searcher(tmp_path_factory):
    from kb.embed import HashEmbedder
    from kb.ingest import ingest
    from kb.store import open_db

    db = open_db(tmp_path_factory.mktemp("searcher") / "kb.db")
    report = ingest(db, [KB_FINDINGS], lambda: HashEmbedder(dim=64))
    assert report.errors == () and report.added == 4
    yield Searcher(db, lambda: HashEmbedder(dim=64))
    db.close()


def ask(searcher, text: str, **ctx):
    warnings: list[str] = []
    context = build_context(detect=False, warnings=warnings, **ctx)
    return answer(text.splitlines(), context, searcher, top=3, warnings=warnings)


def test_the_failure_finds_its_case_first(searcher):
    a = ask(searcher, IMA_LOG, gpu="sm100")
    best = a.proposals[0].match
    assert best.finding.id == DSV3
    assert "keyword rank 1" in best.reasons
    # the scheduler's traceback header is shared by every SGLang crash: never called evidence
    assert not any(
        r.startswith("shares the error line") and "Scheduler hit an exception" in r
        for r in best.reasons
    )


def test_a_different_failure_on_the_same_gpu_does_not_win_on_context(searcher):
    # the OOM case ran on H100; asking with the Qwen case's GPU and framework must still put the
    # OOM finding first: failure evidence outranks a matching machine
    a = ask(searcher, OOM_LOG, gpu="sm120", framework="sglang")
    assert a.proposals[0].match.finding.id == LLAMA
    assert a.proposals[0].match.finding.id != QWEN


def test_scores_are_probabilities_in_rank_order(searcher):
    a = ask(searcher, IMA_LOG)
    scores = [p.match.score for p in a.proposals]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_shared_boilerplate_alone_is_not_confident(searcher):
    text = (
        "[2026-03-02 11:00:00 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        "ValueError: unsupported rope scaling type 'dynamic-ntk-xyz'\n"
    )
    a = ask(searcher, text)
    assert not a.confident


def test_an_unrelated_question_is_not_confident(searcher):
    a = ask(searcher, "how do I bake sourdough bread with a cast iron pot?")
    assert not a.confident


def test_the_proposal_carries_the_cases_flags(searcher):
    a = ask(searcher, "every completion is a run of '!!!!!!!!' characters", gpu="sm120")
    top = a.proposals[0]
    assert top.match.finding.id == QWEN
    added = {c.name for c in top.changes if c.action == "add"}
    assert "--moe-runner-backend" in added


def test_baselines_rank_by_their_own_retriever(searcher):
    tri = triage(IMA_LOG.splitlines())
    ctx = build_context(detect=False, warnings=[])
    for use in (("bm25",), ("embedding",)):
        matches, evidence = searcher.search(IMA_LOG, tri, ctx, use=use)
        assert matches and evidence.mode == use[0]
    bm25, _ = searcher.search(IMA_LOG, tri, ctx, use=("bm25",))
    assert bm25[0].finding.id == DSV3


def test_a_query_whose_two_searches_are_one_expression_searches_once(tmp_path, monkeypatch):
    """A question (no error lines) searches its text twice, as error lines and as the whole
    report: the second answer is the first's, and the ranking does not change."""
    import kb.store
    from kb.embed import HashEmbedder
    from kb.ingest import ingest
    from kb.store import open_db

    db = open_db(tmp_path / "kb.db")
    ingest(db, [KB_FINDINGS], lambda: HashEmbedder(dim=64))
    question = "what works for Qwen MoE NVFP4 on sm120?"

    def fresh():
        return Searcher(db, lambda: HashEmbedder(dim=64))

    expected = [(m.match.finding.id, m.match.score) for m in ask(fresh(), question).proposals]
    calls: list[str] = []
    real = kb.store.fts_match
    monkeypatch.setattr(
        kb.store, "fts_match", lambda db, q, limit: calls.append(q) or real(db, q, limit)
    )
    got = [(m.match.finding.id, m.match.score) for m in ask(fresh(), question).proposals]
    assert got == expected
    assert len(calls) == 1
    db.close()
