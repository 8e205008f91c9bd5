"""Log triage: salient lines, signatures, classes, input reading and the ``triage`` command.

The fixtures under tests/fixtures/logs/ are composed from facts (error texts, ranks, timestamps,
figures) of the seeds and cases: the GLM-5 SGLang crash (seed 003, its garbled assertion block
verbatim), the Qwen3.5 NaN response (seed 000), a vLLM worker illegal memory access
(vllm-project/vllm#19483) and a healthy Kimi K2-Thinking start.
"""

from __future__ import annotations

import io
import json
import random
import string
from pathlib import Path

import pytest
from typer.models import CommandInfo
from typer.testing import CliRunner

from agent.logs import classify, compile_rules, read_input, signature, triage
from kb.errors import DeployKBError, InputError
from kb.records import SYMPTOM_CLASSES
from kb.resources import data_file

LOGS = Path(__file__).parent / "fixtures" / "logs"
GLM5 = LOGS / "glm5_nvfp4_sglang_tp8.log"
QWEN = LOGS / "qwen35_nvfp4_nan_response.txt"
VLLM = LOGS / "vllm_091_worker_illegal_memory_access.log"
HEALTHY = LOGS / "kimi_k2_thinking_sglang_healthy.log"

PROB_ASSERT = "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed."
DEEPGEMM = (
    "DeepGemm is enabled but the scale_fmt of checkpoint is not ue8m0. "
    "This might cause accuracy degradation on Blackwell."
)
ALL_TP = tuple(f"TP{i}" for i in range(8))
TB = "Traceback (most recent call last):"
SCHED_TP5 = f"[2026-02-19 00:13:33 TP5] Scheduler hit an exception: {TB}"
INDEX_ASSERT = "Assertion `srcIndex < srcSelectDimSize` failed."
CUMDIST_ASSERT = "Assertion `cumdist[size - 1] > static_cast<scalar_t>(0)` failed."
MULTINOMIAL = "../aten/src/ATen/native/cuda/MultinomialKernel.cu:112: binarySearchForMultinomial: "


def run(path: Path, **kw):
    with path.open(encoding="utf-8") as fh:
        return triage(fh, **kw)


def by_reason(result, reason: str):
    return [ln for ln in result.lines if ln.reason == reason]


# --- (a) GLM-5 on SGLang, TP8: garbled device assertion on every rank --------------------------


def test_glm5_assertion_fragments_rejoined_once_with_every_rank():
    result = run(GLM5)
    asserts = by_reason(result, "assertion")
    assert len(asserts) == 1
    (a,) = asserts
    assert a.text == PROB_ASSERT
    assert a.cls == "device-assert"
    assert a.ranks == ALL_TP
    assert a.count > len(ALL_TP)  # many threads per rank printed it
    garbled = ("_assert_async_cuda_kernel`", ": block: [0`", "tensor con`", "or el/", " ement < 0")
    for line in result.lines:
        assert not any(g in line.text for g in garbled), line.text


def _boilerplate(line) -> bool:
    from agent.informative import line_stats
    from agent.match import tokens
    from agent.rank import load_ranker

    info = line_stats().informativeness(tokens(line.signature))
    return info < load_ranker().boilerplate_below


def test_boilerplate_goes_behind_the_causal_warning(monkeypatch):
    # with statistics in which the scheduler banner and the generic CUDA error are everywhere,
    # both rank behind the causal DeepGemm warning, and the assertion stays first
    from agent import informative, rank
    from agent.match import tokens

    common = tokens(SCHED_TP5) | tokens("RuntimeError: CUDA error: device-side assert triggered")
    stats = informative.LineStats(100, {w: 90 for w in common})
    monkeypatch.setattr(informative, "line_stats", lambda: stats)
    ranker = rank.load_ranker()
    monkeypatch.setattr(
        rank,
        "load_ranker",
        lambda: rank.Ranker(ranker.weights, ranker.none_logit, ranker.confident_at, 0.5, 0.6, {}),
    )
    reasons = [ln.reason for ln in run(GLM5).lines[:3]]
    assert reasons == ["assertion", "causal-warning", "exception"]


