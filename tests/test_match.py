"""The matching policy (``agent.match``): pure functions, tested without an index or a model."""

from __future__ import annotations

import pytest

from agent import match as M
from agent.context import quantization_similarity
from kb.records import ArchTraits, Finding, Framework, Hardware, QueryContext

ASSERT_LINE = "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed."


def tok(text: str) -> tuple[str, frozenset[str]]:
    return text, M.tokens(text)


# --- tokens ----------------------------------------------------------------------------------


def test_tokens_are_lower_case_content_words():
    assert M.tokens(ASSERT_LINE) == {
        "assertion", "probability", "tensor", "contains", "either", "inf", "nan", "element",
        "failed",
    }  # fmt: skip


def test_tokens_drop_masks_numbers_stop_words_and_single_letters():
    assert M.tokens("Rank<n> at <path> hit <n> errors in a x 8000 of the TP<n> worker") == {
        "rank", "hit", "errors", "tp", "worker",
    }  # fmt: skip


def test_tokens_keep_flag_and_backend_names_whole():
    assert M.tokens("use --fp8-gemm-backend cutlass or flashinfer_cutlass v0.5.9") == {
        "use", "fp8-gemm-backend", "cutlass", "flashinfer_cutlass", "v0.5.9",
    }  # fmt: skip


# --- line_overlap ----------------------------------------------------------------------------


def test_a_log_line_that_contains_the_whole_symptom_scores_one():
    user = [tok(f"[2026-02-19 00:13:33 TP5] TensorCompare.cu: block: thread: {ASSERT_LINE}")]
    hit = M.line_overlap(user, [tok("Scheduler hit an exception"), tok(ASSERT_LINE)])
    assert hit is not None
    assert hit.score == 1.0
    assert hit.finding_line == ASSERT_LINE
    assert hit.user_line == user[0][0]


def test_line_overlap_is_containment_of_the_symptom_not_of_the_user_line():
    symptom = [tok(ASSERT_LINE)]  # nine content words
    noisy = [tok(f"rank TP5 pid 4242 while decoding batch of requests after warmup {ASSERT_LINE}")]
    assert M.line_overlap(noisy, symptom).score == 1.0
    assert M.line_overlap(symptom, [tok(f"{ASSERT_LINE} on TP5 during decode")]).score < 1.0


def test_a_short_symptom_inside_a_long_line_is_not_a_shared_line():
    # three words are found in too many lines to identify a case on their own
    symptom = [tok("DeepGemm ue8m0 checkpoint")]
    exact = M.line_overlap([tok("deepgemm UE8M0 checkpoint")], symptom)
    inside = M.line_overlap([tok("loading checkpoint shards, DeepGemm JIT for ue8m0 scales on "
                                 "Blackwell")], symptom)  # fmt: skip
    assert exact.score == 1.0
    assert inside.score < 0.6


def test_fewer_than_three_shared_words_is_no_hit():
    symptom = [tok("illegal memory access encountered during graph capture")]
    assert M.line_overlap([tok("illegal memory usage")], symptom) is None  # two shared
    hit = M.line_overlap([tok("illegal memory access")], symptom)  # three shared
    assert hit is not None and 0 < hit.score < 1


def test_short_symptom_lines_never_match():
    # a two-word symptom is contained in many lines; it must not count as a shared error line
    assert M.line_overlap([tok("CUDA out of memory while loading")], [tok("out of memory")]) is None


def test_a_user_line_that_grazes_a_long_symptom_scores_low():
    symptom = [tok("RuntimeError: CUDA error: an illegal memory access was encountered in the "
                   "fused moe kernel during cuda graph replay on rank zero")]  # fmt: skip
    graze = M.line_overlap([tok("moe kernel replay and some unrelated words here")], symptom)
    full = M.line_overlap(symptom, symptom)
    assert graze is not None and full is not None
    assert graze.score < 0.3 < 0.6 <= full.score


def test_line_overlap_picks_the_best_pair():
    user = [tok("NCCL watchdog thread terminated with exception"), tok(ASSERT_LINE)]
    symptoms = [tok("NCCL watchdog timeout after collective operation ran"), tok(ASSERT_LINE)]
    hit = M.line_overlap(user, symptoms)
    assert (hit.user_line, hit.finding_line, hit.score) == (ASSERT_LINE, ASSERT_LINE, 1.0)


