"""Logs written by hand the way a new user pastes them: the right case, or an honest "no close match".

Three of them are the failures that once came back as confident wrong answers: a vLLM FP8 illegal
memory access during CUDA-graph capture that shares only the worker's catch-all banner with past
cases, an SGLang ValueError that shares only the scheduler's catch-all banner, and an RTX 5090 log
whose decisive line is PyTorch's "sm_120 is not compatible" warning.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.answer import answer, build_context
from agent.search import Searcher

pytestmark = pytest.mark.model

HERE = Path(__file__).parent / "fixtures" / "handwritten"

# log -> (findings that are a right answer, must the right answer be first?)
CASES = {
    "vllm-h100-fp8-capture-ima.log": (set(), False),
    "sglang-valueerror-reasoning-parser.log": (set(), False),
    "rtx5090-no-kernel-image.log": ({"vllm-13306-rtx5090-sm120-not-compatible-torch"}, True),
    "qwen35-nan-happened.txt": ({"qwen35-397b-nvfp4-sm120-nan-moe-runner"}, True),
    "glm5-first-decode.log": ({"glm5-nvfp4-sm120-deepgemm-ue8m0-nan"}, True),
    "pcie-nccl-watchdog.log": (
        {
            "vllm-5484-nccl-watchdog-timeout-p2p-disable",
            "vllm-9920-rtx6000ada-tp2-second-run-stall-acs-iommu",
            "vllm-8087-tp-stuck-nccl-p2p-level-nvl",
        },
        False,
    ),
}


@pytest.fixture(scope="module")
def searcher(shipped_index_path):
    from kb.embed import load_embedder
    from kb.store import open_db

    return Searcher(open_db(shipped_index_path), lambda: load_embedder("auto"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_right_case_or_an_honest_no_close_match(name, searcher):
    right, must_be_first = CASES[name]
    lines = (HERE / name).read_text().splitlines(keepends=True)
    a = answer(lines, build_context(detect=False, warnings=[]), searcher)
    top = a.proposals[0].match.finding.id if a.proposals else None
    if must_be_first:
        assert top in right, (top, a.verdict)
    if a.confident:
        assert top in right, f"confident wrong answer {top}: {a.verdict}"
    if top not in right:
        assert "not a diagnosis" in a.verdict


def test_boilerplate_alone_is_not_confident(searcher):
    text = "(VllmWorker rank=1 pid=7) ERROR 11-28 14:04:09 [multiproc_executor.py:596] WorkerProc hit an exception.\n"
    a = answer([text], build_context(detect=False, warnings=[]), searcher)
    assert not a.confident