def test_glm5_order_counts_and_ranks():
    result = run(GLM5)
    assert result.total_lines == 365
    # the decisive lines first: the kernel assertion first; after it, a line of framework
    # boilerplate (its words occur in failures of every kind) never ranks above the causal warning
    assert (result.lines[0].reason, result.lines[0].cls) == ("assertion", "device-assert")
    warning_at = [ln.reason for ln in result.lines].index("causal-warning")
    for ln in result.lines[1:warning_at]:
        assert not _boilerplate(ln), ln.text
    (exc,) = by_reason(result, "exception")
    assert exc.text == "RuntimeError: CUDA error: device-side assert triggered"
    assert (exc.count, exc.ranks) == (8, ALL_TP)
    (sched,) = by_reason(result, "scheduler-exception")
    assert sched.text == SCHED_TP5
    assert sched.signature == "Scheduler hit an exception: Traceback (most recent call last):"
    assert (sched.count, sched.ranks) == (8, ALL_TP)


def test_glm5_deepgemm_warning_is_kept_as_causal():
    (warn,) = by_reason(run(GLM5), "causal-warning")
    assert warn.text == f"[2026-02-19 00:05:09] {DEEPGEMM}"
    assert warn.signature == DEEPGEMM
    assert warn.cls == "warning"
    assert warn.count == 9  # the launcher and each of the eight schedulers
    assert warn.ranks == ALL_TP
    assert warn.line == 4


def test_glm5_hints_frames_and_server_args_are_not_salient():
    texts = "\n".join(ln.text for ln in run(GLM5).lines)
    assert "TORCH_USE_CUDA_DSA" not in texts
    assert "CUDA_LAUNCH_BLOCKING" not in texts
    assert 'File "' not in texts
    assert "server_args=" not in texts  # mentions enable_nan_detection, watchdog_timeout


def test_glm5_context_before_the_first_scheduler_exception():
    context = by_reason(run(GLM5), "before-scheduler-exception")
    assert [ln.line for ln in context] == [186, 187]
    assert context[1].text.startswith(
        "[2026-02-19 00:13:31 TP0] Prefill batch. #new-seq: 1, #new-token: 38"
    )
    assert context[1].ranks == ("TP0",)


def test_seed_grep_output_pasted_as_is():
    # the `grep -B3 "Scheduler hit an exception"` output quoted in seed 003, byte for byte
    result = run(LOGS / "seed003_grep_before_scheduler_exception.txt")
    assert [(ln.text, ln.ranks) for ln in result.lines] == [
        (PROB_ASSERT, ("TP5",)),
        (SCHED_TP5, ("TP5",)),
    ]
    assert result.lines[0].count == 3
    assert result.total_lines == 6


def test_assertion_split_by_a_line_wrap_is_joined():
    # sglang-project/sglang#1310: the copy wrapped each assertion at a fixed column
    lines = [
        "[21:30:47 TP0] Prefill batch. #new-seq: 5, #new-token: 5, #cached-token: 9719, "
        "cache hit rate: 97.73%, #running-req: 1, #queue-",
        "req: 0",
        MULTINOMIAL + "block: [0,7,0], thread: [0,0,0] Assertion `c",
        "umdist[size - 1] > static_cast<scalar_t>(0)` failed.",
        MULTINOMIAL + "block: [0,7,0], thread: [1,0,0] Assertion `c",
        "umdist[size - 1] > static_cast<scalar_t>(0)` failed.",
        "[21:30:47 TP0] Exception in ModelTpServer:",
    ]
    result = triage(lines)
    (a,) = by_reason(result, "assertion")
    assert a.text == CUMDIST_ASSERT
    assert (a.count, a.ranks) == (2, ("TP0",))
    assert (
        by_reason(result, "scheduler-exception")[0].text
        == "[21:30:47 TP0] Exception in ModelTpServer:"
    )


def test_two_different_assertions_stay_apart():
    lines = [
        "a.cu:1: k: block: [0,0,0], thread: [0,0,0] " + INDEX_ASSERT,
        "b.cu:2: k: block: [0,0,0], thread: [0,0,0] " + PROB_ASSERT,
        "a.cu:1: k: block: [1,0,0], thread: [3,0,0] " + INDEX_ASSERT,
    ]
    result = triage(lines)
    assert [(ln.text, ln.count) for ln in result.lines] == [
        (INDEX_ASSERT, 2),
        (PROB_ASSERT, 1),
    ]


# --- (b) Qwen3.5 NVFP4: API responses ---------------------------------------------------------


def test_qwen_api_responses_give_garbage_and_nan_lines():
    from agent.informative import line_informativeness

    result = run(QWEN)
    assert sorted((ln.text, ln.cls, ln.reason, ln.count) for ln in result.lines) == [
        ('"matched_stop": "NaN happened"', "nan", "api-response", 1),
        ('"reasoning_content": "!!!!..."', "garbage-output", "api-response", 2),
    ]
    # two lines of one importance: the more informative first (data/line_stats.json, refitted
    # with the ranking, decides which), then the first to appear
    info = [round(line_informativeness(ln.signature), 1) for ln in result.lines]
    assert info == sorted(info, reverse=True)
    if info[0] == info[1]:
        assert result.lines[0].line < result.lines[1].line