def test_line_overlap_without_user_words_is_none():
    assert M.line_overlap([("<n> <n>", frozenset())], [tok(ASSERT_LINE)]) is None
    assert M.line_overlap([], [tok(ASSERT_LINE)]) is None


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("nvidia/GLM-5-NVFP4", "GLM-5-NVFP4", 1.0),  # the org does not matter
        ("nvidia/GLM-5-NVFP4", "glm5_nvfp4", 1.0),  # nor punctuation or case
        ("moonshotai/Kimi-K2-Thinking", "Kimi-K2-Thinking-NVFP4", 0.75),  # 3 of 4 words
        ("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", 1 / 6),  # "instruct"
        ("nvidia/GLM-5-NVFP4", None, 0.0),
        (None, None, 0.0),
        ("", "GLM-5", 0.0),
    ],
)
def test_model_similarity(a, b, expected):
    assert M.model_similarity(a, b) == pytest.approx(expected)
    assert M.model_similarity(b, a) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("user", "recorded", "expected"),
    [
        ({"nan"}, {"nan", "crash"}, 1.0),  # shared class
        ({"nan"}, {"device-assert"}, 1.0),  # NaN logits trip the sampler's assert
        ({"garbage-output"}, {"nan"}, 1.0),
        ({"illegal-memory-access"}, {"device-assert"}, 1.0),
        ({"oom"}, {"illegal-memory-access"}, 0.0),  # contradicting kinds of failure
        ({"hang"}, {"nan"}, 0.0),
        ({"crash"}, {"oom"}, None),  # "crash" says too little to disagree
        ({"warning", "crash"}, {"nan"}, None),
        ({"nan"}, set(), None),
        (set(), {"nan"}, None),
    ],
)
def test_class_agreement(user, recorded, expected):
    assert M.class_agreement(frozenset(user), frozenset(recorded)) == expected


# --- context_score ---------------------------------------------------------------------------

FINDING = Finding(
    id="glm5",
    title="GLM-5 NaN",
    status="works-with-flags",
    model="nvidia/GLM-5-NVFP4",
    architecture="glm_moe_dsa",
    quantization="nvfp4 (modelopt_fp4)",
    hardware=Hardware(gpu="NVIDIA RTX PRO 6000 Blackwell", count=8, sm="sm120"),
    framework=Framework(name="sglang"),
)
FINDING_TRAITS = ArchTraits(model_type="glm_moe_dsa", traits=("dsa", "mla", "moe"))


class FakeTraits:
    """``trait_similarity`` stand-in that records its arguments."""

    def __init__(self, sim: float, reasons: tuple[str, ...] = ()) -> None:
        self.sim, self.reasons, self.calls = sim, reasons, []

    def __call__(self, a, b):  # type: ignore[no-untyped-def]
        self.calls.append((a, b))
        return self.sim, self.reasons


def fake_sm(table: dict[tuple[str, str], float]):  # type: ignore[no-untyped-def]
    return lambda a, b: table.get((a, b), 0.0)


def score(ctx: QueryContext, finding: Finding = FINDING, traits=None, sm=None) -> M.ContextScore:
    return M.context_score(
        ctx,
        finding,
        FINDING_TRAITS,
        traits or FakeTraits(0.0),
        sm or fake_sm({}),
        quantization_similarity,
    )


def test_no_context_gives_no_score():
    cs = score(QueryContext())
    assert (cs.score, cs.reasons, cs.coverage) == (None, (), 0.0)


def test_an_architecture_without_type_or_traits_is_not_context():
    cs = score(QueryContext(arch=ArchTraits()))
    assert cs.score is None


def test_same_model_alone():
    cs = score(QueryContext(model="GLM-5-NVFP4"))
    assert cs.score == pytest.approx(1.0)
    assert cs.reasons == ("same model (nvidia/GLM-5-NVFP4)",)
    assert cs.coverage == pytest.approx(0.20)