def test_pasted_output_of_only_exclamation_marks():
    (ln,) = triage(["!!!!!!!!!!!!!!!!!!!!!!!!!!"]).lines
    assert (ln.cls, ln.reason) == ("garbage-output", "model-output")


def test_normal_json_response_is_not_salient():
    response = {
        "choices": [
            {
                "message": {"role": "assistant", "content": "4", "reasoning_content": "2+2 is 4."},
                "finish_reason": "stop",
                "matched_stop": 151645,
            }
        ]
    }
    assert triage(json.dumps(response, indent=2).splitlines()).lines == ()


# --- (c) vLLM multiproc workers ---------------------------------------------------------------


def test_vllm_worker_illegal_memory_access():
    result = run(VLLM)
    (first,) = [ln for ln in by_reason(result, "exception") if ln.count == 4]
    assert first.cls == "illegal-memory-access"
    assert first.signature == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert first.text == (
        "(VllmWorker rank=3 pid=229) ERROR 06-12 01:21:13 [multiproc_executor.py:527] "
        "RuntimeError: CUDA error: an illegal memory access was encountered"
    )
    assert (first.count, first.ranks) == (4, ("rank0", "rank1", "rank2", "rank3"))
    for line in result.lines:
        assert "\x1b" not in line.text and "[1;36m" not in line.text
        assert 'File "' not in line.text and "sampled_token_ids" not in line.text


def test_vllm_flashinfer_sampler_line_is_kept_as_causal():
    (causal,) = by_reason(run(VLLM), "causal-warning")
    assert causal.signature == "Using FlashInfer for top-p & top-k sampling."
    assert causal.ranks == ("rank0", "rank1", "rank2", "rank3")


def test_vllm_engine_dead_error_and_worker_catch_all():
    result = run(VLLM)
    sigs = [ln.signature for ln in result.lines]
    assert (
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
        "See stack trace (above) for the root cause."
    ) in sigs
    (worker,) = [ln for ln in result.lines if ln.signature == "WorkerProc hit an exception."]
    assert worker.reason == "scheduler-exception" and worker.count == 4


def test_nccl_watchdog_timeout_is_a_hang():
    lines = [
        "(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] "
        "Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=158046, OpType=GATHER, NumelIn=2867200, NumelOut=0, "
        "Timeout(ms)=600000) ran for 600027 milliseconds before timing out.",
        "(RayWorkerWrapper pid=4010) [rank2]:[E ProcessGroupNCCL.cpp:563] [Rank 2] "
        "Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=158047, OpType=GATHER, NumelIn=2867200, NumelOut=0, "
        "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.",
    ]
    (ln,) = triage(lines).lines
    assert (ln.cls, ln.count, ln.ranks) == ("hang", 2, ("rank1", "rank2"))


# --- (d) no errors, and questions -------------------------------------------------------------


def test_healthy_log_gives_nothing():
    result = run(HEALTHY)
    assert result.lines == ()
    assert result.total_lines == 100


@pytest.mark.parametrize(
    "question",
    [
        "what works for Kimi K2 Thinking NVFP4 on RTX PRO 6000?",
        "GLM-5 crashes at the first request on 8x RTX PRO 6000, which flags should I change?",
        "How do I fix an ImportError when starting sglang?",
    ],
)
def test_plain_question_gives_empty_triage(question):
    assert triage([question]).lines == ()


def test_question_quoting_an_error_keeps_it():
    (ln,) = triage(
        ['I get "CUDA error: an illegal memory access was encountered" with vLLM 0.9.1']
    ).lines
    assert ln.cls == "illegal-memory-access"


def test_max_lines_caps_the_result():
    result = run(VLLM, max_lines=2)
    assert len(result.lines) == 2
    full = run(VLLM).lines
    assert set(result.lines) <= set(full) and len(full) > 2
    with pytest.raises(ValueError):
        triage([], max_lines=0)


@pytest.mark.slow
def test_bounded_memory_on_a_generated_200k_line_log():
    rnd = random.Random(7)
    produced = 0

    def log():
        nonlocal produced
        for i in range(200_000):
            produced += 1
            if i % 1000 == 998:
                stamp = f"[2026-02-19 01:{i // 60 % 60:02d}:{i % 60:02d} TP{i % 8}]"
                yield f"{stamp} Scheduler hit an exception: {TB}"
            elif i % 1000 == 999:
                yield "RuntimeError: CUDA error: an illegal memory access was encountered"
            elif i % 500 == 250:  # 400 distinct messages that no mask can merge
                yield "RuntimeError: unexpected " + "".join(
                    rnd.choices(string.ascii_lowercase, k=16)
                )
            else:
                yield (
                    f"[2026-02-19 00:{i // 60 % 60:02d}:{i % 60:02d} TP{i % 8}] Decode batch. "
                    f"#running-req: {i % 17}, #token: {i}, token usage: 0.{i % 100:02d}, "
                    f"gen throughput (token/s): {i % 300}.5, #queue-req: 0"
                )

    result = triage(log(), max_lines=10)
    assert produced == 200_000 and result.total_lines == 200_000
    assert len(result.lines) == 10
    assert all(ln.reason == "exception" for ln in result.lines)
    # the distinct messages were capped at max_lines; the repeated one was counted throughout
    assert sum("unexpected" in ln.text for ln in result.lines) == 9
    (ima,) = [ln for ln in result.lines if "illegal memory access" in ln.text]
    assert (ima.count, ima.ranks) == (200, ("TP6",))


# --- signatures -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b",
    [
        (
            SCHED_TP5,
            f"[2026-03-02 17:40:01 DP1 TP0] Scheduler hit an exception: {TB}",
        ),
        (
            "\x1b[1;36m(VllmWorker rank=3 pid=229)\x1b[0;0m ERROR 06-12 01:21:13 "
            "[multiproc_executor.py:527]   File /usr/local/lib/python3.12/dist-packages/torch/nn/"
            "modules/module.py, line 1762, in _call_impl",
            "[1;36m(VllmWorker rank=0 pid=17)[0;0m ERROR 07-01 09:00:00 [multiproc_executor.py:540]"
            "   File /opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py, line 1751, "
            "in _call_impl",
        ),
        (
            MULTINOMIAL + "block: [0,7,0], thread: [1,0,0] " + CUMDIST_ASSERT,
            "/pytorch/aten/src/ATen/native/cuda/MultinomialKernel.cu:120: "
            "binarySearchForMultinomial: block: [3,0,0], thread: [31,0,0] " + CUMDIST_ASSERT,
        ),
        (
            "2026-09-22T06:50:07.810074780Z zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:29236')",
            "2026-10-01T11:02:33.000000001Z zmq.error.ZMQError: Address already in use (addr='tcp://10.0.0.7:31001')",
        ),
        (
            "Exception: Capture cuda graph failed: CUDA driver error "
            "(/deepgemm/csrc/apis/../jit_kernels/impls/"
            "runtime_utils.hpp:143): 700 (CUDA_ERROR_ILLEGAL_ADDRESS) at 0x7f3a2c000000",
            "Exception: Capture cuda graph failed: CUDA driver error "
            "(/root/deepgemm/csrc/apis/../jit_kernels/impls/"
            "runtime_utils.hpp:151): 700 (CUDA_ERROR_ILLEGAL_ADDRESS) at 0x7fe1d4a00000",
        ),
        (
            "Feb 19 00:13:33 gpu-node-3 python3[2211]: [2026-02-19 00:13:33 TP5] "
            "KV Cache is allocated. #tokens: 425664, KV size: 24.37 GB",
            "Mar 01 10:00:01 gpu-node-7 python3[9]: [2026-03-01 10:00:01 TP0] "
            "KV Cache is allocated. #tokens: 612352, KV size: 17.93 GB",
        ),
    ],
)
def test_signature_equal_across_runs_ranks_and_hosts(a, b):
    assert signature(a) == signature(b)


def test_a_rust_tracing_prefix_is_peeled_like_any_other_log_prefix():
    # Dynamo and other Rust front ends log through `tracing`: stamp, padded level, module path
    plain = "VLLM: Failed: /workspace/csrc/custom_all_reduce.cuh:342 'invalid argument'"
    for prefix in (
        "2025-06-12T01:21:13.123456Z  INFO dynamo_engine_vllm::worker: ",
        "2025-07-01T09:00:00.000001Z ERROR dynamo_runtime::pipeline::network: ",
        "2025-07-01T09:00:00Z  WARN xinfer::core::engine: ",
    ):
        assert signature(prefix + plain) == signature(plain)
    # a docker-stamped traceback frame keeps its indentation
    assert signature('2026-09-22T06:50:07Z   File "x.py", line 3, in f') == signature(
        '  File "x.py", line 3, in f'
    )