def test_every_dimension_agreeing_scores_one_with_full_coverage():
    traits = FakeTraits(1.0, ("same architecture (glm_moe_dsa)",))
    ctx = QueryContext(
        model="nvidia/GLM-5-NVFP4",
        arch=ArchTraits(model_type="glm_moe_dsa", traits=("dsa",)),
        quantization="modelopt_fp4",
        sm="sm120",
        framework="SGLang",
    )
    cs = score(ctx, traits=traits, sm=fake_sm({("sm120", "sm120"): 1.0}))
    assert cs.score == pytest.approx(1.0)
    assert cs.coverage == pytest.approx(1.0)
    assert cs.reasons == (
        "same model (nvidia/GLM-5-NVFP4)",
        "same architecture (glm_moe_dsa)",
        "same GPU generation (sm120, NVIDIA RTX PRO 6000 Blackwell)",
        "same quantization (nvfp4 (modelopt_fp4))",
        "same framework (sglang)",
    )
    # the finding's traits come from the caller, compared with the user's
    assert traits.calls == [(ctx.arch, FINDING_TRAITS)]


def test_context_is_a_weighted_mean_over_the_dimensions_given():
    # architecture (weight 0.30) half alike, GPU (0.25) a related SM, framework (0.10) differs
    ctx = QueryContext(arch=ArchTraits(model_type="deepseek_v32"), sm="sm100", framework="vllm")
    cs = score(
        ctx, traits=FakeTraits(0.5, ("both use DSA",)), sm=fake_sm({("sm100", "sm120"): 0.3})
    )
    assert cs.score == pytest.approx((0.30 * 0.5 + 0.25 * 0.3 + 0.10 * 0.0) / 0.65)
    assert cs.coverage == pytest.approx(0.65)
    assert cs.reasons == ("both use DSA", "related GPU (sm120 vs sm100)")


def test_quantization_from_the_architecture_when_not_given():
    ctx = QueryContext(arch=ArchTraits(model_type="glm_moe_dsa", quantization="nvfp4"))
    cs = score(ctx, traits=FakeTraits(1.0))
    assert "same quantization (nvfp4 (modelopt_fp4))" in cs.reasons
    assert cs.coverage == pytest.approx(0.30 + 0.15)


def test_quantization_of_another_family_disagrees_and_a_sibling_format_half_agrees():
    cs = score(QueryContext(quantization="fp8"))
    assert (cs.score, cs.reasons) == (0.0, ())
    cs = score(QueryContext(quantization="mxfp4"))  # both FP4 micro-scaling formats
    assert cs.score == 0.5
    assert cs.reasons == ("related quantization (nvfp4 (modelopt_fp4) vs mxfp4)",)


def test_a_finding_without_sm_does_not_match_a_gpu():
    called = []

    def sm(a, b):  # type: ignore[no-untyped-def]
        called.append((a, b))
        return 1.0

    bare = Finding(id="x", title="x", status="broken")
    cs = M.context_score(
        QueryContext(sm="sm120"), bare, ArchTraits(), FakeTraits(0.0), sm, quantization_similarity
    )
    assert cs.score == 0.0 and cs.coverage == pytest.approx(0.25)
    assert called == []


# --- weighted line overlap and is_confident ---------------------------------------------------


def _stats(df: dict[str, int], n: int = 50):
    from agent.informative import LineStats

    return LineStats(n, df)


BANNER = "Scheduler hit an exception: Traceback (most recent call last):"


def test_a_boilerplate_line_shares_words_but_carries_little_information():
    # every failure prints the banner: its words occur in most documents
    common = {w: 40 for w in M.tokens(BANNER)}
    stats = _stats(common)
    hit = M.weighted_line_overlap([tok(BANNER)], [tok(BANNER)], stats)
    assert hit is not None
    line, info = hit
    assert line.score == pytest.approx(1.0)
    assert info < 0.3
    decisive = M.weighted_line_overlap([tok(ASSERT_LINE)], [tok(ASSERT_LINE)], stats)
    assert decisive is not None and decisive[1] == pytest.approx(1.0)