def test_a_padded_level_after_a_stamp_is_read_whatever_its_name():
    # loggers other than Rust's tracing pad WARNING and CRITICAL after the stamp too
    plain = "engine core startup failed"
    for level in ("WARNING", "CRITICAL", "FATAL"):
        assert signature(f"2025-07-01T09:00:00Z  {level} vllm.engine: {plain}") == signature(
            f"vllm.engine: {plain}"
        )
    kept = triage(["2025-07-01T09:00:00Z  CRITICAL vllm.engine: startup failed for the third time"])
    assert [line.reason for line in kept.lines] == ["error-log"]


def test_a_cpp_type_after_a_level_is_the_message_not_a_rust_target():
    line = (
        "ERROR 06-12 01:21:13 [utils.py:1] c10::DistBackendError: NCCL error in: "
        "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error"
    )
    assert signature(line).startswith("c10::DistBackendError: NCCL error in:")
    assert [kept.reason for kept in triage([line]).lines] == ["exception"]
    # a Rust target is lower-case snake_case and is still peeled
    assert signature("ERROR dynamo_runtime::pipeline: c10::DistBackendError: x") == signature(
        "c10::DistBackendError: x"
    )


def test_signature_masks_and_keeps():
    assert signature("[2026-02-19 00:13:33 TP5] ssh 10.1.230.175 pid=229 rank=3 took 41.27 s") == (
        "ssh <ip> pid=<n> rank=<n> took <n> s"
    )
    # format names carry meaning: kept
    assert signature(DEEPGEMM) == DEEPGEMM
    assert "fp8_e4m3" in signature("Using KV cache scaling factor 1.0 for fp8_e4m3.")
    assert "sm120" in signature("no kernel image for sm120")


def test_signature_tells_different_errors_apart():
    assert signature("RuntimeError: CUDA error: device-side assert triggered") != signature(
        "RuntimeError: CUDA error: an illegal memory access was encountered"
    )


# --- classes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, cls",
    [
        (
            "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
            "illegal-memory-access",
        ),
        ("RuntimeError: CUDA error: device-side assert triggered", "device-assert"),
        (PROB_ASSERT, "device-assert"),
        ("probability tensor contains either inf, nan or element < 0", "nan"),
        ('"matched_stop": "NaN happened"', "nan"),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "oom"),
        (
            "ValueError: The model's max seq len (29000) is larger than the maximum number of "
            "tokens that can be stored in KV cache (23648).",
            "oom",
        ),
        ("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=158046)", "hang"),
        ('"reasoning_content": "!!!!!!!!"', "garbage-output"),
        ("the output is all Unicode NULL", "empty-output"),
        ("|gsm8k|      3|flexible-extract|     5|exact_match|", "accuracy"),
        ("Using default MoE config. Performance might be sub-optimal!", "warning"),
        (DEEPGEMM, "warning"),
        ("KeyError: 'glm_moe_dsa'", "crash"),
        ("Scheduler hit an exception: Traceback (most recent call last):", "crash"),
        ("Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0", None),
    ],
)
def test_classify(text, cls):
    assert classify(text) == cls
    assert cls is None or cls in SYMPTOM_CLASSES


def test_rules_are_validated():
    base = json.loads(data_file("triage.json").read_text(encoding="utf-8"))
    compile_rules(base)
    bad = dict(
        base, errors=[{"pattern": "CUDA error(", "keywords": ["cuda error"], "reason": "error"}]
    )
    with pytest.raises(DeployKBError) as exc:
        compile_rules(bad, "triage.json")
    assert str(exc.value).startswith(
        "triage.json: errors[0]: bad regular expression 'CUDA error(':"
    )
    bad = dict(base, classes=[{"cls": "explosion", "patterns": ["boom"]}])
    with pytest.raises(DeployKBError) as exc:
        compile_rules(bad, "triage.json")
    assert str(exc.value).startswith(
        "triage.json: classes[0]: unknown class 'explosion'; use one of nan,"
    )
    bad = dict(base, errors=[{"pattern": "x", "keywords": ["CUDA"], "reason": "error"}])
    with pytest.raises(DeployKBError) as exc:
        compile_rules(bad, "triage.json")
    assert (
        str(exc.value)
        == "triage.json: errors[0]: 'keywords' must be a non-empty list of lower-case strings"
    )


# --- read_input -------------------------------------------------------------------------------


def input_error(*args) -> str:
    with pytest.raises(InputError) as exc:
        list(read_input(*args))
    return str(exc.value)