def test_weighted_overlap_prefers_the_informative_pair():
    stats = _stats({w: 40 for w in M.tokens(BANNER)})
    user = [tok(BANNER), tok(ASSERT_LINE)]
    symptoms = [tok(BANNER), tok(ASSERT_LINE)]
    line, info = M.weighted_line_overlap(user, symptoms, stats)
    assert line.finding_line == ASSERT_LINE and info == pytest.approx(1.0)


def _evidence(**kw):
    from agent.search import Evidence

    base = {"best_line": 0.0, "best_cosine": 0.0, "probability": 0.0}
    return Evidence(**{**base, **kw})


def _ranker(confident_at=0.8):
    from agent.rank import FEATURES, Ranker

    return Ranker((0.0,) * len(FEATURES), 0.0, confident_at, 0.45, 0.6, {})


def test_confident_when_the_fitted_probability_reaches_the_threshold():
    ok, why = M.is_confident(_evidence(probability=0.8), _ranker(0.8))
    assert ok and "p=0.80 >= 0.80" in why
    ok, why = M.is_confident(_evidence(probability=0.79), _ranker(0.8))
    assert not ok and "not a diagnosis" in why


def test_a_shared_informative_line_is_named_as_the_reason():
    ev = _evidence(probability=0.95, best_line=0.9, line_informative=True)
    assert M.is_confident(ev, _ranker()) == (
        True,
        "the log shares an informative error line with a recorded case",
    )


def test_boilerplate_alone_never_makes_an_answer_confident():
    ev = _evidence(probability=0.5, best_line=1.0, line_informative=False)
    ok, why = M.is_confident(ev, _ranker())
    assert not ok and "boilerplate" in why


def test_contradicting_failure_kinds_are_not_confident():
    ev = _evidence(probability=0.99, classes=0.0, line_informative=False)
    ok, why = M.is_confident(ev, _ranker())
    assert not ok and "another kind of failure" in why


def test_the_baselines_are_never_confident():
    ok, why = M.is_confident(_evidence(probability=1.0, mode="bm25"), _ranker())
    assert not ok and why.startswith("bm25 alone")


def test_rank_order_breaks_ties_by_id():
    assert M.rank_order({"b": 0.5, "a": 0.5, "c": 0.9}) == ["c", "a", "b"]


# --- BM25 over the candidates' symptoms --------------------------------------------------------


def test_words_keep_repeats_and_drop_stop_words_and_single_letters():
    assert M.words("The DeepGEMM kernel: deepgemm failed on a B200 x") == [
        "deepgemm", "kernel", "deepgemm", "failed", "b200",
    ]  # fmt: skip
    assert M.words(None) == []


def test_bm25_ranks_the_document_holding_the_rare_query_word_first():
    docs = {
        "oom": M.words("CUDA out of memory while capturing graphs"),
        "ue8m0": M.words("DeepGEMM scale_fmt of checkpoint is not ue8m0 CUDA"),
        "nccl": M.words("NCCL error unhandled system error CUDA"),
    }
    scores = M.bm25_scores(M.words("warning: scale_fmt is not ue8m0 on CUDA"), docs)
    assert max(scores, key=scores.get) == "ue8m0"
    # a word every document holds weighs least: "cuda" alone ranks them by length only
    only_common = M.bm25_scores(["cuda"], docs)
    assert set(only_common) == set(docs) and max(only_common.values()) < scores["ue8m0"]


def test_bm25_leaves_out_documents_sharing_no_word_and_counts_a_query_word_once():
    docs = {"a": M.words("illegal memory access"), "b": M.words("hang at start")}
    once = M.bm25_scores(["illegal", "memory"], docs)
    assert set(once) == {"a"}
    assert M.bm25_scores(["illegal", "illegal", "memory"], docs) == once
    assert M.bm25_scores(["anything"], {}) == {}


def test_bm25_a_repeated_word_in_a_document_counts_with_diminishing_return():
    docs = {
        "one": ["nan", "logits"],
        "two": ["nan", "nan", "logits"],
        "other": ["oom", "oom", "oom"],
    }
    s = M.bm25_scores(["nan"], docs)
    assert s["two"] > s["one"]
    assert s["two"] < 2 * s["one"]