def test_read_input_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    stdin = io.StringIO("")
    assert input_error(None, Path("x.log"), stdin) == "--log x.log: no such file"
    Path("empty.log").write_bytes(b"")
    assert (
        input_error(None, Path("empty.log"), stdin)
        == "empty input: paste an error, a log, or a question"
    )
    Path("blank.log").write_bytes(b"\n  \n")
    assert (
        input_error(None, Path("blank.log"), stdin)
        == "empty input: paste an error, a log, or a question"
    )
    assert input_error("", None, stdin) == "empty input: paste an error, a log, or a question"
    assert input_error("   \n", None, stdin) == "empty input: paste an error, a log, or a question"
    Path("x.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(200))
    assert input_error(None, Path("x.bin"), stdin) == "input looks binary (x.bin); pass a text log"
    Path("noise.bin").write_bytes(bytes(range(128, 256)) * 64)  # no NUL, not UTF-8 either
    assert (
        input_error(None, Path("noise.bin"), stdin)
        == "input looks binary (noise.bin); pass a text log"
    )
    binary_stdin = io.TextIOWrapper(io.BytesIO(b"\x00\x01\x02" * 100))
    assert input_error("-", None, binary_stdin) == "input looks binary (stdin); pass a text log"
    assert (
        input_error("-", None, io.StringIO(""))
        == "empty input: paste an error, a log, or a question"
    )
    Path("dir.log").mkdir()
    assert input_error(None, Path("dir.log"), stdin) == "--log dir.log: not a file"
    assert input_error("oops", Path("x.log"), stdin) == (
        "give the log either as TEXT (or - for stdin) or with --log, not both"
    )
    assert input_error(None, None, stdin) == "no input: pass TEXT, - to read stdin, or --log FILE"


def test_read_input_replaces_undecodable_bytes(tmp_path):
    log = tmp_path / "mixed.log"
    log.write_bytes(
        b"INFO starting \xff\xfe\xfd\r\n" + SCHED_TP5.encode() + b"\r\n"
        b"RuntimeError: CUDA error: an illegal memory access was encountered \xc3\r\n"
    )
    lines = read_input(None, log, io.StringIO(""))
    assert not isinstance(lines, (list, tuple))  # a stream, not a list
    lines = list(lines)
    assert lines[0] == "INFO starting \ufffd\ufffd\ufffd\r"
    result = triage(lines)
    assert (
        result.lines[0].signature
        == "RuntimeError: CUDA error: an illegal memory access was encountered \ufffd"
    )
    assert result.lines[0].ranks == ("TP5",)


def test_read_input_text_and_stdin(tmp_path):
    assert list(read_input("a\nb", None, io.StringIO(""))) == ["a", "b"]
    stdin = io.TextIOWrapper(io.BytesIO(b"one\ntwo\n" * 10_000))
    lines = list(read_input("-", None, stdin))
    assert len(lines) == 20_000 and lines[-1] == "two"
    assert list(read_input("-", None, io.StringIO("x\ny"))) == ["x", "y"]


def test_read_input_cuts_a_line_without_newlines(tmp_path):
    log = tmp_path / "one-line.log"
    log.write_text("A" * 200_000 + "\nRuntimeError: boom\n")
    lines = list(read_input(None, log, io.StringIO("")))
    assert max(len(x) for x in lines) <= 65_536
    assert lines[-1] == "RuntimeError: boom"


# --- the prefilter (LogStream.segments) ---------------------------------------------------------


def _both_ways(path: Path):
    """(the prefiltered triage of a file, the triage of every one of its lines)."""
    fast = triage(read_input(None, path, io.StringIO("")))
    full = triage(list(read_input(None, path, io.StringIO(""))))
    return fast, full


@pytest.mark.parametrize("log", sorted(LOGS.iterdir()), ids=lambda p: p.name)
def test_prefilter_keeps_what_the_full_parse_keeps(log):
    fast, full = _both_ways(log)
    assert fast == full


def test_prefilter_on_a_long_log_with_crashes_between_healthy_stretches(tmp_path):
    healthy = HEALTHY.read_text().splitlines()[20:]
    crash = GLM5.read_text()
    vllm = VLLM.read_text()
    log = tmp_path / "days.log"
    with log.open("w") as out:
        for i in range(30):
            out.write("\n".join(healthy) + "\n")
            if i in (3, 17):
                out.write(crash)
            if i == 25:
                out.write(vllm)
    fast, full = _both_ways(log)
    assert fast == full
    assert fast.total_lines == len(log.read_text().splitlines())
    assert PROB_ASSERT in [ln.text for ln in fast.lines]
    # a line number points at the line in the file
    lines = log.read_text().splitlines()
    first = next(ln for ln in fast.lines if ln.reason == "exception")
    assert first.line is not None and lines[first.line - 1].strip().endswith(first.text[-40:])


def test_prefilter_without_grep_parses_every_line(tmp_path, monkeypatch):
    import shutil

    log = tmp_path / "x.log"
    log.write_text(HEALTHY.read_text() + GLM5.read_text())
    expected = triage(read_input(None, log, io.StringIO("")))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert triage(read_input(None, log, io.StringIO(""))) == expected


def test_stdin_is_prefiltered_too():
    data = (HEALTHY.read_text() * 20 + GLM5.read_text()).encode()
    stdin = io.TextIOWrapper(io.BytesIO(data))
    fast = triage(read_input("-", None, stdin))
    assert fast == triage(data.decode().splitlines())


def test_memory_stays_bounded_on_a_10_mb_line_nul_bytes_and_ansi(tmp_path):
    import tracemalloc

    log = tmp_path / "hostile.log"
    with log.open("wb") as out:
        out.write(b"INFO start\n" * 1000)
        out.write(b"x" * (10 << 20))  # a 10 MB line with an error in its tail
        out.write(b" RuntimeError: CUDA error: an illegal memory access was encountered\n")
        out.write(b"INFO a \x00\x00 NUL in the middle\n" * 1000)
        out.write(b"\x1b[1;31mERROR 06-12 01:21:13 [core.py:1] EngineCore failed\x1b[0m\n")
        out.write("\u00e9".encode() * (3 << 20) + b"\n")  # a 6 MB line of two-byte characters
    tracemalloc.start()
    result = triage(read_input(None, log, io.StringIO("")))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 8 << 20, peak  # the input is 17 MB; no line is held whole
    texts = [ln.text for ln in result.lines]
    assert any("EngineCore failed" in t for t in texts)
    assert any(t.startswith("x") and "illegal memory access" in t for t in texts) or any(
        "illegal memory access" in t for t in texts
    )
    assert result == triage(list(read_input(None, log, io.StringIO(""))))


# --- the command ------------------------------------------------------------------------------


@pytest.fixture
def cli(monkeypatch):
    import agent.cli.commands.triage  # noqa: F401  (registers `triage`)
    from agent.cli.app import app

    if len(app.registered_commands) < 2:  # typer runs a lone command without its name
        noop = CommandInfo(name="noop", callback=lambda: None)
        monkeypatch.setattr(app, "registered_commands", [*app.registered_commands, noop])
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(app, ["triage", *args], input=input)

    return invoke


def test_cli_human_output(cli):
    result = cli("--log", str(GLM5))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("7 salient lines in 365 lines")
    assert out.count(PROB_ASSERT) == 1
    assert " 1. device-assert  x24  TP0 TP1 TP2 TP3 TP4 TP5 TP6 TP7  (assertion, line 188)" in out
    assert f"signature: {DEEPGEMM}" in out


def test_cli_json(cli):
    result = cli("--log", str(VLLM), "--json", "--max-lines", "3")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["total_lines"] == 196
    assert len(data["lines"]) == 3
    first = data["lines"][0]
    # "class", as in ask --json and the finding files, never Python's "cls"
    assert set(first) == {"text", "signature", "class", "reason", "count", "ranks", "line"}
    assert [ln["signature"] for ln in data["lines"]] == [ln.signature for ln in run(VLLM).lines[:3]]
    assert "Using FlashInfer for top-p & top-k sampling." in [
        ln["signature"] for ln in data["lines"]
    ]


def test_cli_stdin_and_text(cli):
    result = cli("-", "--json", input=QWEN.read_text())
    assert sorted(ln["class"] for ln in json.loads(result.stdout)["lines"]) == [
        "garbage-output",
        "nan",
    ]
    result = cli('"matched_stop": "NaN happened"')
    assert result.exit_code == 0 and '"matched_stop": "NaN happened"' in result.stdout


def test_cli_no_error_lines(cli):
    result = cli("--log", str(HEALTHY))
    assert result.exit_code == 0
    assert result.stdout.strip() == "no error lines found in 100 lines"
    data = json.loads(cli("--log", str(HEALTHY), "--json").stdout)
    assert data == {"total_lines": 100, "lines": []}


def test_cli_errors(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("--log", "x.log")
    assert result.exit_code == 2
    assert result.stderr.strip() == "Error: --log x.log: no such file"
    Path("x.bin").write_bytes(bytes(64))
    result = cli("--log", "x.bin")
    assert result.exit_code == 2
    assert result.stderr.strip() == "Error: input looks binary (x.bin); pass a text log"


def test_cli_help_has_an_example(cli):
    result = cli("--help")
    assert result.exit_code == 0
    assert "deploykb triage --log" in result.stdout


def test_a_pasted_shell_command_is_not_the_error_it_greps_for():
    from agent.logs import triage

    result = triage(
        [
            "$ ssh 10.1.230.175 'grep -B3 \"Scheduler hit an exception\" ~/sglang-glm5.log'\n",
            "root@gpu-3:~# grep 'CUDA error: an illegal memory access' server.log\n",
            "[2026-02-19 00:13:33 TP5] Scheduler hit an exception: Traceback (most recent call last):\n",
        ]
    )
    assert [ln.line for ln in result.lines] == [3]
    assert all("ssh" not in ln.text and "grep" not in ln.text for ln in result.lines)


def test_the_decisive_line_of_a_gpu_without_kernels_comes_first():
    """PyTorch's "sm_120 is not compatible" warning says why the kernel image is missing: it is
    classified and ranked above the generic CUDA error it explains (issue 8, part 4)."""
    log = Path(__file__).parent / "fixtures" / "handwritten" / "rtx5090-no-kernel-image.log"
    t = triage(log.read_text().splitlines(keepends=True))
    assert "is not compatible with the current PyTorch installation" in t.lines[0].text
    assert t.lines[0].cls == "crash"
    assert any("no kernel image is available" in ln.text for ln in t.lines[1:])


def test_plain_text_drops_log_wrapping_but_keeps_what_names_the_code():
    from agent.logs import plain_text

    text = (
        "(EngineCore_DP0 pid=262) ERROR 10-07 17:12:54 [v1/engine/core.py:708]   File "
        '"/usr/local/lib/python3.12/dist-packages/vllm/attention/layer.py", line 614, in forward\n'
        "[2026-02-19 00:13:33 TP5] Scheduler hit an exception: Traceback (most recent call last):\n"
        "\x1b[31mERROR\x1b[0m 01-02 10:00:00 [gpu_model_runner.py:12] DeepGEMM failed\n\n"
    )
    assert plain_text(text).splitlines() == [
        'File "vllm/attention/layer.py", line 614, in forward',
        "Scheduler hit an exception: Traceback (most recent call last):",
        "DeepGEMM failed",
    ]


def test_an_nccl_shared_memory_failure_keeps_the_line_that_names_dev_shm():
    """torch's 'unhandled system error' says only that a system call failed; NCCL's own lines say
    which one (its shared-memory segment under /dev/shm) and name the component."""
    from agent.components import from_text

    lines = [
        "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
        "NCCLUtils.cpp:77, unhandled system error (run with NCCL_DEBUG=INFO for details), "
        "NCCL version 2.26.2\n",
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
        "device error.\n",
        "Last error:\n",
        "Error while creating shared memory segment /dev/shm/nccl-Ab12Cd (size 9637888)\n",
    ]
    texts = [ln.text for ln in triage(lines).lines]
    assert any(t.startswith("Error while creating shared memory segment /dev/shm/") for t in texts)
    assert any(t.startswith("ncclSystemError:") for t in texts)
    assert {"nccl", "nccl-shm"} <= from_text("\n".join(texts))
    # the plain NCCL error alone does not name the shared-memory transport
    assert "nccl-shm" not in from_text(lines[0])
    # other programs' shared memory is not NCCL's: Ray's object store, PostgreSQL
    assert "nccl-shm" not in from_text(
        "WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only "
        "67108864 bytes available."
    )
    assert "nccl-shm" not in from_text('could not resize shared memory segment "/PostgreSQL.1"')
    # NCCL up to 2.15 allocated the segment with posix_fallocate (src/include/shm.h)
    assert "nccl-shm" in from_text(
        "include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device"
    )


def test_a_cudacheck_failure_line_is_an_error_and_names_its_kernel_file():
    """The CUDACHECK macros print 'Failed: <file>:<line> '<CUDA error>'' and exit: no 'Error' word,
    no traceback, yet it is the line that says what failed."""
    from agent.components import from_text

    lines = [
        "INFO 05-01 10:00:00 [worker.py:12] Capturing CUDA graph shapes: 100%| 35/35\n",
        "worker: VLLM: Failed: /build/csrc/custom_all_reduce.cuh:412 'invalid argument'\n",
        "Failed: Cuda error all_reduce.cu:88 'peer access is not supported between these two "
        "devices'\n",
    ]
    t = triage(lines)
    assert len(t.lines) == 2
    (ar,) = [ln for ln in t.lines if "custom_all_reduce.cuh:412 'invalid argument'" in ln.text]
    assert ar.reason == "error"
    assert "custom-allreduce" in from_text(ar.text)
    # a sentence that merely starts with the word is not such a line
    assert triage(["Failed: to start the server, see below\n"]).lines == ()
