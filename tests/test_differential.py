"""The differential: a failing deployment against the nearest working one, and the plan.

Every case here comes from the findings written for these tests (``tests/fixtures/differential``),
indexed with the hash embedder, so what the answer says is shown to come from the data: remove a
fixture's evidence or trait and the plan changes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agent.cli  # noqa: F401  (registers the commands)
from agent.answer import answer, build_context
from agent.cli.app import app
from agent.differential import UNLISTED, command_diff, nearest_working, rules
from agent.flags import parse_command
from agent.search import Searcher
from kb.errors import InputError
from kb.records import Answer

FIXTURES = Path(__file__).parent / "fixtures"
KB = FIXTURES / "differential"
GLM5_LOG = FIXTURES / "logs" / "glm5_nvfp4_sglang_tp8.log"

UNRESOLVED = "sparse-moe-nvfp4-sm120-nan-unresolved"
WORKING = "mla-moe-nvfp4-sm120-works"
HOPPER = "mla-moe-fp8-h100-works"
CUDNN_CASE = "hybrid-moe-nvfp4-sm120-nan-fp4-cudnn"
HANG_CASE = "dense-h100-hang-cuda-graph"

CMD = (
    "python -m sglang.launch_server --model-path example/Sparse-MoE-NVFP4 --tp 8 "
    "--quantization modelopt_fp4 --kv-cache-dtype fp8_e4m3"
)
TRIED = ("--fp8-gemm-backend cutlass", "--disable-cuda-graph")
ASSERT = (
    "/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:109: _assert_async_cuda_kernel: "
    "block: [0,0,0], thread: [0,0,0] Assertion `probability tensor contains either `inf`, `nan` "
    "or element < 0` failed."
)
DSV32_LOG = f"""\
[2026-03-02 10:11:12 TP0] Load weight end. type=DeepseekV32ForCausalLM, dtype=torch.bfloat16
[2026-03-02 10:20:01 TP3] Decode batch. #running-req: 1, #token: 512, gen throughput (token/s): 3.11
{ASSERT}
[2026-03-02 10:20:02 TP3] Scheduler hit an exception: Traceback (most recent call last):
RuntimeError: CUDA error: device-side assert triggered
"""


@pytest.fixture(scope="module")
def searcher(tmp_path_factory):
    from kb.embed import HashEmbedder
    from kb.ingest import ingest
    from kb.store import open_db

    db = open_db(tmp_path_factory.mktemp("differential") / "kb.db")
    report = ingest(db, [KB], lambda: HashEmbedder(dim=64))
    assert report.errors == () and report.added == 5
    yield Searcher(db, lambda: HashEmbedder(dim=64))
    db.close()


def ask(searcher, lines, **ctx) -> Answer:
    warnings: list[str] = []
    context = build_context(detect=False, warnings=warnings, **ctx)
    return answer(lines, context, searcher, top=3, warnings=warnings)


def glm_log() -> list[str]:
    return GLM5_LOG.read_text(encoding="utf-8").splitlines()


def plan_of(a: Answer) -> list[set[tuple[str, str]]]:
    return [{(c.action, c.name) for c in s.changes} for s in a.differential.plan]


# --- the done-when story ------------------------------------------------------------------------


def test_dsa_failure_against_the_working_deployment_on_the_same_gpus(searcher):
    a = ask(searcher, glm_log(), arch="glm_moe_dsa", gpu="sm120", cmd=CMD, tried=TRIED)
    best = a.proposals[0].match.finding
    assert best.id == UNRESOLVED and best.status == "broken"

    d = a.differential
    assert d is not None and d.leads
    assert "unresolved" in d.lead_reason and UNRESOLVED in d.lead_reason
    assert d.against.finding.id == WORKING
    assert d.against.provenance == "reconstructed"
    assert d.against.reasons[0].startswith("same GPU generation (sm120")
    # the user's dead ends and the case's, merged
    assert set(d.tried) >= {*TRIED, "--attention-backend flashinfer", "--attention-backend triton"}

    # model, parsers and trust-remote-code are shown apart and never tried
    assert {c.name for c in d.descriptive} == {
        "--model-path",
        "--trust-remote-code",
        "--tool-call-parser",
    }
    assert {c.change.name for c in d.candidates} == {
        "--kv-cache-dtype",
        "--disable-cuda-graph",
        "--fp4-gemm-backend",
    }

    # step 1: the untried difference the DSA trait explains, with CUDA graphs off as in the
    # working deployment (tried alone, and the step says so); step 2: the cuDNN FP4 GEMM
    assert plan_of(a) == [
        {("remove", "--kv-cache-dtype"), ("add", "--disable-cuda-graph")},
        {("add", "--fp4-gemm-backend")},
    ]
    first, second = d.plan
    assert "DSA sparse attention" in first.why
    assert "--disable-cuda-graph: tried without effect (you)" in first.why
    assert "rather than alone" in first.why
    assert "go on to step 2" in first.expect and "probability tensor" in first.expect
    assert CUDNN_CASE in second.why
    assert second.command.endswith(
        "--quantization modelopt_fp4 --disable-cuda-graph --fp4-gemm-backend flashinfer_cudnn"
    )
    assert "--kv-cache-dtype" not in first.command


def test_deepseek_v32_gets_the_same_answer_through_the_dsa_trait(searcher):
    cmd = CMD.replace("example/Sparse-MoE-NVFP4", "example/DeepSeek-V3.2-NVFP4")
    a = ask(
        searcher, DSV32_LOG.splitlines(), arch="deepseek_v32", gpu="sm120", cmd=cmd, tried=TRIED
    )
    assert a.proposals[0].match.finding.id == UNRESOLVED
    assert a.differential.leads and a.differential.against.finding.id == WORKING
    assert plan_of(a)[:2] == [
        {("remove", "--kv-cache-dtype"), ("add", "--disable-cuda-graph")},
        {("add", "--fp4-gemm-backend")},
    ]


def test_without_the_trait_difference_the_evidence_orders_the_plan(searcher):
    """deepseek_v3 has MLA but no DSA: nothing explains the KV-cache dtype any more, and the
    change that fixed a NaN elsewhere comes first."""
    a = ask(searcher, glm_log(), arch="deepseek_v3", gpu="sm120", cmd=CMD)
    d = a.differential
    assert d.against.finding.id == WORKING
    assert not any(c.trait for c in d.candidates)
    assert plan_of(a)[0] == {("add", "--fp4-gemm-backend")}
    kv = next(c for c in d.candidates if c.change.name == "--kv-cache-dtype")
    assert kv.fixed == () and kv.tried_by == ()


def test_evidence_counts_only_the_same_kind_of_failure(searcher):
    """A hang fixed by turning CUDA graphs off is no evidence for a NaN."""
    a = ask(searcher, glm_log(), arch="glm_moe_dsa", gpu="sm120", cmd=CMD)
    graphs = next(c for c in a.differential.candidates if c.change.name == "--disable-cuda-graph")
    assert HANG_CASE not in graphs.fixed
    cudnn = next(c for c in a.differential.candidates if c.change.name == "--fp4-gemm-backend")
    assert cudnn.fixed == (CUDNN_CASE,)
    # untried now: CUDA graphs off is a step of its own
    assert {("add", "--disable-cuda-graph")} in plan_of(a)


# --- when it leads ------------------------------------------------------------------------------

NAN = '{"finish_reason":"stop","matched_stop": "NaN happened"}'
HYBRID_CMD = (
    "python -m sglang.launch_server --model-path example/Hybrid-MoE-NVFP4 --tp 4 "
    "--quantization modelopt_fp4"
)


def test_a_resolved_match_keeps_the_lead_and_the_differential_follows(searcher):
    a = ask(searcher, [NAN], arch="qwen3_5_moe", gpu="sm120", cmd=HYBRID_CMD)
    assert a.proposals[0].match.finding.id == CUDNN_CASE
    assert a.differential is not None and not a.differential.leads
    assert a.differential.against.finding.id != CUDNN_CASE


def test_it_leads_when_the_fix_is_already_in_the_command(searcher):
    cmd = HYBRID_CMD + " --fp4-gemm-backend flashinfer_cudnn"
    d = ask(searcher, [NAN], arch="qwen3_5_moe", gpu="sm120", cmd=cmd).differential
    assert d.leads and d.lead_reason.startswith("your command already has the fix")


def test_it_leads_when_the_user_tried_the_fix(searcher):
    d = ask(
        searcher,
        [NAN],
        arch="qwen3_5_moe",
        gpu="sm120",
        cmd=HYBRID_CMD,
        tried=("--fp4-gemm-backend=flashinfer_cudnn",),
    ).differential
    assert d.leads and d.lead_reason.startswith("you already tried the fix")


def test_without_a_command_there_is_no_differential(searcher):
    a = ask(searcher, glm_log(), arch="glm_moe_dsa", gpu="sm120")
    assert a.differential is None


def test_a_bad_tried_entry_is_an_input_error():
    with pytest.raises(InputError, match=r"--tried 'not a flag': not a change"):
        build_context(cmd=CMD, tried=("not a flag",), detect=False, warnings=[])


# --- the parts ----------------------------------------------------------------------------------


def _findings():
    from kb.parse import parse_file

    return [
        f for p in sorted(KB.glob("*.md")) if p.name != "README.md" for f in parse_file(p).findings
    ]


def test_same_gpu_generation_comes_before_the_same_architecture():
    from agent.answer import build_context
    from agent.context import traits_for_model_type

    def nearest(gpu):
        ctx = build_context(arch="kimi_k2", gpu=gpu, cmd=CMD, detect=False, warnings=[])
        found = nearest_working(ctx, _findings(), lambda f: traits_for_model_type(f.architecture))
        return [w.finding.id for w in found]

    assert nearest("sm120")[0] == WORKING and HOPPER in nearest("sm120")
    assert nearest("H100")[0] == HOPPER


def test_the_diff_translates_across_frameworks_and_keeps_descriptive_flags_apart():
    user = parse_command(
        "vllm serve example/Sparse-MoE-NVFP4 --tensor-parallel-size 8 --kv-cache-dtype fp8 "
        "--port 8001"
    )
    working = parse_command(
        "python -m sglang.launch_server --model-path example/MLA-MoE-NVFP4 --tp 8 "
        "--trust-remote-code --disable-cuda-graph"
    )
    d = command_diff(user, working)
    assert {(c.action, c.name) for c in d.descriptive} == {
        ("change", "--model"),
        ("add", "--trust-remote-code"),
        ("remove", "--port"),
    }
    eager = next(c for c in d.behavioural if c.name == "--enforce-eager")
    assert eager.note.startswith("translated from sglang --disable-cuda-graph")
    assert ("remove", "--kv-cache-dtype") in {(c.action, c.name) for c in d.behavioural}


def test_a_flags_only_deployment_leaves_the_flags_it_does_not_list_unknown():
    """A record of two flags says nothing about the others: they are not removals to try."""
    user = parse_command(CMD)
    working = parse_command("--disable-cuda-graph", "sglang")
    d = command_diff(user, working, complete=False)
    assert d.descriptive == ()  # the record says nothing about the layout: no "remove --tp"
    assert [(c.action, c.name) for c in d.behavioural] == [("add", "--disable-cuda-graph")]
    assert {c.name for c in d.unlisted} == {"--kv-cache-dtype", "--quantization"}
    assert all(c.action == "keep" and c.note == UNLISTED for c in d.unlisted)


def test_a_working_deployment_known_by_its_flags_and_components(tmp_path):
    """No command and no flag for the FP4 GEMM, but its record names the FP4 GEMM component:
    the change to that component that fixed the same kind of failure on the same GPUs joins the
    plan, after the DSA-explained difference."""
    from kb.embed import HashEmbedder
    from kb.ingest import ingest
    from kb.store import open_db

    kb = tmp_path / "kb"
    shutil.copytree(KB, kb)
    (kb / f"{WORKING}.md").unlink()
    shutil.copy(FIXTURES / "differential_flags_only" / "mla-moe-nvfp4-sm120-flags.md", kb)
    db = open_db(tmp_path / "kb.db")
    assert ingest(db, [kb], lambda: HashEmbedder(dim=64)).errors == ()
    a = ask(
        Searcher(db, lambda: HashEmbedder(dim=64)),
        glm_log(),
        arch="glm_moe_dsa",
        gpu="sm120",
        cmd=CMD,
        tried=TRIED,
    )
    d = a.differential
    assert d.against.finding.id == "mla-moe-nvfp4-sm120-flags"
    assert d.against.provenance == "flags"
    assert plan_of(a) == [
        {("remove", "--kv-cache-dtype"), ("add", "--disable-cuda-graph")},
        {("add", "--fp4-gemm-backend")},
    ]
    cudnn = next(c for c in d.candidates if c.change.name == "--fp4-gemm-backend")
    assert cudnn.origin == "evidence" and cudnn.fixed == (CUDNN_CASE,)
    assert "FP4 dense GEMM" in d.plan[1].why
    assert "do not include it" in d.plan[0].why
    db.close()


def test_the_data_file_names_registered_flags_and_known_traits():
    from agent.registry import load_registry
    from kb.dataload import load_json_data as load_data

    reg = load_registry()
    for fw, names in rules().descriptive.items():
        for name in names:
            assert reg.is_registered_spelling(name, fw), (fw, name)
    traits = load_data("arch_traits.json")["traits"]
    for c in rules().couplings:
        assert c.trait in traits
        for name in c.flags:
            assert reg.is_registered_spelling(name, c.framework), name


# --- the CLI: --tried, --json, the rich view, add --from-ask --fixed-by ------------------------


@pytest.fixture
def cli_env(tmp_path, monkeypatch):
    """Only the test findings are indexed (as if they were the shipped ones), hash embedder."""
    shipped = tmp_path / "shipped"
    shutil.copytree(KB, shipped)
    monkeypatch.setattr("kb.paths.shipped_findings_dir", lambda: shipped)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEPLOYKB_DB", str(tmp_path / "state" / "kb.db"))
    monkeypatch.setenv("DEPLOYKB_EMBEDDER", "hash")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("DEPLOYKB_FINDINGS", raising=False)
    monkeypatch.setattr("agent.context.detect_gpu", lambda *a, **k: None)
    (tmp_path / "team").mkdir()  # the folder add writes to
    return tmp_path


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def ask_args(*extra):
    return (
        "ask",
        "--log",
        GLM5_LOG,
        "--arch",
        "glm_moe_dsa",
        "--gpu",
        "sm120",
        "--cmd",
        CMD,
        "--tried",
        "--fp8-gemm-backend cutlass",
        "--tried",
        "--disable-cuda-graph",
        *extra,
    )


def test_json_differential_schema(cli_env):
    result = run(*ask_args("--json"))
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["tried"] == list(TRIED)
    assert out["context"]["command"] == CMD
    d = out["differential"]
    assert d["against"] == WORKING and d["leads"] is True
    assert d["deployment"]["command_provenance"] == "reconstructed"
    assert d["deployment"]["sm"] == "sm120" and d["deployment"]["count"] == 8
    assert [c["name"] for c in d["descriptive"]] == [
        "--model-path",
        "--trust-remote-code",
        "--tool-call-parser",
    ]
    graphs = next(c for c in d["candidates"] if c["name"] == "--disable-cuda-graph")
    assert graphs["tried_by"] == ["you"] and graphs["action"] == "add"
    assert [s["step"] for s in d["plan"]] == [1, 2]
    assert set(d["plan"][0]) == {"step", "changes", "why", "expect", "command"}
    assert [c["text"] for c in d["plan"][1]["changes"]] == ["--fp4-gemm-backend flashinfer_cudnn"]


def test_rich_view_shows_the_leading_differential_first(cli_env):
    result = run(*ask_args())
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert text.index("Differential") < text.index(UNRESOLVED)
    assert "reconstructed, not quoted" in text
    assert "Describes the model or the service" in text


def test_bad_tried_entry_is_one_line(cli_env):
    result = run("ask", "oops", "--cmd", CMD, "--tried", "not a flag")
    assert result.exit_code != 0
    assert "--tried 'not a flag': not a change" in result.stderr
    assert "Traceback" not in result.stderr


def _saved_answer(cli_env) -> Path:
    result = run(*ask_args("--json"))
    path = cli_env / "answer.json"
    path.write_text(result.stdout, encoding="utf-8")
    return path


def _added(cli_env, *extra) -> dict:
    result = run(
        "add",
        "--no-input",
        "--dir",
        cli_env / "team",
        "--json",
        "--from-ask",
        _saved_answer(cli_env),
        "--title",
        "Sparse-MoE NaN",
        *extra,
    )
    assert result.exit_code == 0, result.stderr
    from kb.parse import parse_file

    (finding,) = parse_file(Path(json.loads(result.stdout)["path"])).findings
    return finding


def test_add_from_ask_fixed_by_a_step(cli_env):
    f = _added(cli_env, "--fixed-by", "2")
    assert f.fix.add == ("--fp4-gemm-backend flashinfer_cudnn",)
    # what the user tried, then step 1 (its CUDA-graph change was among them already)
    assert f.tried_without_effect == (*TRIED, "remove --kv-cache-dtype fp8_e4m3")
    # the story says what was tried before the step that fixed it, and what that step changed
    happened = f.body.split("## What happened\n\n", 1)[1].split("\n## ", 1)[0]
    tried = ", ".join(f"`{t}`" for t in f.tried_without_effect)
    assert f"Tried without effect: {tried}." in happened
    assert (
        "The working command is the failing one with `--fp4-gemm-backend flashinfer_cudnn` added."
        in happened
    )
    assert f.working_command.endswith("--disable-cuda-graph --fp4-gemm-backend flashinfer_cudnn")
    assert f.failing_command == CMD
    assert WORKING in f.related and f.status == "works-with-flags"


def test_add_from_ask_fixed_by_the_first_step_keeps_the_coupled_change(cli_env):
    f = _added(cli_env, "--fixed-by", "1")
    assert f.fix.remove == ("--kv-cache-dtype fp8_e4m3",)
    assert f.fix.add == ("--disable-cuda-graph",)
    # CUDA graphs off is in the fix now: it is no dead end as well
    assert f.tried_without_effect == ("--fp8-gemm-backend cutlass",)
    # the GPUs of the asked-about deployment: the command's --tp 8
    assert (f.hardware.count, f.hardware.sm) == (8, "sm120")


def test_add_from_ask_takes_the_gpu_count_the_question_gave(cli_env):
    result = run(*ask_args("--json"), "--gpu", "4x RTX PRO 6000")
    assert json.loads(result.stdout)["context"]["gpu_count"] == 4
    path = cli_env / "answer.json"
    path.write_text(result.stdout, encoding="utf-8")
    result = run(
        "add", "--no-input", "--dir", cli_env / "team", "--json", "--from-ask", path,
        "--title", "Sparse-MoE NaN", "--fixed-by", "2",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    from kb.parse import parse_file

    (f,) = parse_file(Path(json.loads(result.stdout)["path"])).findings
    assert f.hardware.count == 4


def test_add_from_ask_fixed_by_none(cli_env):
    f = _added(cli_env, "--fixed-by", "none")
    assert f.fix.is_empty() and f.status == "broken"
    assert "--fp4-gemm-backend flashinfer_cudnn" in f.tried_without_effect


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ((), "has a plan (steps 1, 2): say which step fixed it with --fixed-by STEP"),
        (("--fixed-by", "9"), "--fixed-by 9: the plan in"),
        (("--fixed-by", "first"), "--fixed-by 'first': a step number, 'match' or 'none'"),
    ],
)
def test_add_from_ask_needs_a_valid_step(cli_env, extra, message):
    result = run(
        "add",
        "--no-input",
        "--dir",
        cli_env / "team",
        "--from-ask",
        _saved_answer(cli_env),
        "--title",
        "x",
        *extra,
    )
    assert result.exit_code != 0
    assert message in result.stderr


def test_fixed_by_needs_a_saved_answer(cli_env):
    result = run("add", "--no-input", "--dir", cli_env / "team", "--fixed-by", "1")
    assert result.exit_code != 0
    assert "--fixed-by names a step of a saved answer's plan: add --from-ask FILE" in result.stderr


def test_add_asks_which_step_fixed_it(cli_env, monkeypatch):
    answers = iter(["2"])
    prompts: list[str] = []

    def prompt(text, default=None, **kw):
        prompts.append(text)
        if text.startswith("Which step fixed it"):
            return next(answers)
        return default if default is not None else ""

    monkeypatch.setattr("typer.prompt", prompt)
    monkeypatch.setattr("typer.confirm", lambda *a, **k: True)
    result = run(
        "add",
        "--dir",
        cli_env / "team",
        "--from-ask",
        _saved_answer(cli_env),
        "--title",
        "t",
        "--status",
        "works-with-flags",
        "--model",
        "example/X",
        "--gpu",
        "sm120",
        "--framework",
        "sglang",
        "--framework-version",
        "main",
        "--root-cause",
        "r",
        "--notes",
        "n",
        "--source",
        "s",
    )
    assert result.exit_code == 0, result.stderr
    assert any(p.startswith("Which step fixed it") for p in prompts)
    from kb.parse import parse_file

    (path,) = (cli_env / "team").glob("*.md")
    (f,) = parse_file(path).findings
    assert f.fix.add == ("--fp4-gemm-backend flashinfer_cudnn",)


def test_an_offline_model_whose_name_gives_the_architecture_is_one_notice(cli_env):
    result = run("ask", ASSERT, "--model", "nvidia/GLM-5-NVFP4", "--gpu", "sm120")
    assert result.exit_code == 0, result.stderr
    said = [ln for ln in result.stderr.splitlines() if ln.startswith(("note:", "warning:"))]
    assert said == [
        "note: architecture glm_moe_dsa read from the model's name (HF_HUB_OFFLINE is set and "
        "config.json for 'nvidia/GLM-5-NVFP4' is not cached)"
    ]
    # a name that gives none is still matched without the architecture, and says so
    result = run("ask", ASSERT, "--model", "acme/Unknown-7B", "--gpu", "sm120")
    assert "matching without the model's architecture" in result.stderr


def _rendered(answer) -> str:
    from rich.console import Console

    from agent.cli.render import render_answer

    console = Console(width=120, record=True, soft_wrap=False)
    render_answer(answer, console)
    return console.export_text()


def test_also_close_shows_what_each_fix_does():
    from kb.records import FlagChange, Match, Proposal, QueryContext, Triage

    best, other = [f for f in _findings() if f.id in (UNRESOLVED, HANG_CASE)]
    removal = FlagChange("flag", "remove", "--enable-torch-compile", text="--enable-torch-compile")
    change = FlagChange("flag", "change", "--mem-fraction-static", "0.8", "0.9", text="x")
    proposals = (Proposal(Match(best, 0.5)), Proposal(Match(other, 0.2), (removal, change)))
    text = _rendered(Answer(False, proposals, Triage(()), QueryContext()))
    assert "fix: remove --enable-torch-compile, --mem-fraction-static 0.9 → 0.8" in text


# --- which working deployment: the review's weak picks, from tests/fixtures/differential_nearest

NEAREST = FIXTURES / "differential_nearest"


def _nearest_findings():
    from kb.parse import parse_file

    return [
        f
        for p in sorted(NEAREST.glob("*.md"))
        if p.name != "README.md"
        for f in parse_file(p).findings
    ]


def _picks(**options) -> list:
    from agent.context import traits_for_model_type

    ctx = build_context(detect=False, warnings=[], **options)
    found = nearest_working(
        ctx, _nearest_findings(), lambda f: traits_for_model_type(f.architecture)
    )
    return list(found)


def test_quantization_and_framework_outweigh_a_shared_mtp_trait():
    """A hybrid-attention NVFP4 model on SGLang: the FP8 vLLM deployment shares MTP with it, the
    NVFP4 SGLang one on the same GPUs shares quantization and framework: the latter is nearer."""
    (first, second, *_) = _picks(
        arch="qwen3_5_moe",
        gpu="sm120",
        cmd="python -m sglang.launch_server --model-path example/Hybrid-MoE-NVFP4 --tp 8 "
        "--quantization modelopt_fp4",
    )
    assert first.finding.id == "mla-moe-nvfp4-sm120-sglang-works"
    assert second.finding.id == "gqa-mtp-moe-fp8-sm120-vllm-works"
    assert "same quantization (nvfp4 (modelopt_fp4))" in first.reasons
    assert "same framework (sglang)" in first.reasons


def test_the_users_model_on_the_users_gpu_with_a_quoted_command_comes_first():
    (first, second, *_) = _picks(
        arch="gpt_oss",
        quant="mxfp4",
        gpu="H100",
        cmd="vllm serve example/Sliding-MoE-120B --tensor-parallel-size 8",
    )
    assert first.finding.id == "recipe-sliding-moe-120b-h100" and first.provenance == "quoted"
    assert second.finding.id == "hopper-sliding-moe-20b-garbage-fixed"
    assert second.provenance == "reconstructed"
    assert "same model (example/Sliding-MoE-120B)" in first.reasons
    assert "same GPU (NVIDIA H100)" in first.reasons


@pytest.mark.parametrize(
    ("field", "better", "worse"),
    [
        ("model", "example/Sliding-MoE-120B", "example/Other-120B"),
        ("gpu", "NVIDIA H100 80GB HBM3", "NVIDIA H200"),
        ("provenance", "quoted", "reconstructed"),
        ("status", "works", "works-with-flags"),
    ],
)
def test_when_otherwise_equal(field, better, worse):
    """Each preference alone decides between two deployments that are otherwise the same, the
    worse one given the id that sorts first."""
    from dataclasses import replace

    from agent.context import traits_for_model_type
    from kb.records import Hardware

    (recipe,) = [f for f in _nearest_findings() if f.id == "recipe-sliding-moe-120b-h100"]

    def variant(fid, value):
        if field == "model":
            return replace(recipe, id=fid, model=value)
        if field == "gpu":
            return replace(recipe, id=fid, hardware=Hardware(gpu=value, count=8, sm="sm90"))
        if field == "provenance":
            return replace(recipe, id=fid, command_provenance=value)
        return replace(recipe, id=fid, status=value)

    ctx = build_context(
        arch="gpt_oss",
        gpu="H100",
        cmd="vllm serve example/Sliding-MoE-120B --tensor-parallel-size 8",
        detect=False,
        warnings=[],
    )
    found = nearest_working(
        ctx,
        [variant("a-worse", worse), variant("b-better", better)],
        lambda f: traits_for_model_type(f.architecture),
    )
    assert [w.finding.id for w in found] == ["b-better", "a-worse"]


def test_a_recipe_that_names_only_its_gpu_counts_as_the_same_generation():
    """No hardware.sm and no architecture: MI300X is gfx942 and the model's name gives the
    architecture, so the MI300X recipe comes before the same architecture on V100."""
    (first, second, *_) = _picks(
        arch="minimax_m2",
        gpu="MI300X",
        cmd="python -m sglang.launch_server --model-path example/MiniMax-M2-Test --tp 8",
    )
    assert first.finding.id == "recipe-minimax-m2-test-mi300x"
    assert first.reasons[0] == "same GPU generation (gfx942, AMD Instinct MI300X / MI325X)"
    assert "same architecture (minimax_m2)" in first.reasons
    assert second.finding.id == "fork-minimax-m2-awq-v100-works"


def test_an_unknown_gpu_is_said_and_no_generation_is_claimed():
    found = _picks(
        arch="glm_moe_dsa",
        cmd="python -m sglang.launch_server --model-path example/DSA-MoE-NVFP4 --tp 8 "
        "--quantization modelopt_fp4",
    )
    assert found[0].finding.id == "dsa-moe-fp8-b300-works"  # nearest by architecture alone
    for w in found:
        assert w.reasons[0] == "your GPU is unknown (pass --gpu): GPU generations not compared"
        assert not any("GPU" in r for r in w.reasons[1:])


@pytest.fixture(scope="module")
def nearest_searcher(tmp_path_factory):
    from kb.embed import HashEmbedder
    from kb.ingest import ingest
    from kb.store import open_db

    db = open_db(tmp_path_factory.mktemp("nearest") / "kb.db")
    assert ingest(db, [NEAREST], lambda: HashEmbedder(dim=64)).errors == ()
    yield Searcher(db, lambda: HashEmbedder(dim=64))
    db.close()


def test_the_gpu_a_command_names_is_the_users(nearest_searcher):
    """No --gpu and none in the log, but the served name says RTX PRO 6000: the deployment on
    those GPUs is compared, and a note says where the GPU was read."""
    base = (
        "python -m sglang.launch_server --model-path example/DSA-MoE-NVFP4 --tp 8 "
        "--quantization modelopt_fp4"
    )
    unknown = ask(nearest_searcher, [ASSERT], arch="glm_moe_dsa", cmd=base).differential
    assert unknown.against.finding.id == "dsa-moe-fp8-b300-works"
    assert unknown.against.reasons[0].startswith("your GPU is unknown")
    named = ask(
        nearest_searcher,
        [ASSERT],
        arch="glm_moe_dsa",
        cmd=base + " --served-model-name dsa-moe-rtx-pro-6000",
    ).differential
    assert named.against.finding.id == "mla-moe-nvfp4-sm120-sglang-works"
    assert named.against.reasons[0] == (
        "same GPU generation (sm120, NVIDIA RTX PRO 6000 Blackwell)"
    )
    assert "GPU read from your command: NVIDIA RTX PRO 6000 Blackwell" in named.notes


# --- settings that describe the service, and the checkpoint's own format -----------------------


def test_device_selection_and_logging_describe_the_service():
    """The working vLLM command names its devices and turns the access log off: shown apart,
    never an experiment (data/differential.json descriptive, descriptive_env)."""
    (working,) = [f for f in _nearest_findings() if f.id == "gqa-mtp-moe-fp8-sm120-vllm-works"]
    user = parse_command("vllm serve example/GQA-MoE-FP8 --tensor-parallel-size 8")
    d = command_diff(user, parse_command(working.working_command))
    assert {(c.kind, c.name) for c in d.descriptive} >= {
        ("env", "CUDA_VISIBLE_DEVICES"),
        ("flag", "--disable-uvicorn-access-log"),
        ("flag", "--enable-expert-parallel"),
    }
    assert [c.name for c in d.behavioural] == ["--max-model-len"]


def test_a_quantization_flag_that_names_the_checkpoints_format_is_kept():
    """An NVFP4 checkpoint against an FP8 deployment whose command has no --quantization: the
    user's --quantization modelopt_fp4 is the checkpoint's, not a difference to try."""
    user = parse_command(
        "python -m sglang.launch_server --model-path example/Hybrid-MoE-NVFP4 --tp 8 "
        "--quantization modelopt_fp4 --attention-backend triton"
    )
    working = parse_command(
        "python -m sglang.launch_server --model-path example/GQA-MoE-FP8 --tp 8"
    )
    d = command_diff(user, working, checkpoint="nvfp4")
    assert [(c.action, c.name) for c in d.behavioural] == [("remove", "--attention-backend")]
    assert d.notes == (
        "kept --quantization modelopt_fp4: it names your checkpoint's format (nvfp4), whatever "
        "the working deployment's command says",
    )
    # another format's method is not proposed either; the same format's is
    fp8 = parse_command(working.raw + " --quantization fp8")
    d = command_diff(user, fp8, checkpoint="nvfp4")
    assert "--quantization" not in {c.name for c in d.behavioural}
    assert d.notes[-1].startswith("not proposed: --quantization fp8: it names the working")
    bare = parse_command("python -m sglang.launch_server --model-path example/Hybrid-MoE-NVFP4")
    d = command_diff(
        bare, parse_command(working.raw + " --quantization modelopt_fp4"), checkpoint="nvfp4"
    )
    assert ("add", "--quantization") in {(c.action, c.name) for c in d.behavioural}


def test_the_data_file_names_known_variables():
    from agent.registry import load_registry

    reg = load_registry()
    for fw, names in rules().descriptive_env.items():
        for name in names:
            assert reg.is_known_env(name, None if fw == "any" else fw), (fw, name)
    for fw, names in rules().checkpoint_format.items():
        for name in names:
            assert reg.is_registered_spelling(name, fw), (fw, name)


# --- the case as a report records it: prose dead ends, an unconfirmed plan and alternative -----

PROSE = FIXTURES / "differential_prose"


@pytest.fixture
def prose_env(cli_env):
    """The test findings with the unresolved case written as a report leaves it."""
    shutil.copy(PROSE / f"{UNRESOLVED}.md", cli_env / "shipped" / f"{UNRESOLVED}.md")
    return cli_env


def _dsv32_json(*extra) -> dict:
    cmd = CMD.replace("example/Sparse-MoE-NVFP4", "example/DeepSeek-V3.2-NVFP4")
    result = run("ask", DSV32_LOG, "--arch", "deepseek_v32", "--gpu", "sm120", "--cmd", cmd, *extra)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_a_dead_end_written_as_prose_is_subtracted_from_the_plan(prose_env):
    """The matched case turned CUDA graphs off ("disabling CUDA graphs"): the plan does not
    offer it as a step of its own and says the case tried it."""
    d = _dsv32_json("--json")["differential"]
    graphs = next(c for c in d["candidates"] if c["name"] == "--disable-cuda-graph")
    assert graphs["tried_by"] == [UNRESOLVED]
    assert [{c["name"] for c in s["changes"]} for s in d["plan"]][0] == {
        "--kv-cache-dtype",
        "--disable-cuda-graph",
    }
    assert f"--disable-cuda-graph: tried without effect ({UNRESOLVED})" in d["plan"][0]["why"]


def test_already_tried_lists_each_change_once(prose_env):
    d = _dsv32_json("--json", "--tried", "--disable-cuda-graph")["differential"]
    assert d["tried"] == [
        "--disable-cuda-graph",
        "--attention-backend flashinfer",
        "--attention-backend triton",
    ]


def test_an_unconfirmed_fix_says_so_in_the_json(prose_env):
    out = _dsv32_json("--json", "--tried", "--disable-cuda-graph")
    best = out["matches"][0]
    assert best["id"] == UNRESOLVED
    assert best["confirmed"] is False
    assert best["fix_note"].startswith("the next plan when the report ends")
    assert best["alternatives_confirmed"] == [False]
    assert best["already_tried"] == ["--disable-cuda-graph"]
    assert all(m["confirmed"] is True for m in out["matches"][1:])  # their fixes are not in doubt


def test_an_unconfirmed_fix_and_a_tried_change_say_so_in_the_rich_view(prose_env):
    cmd = CMD.replace("example/Sparse-MoE-NVFP4", "example/DeepSeek-V3.2-NVFP4")
    result = run(
        "ask", DSV32_LOG, "--arch", "deepseek_v32", "--gpu", "sm120", "--cmd", cmd,
        "--tried", "--disable-cuda-graph",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "What to change (unconfirmed)" in text
    assert "add  --disable-cuda-graph (you tried it without effect: --tried)" in text
    assert "the case's fix: the next plan when the report ends" in text
    assert "alternative 1 (unconfirmed): proposed in the thread; nobody reports it working" in text


def test_a_fix_that_is_only_a_note_shows_the_note():
    from dataclasses import replace

    from kb.records import Fix, Match, Proposal, QueryContext, Triage

    (case,) = [f for f in _findings() if f.id == UNRESOLVED]
    noted = replace(case, fix=Fix(note="upgrade the driver to 580 or later", confirmed=False))
    text = _rendered(Answer(False, (Proposal(Match(noted, 0.4)),), Triage(()), QueryContext()))
    assert "the case's fix: upgrade the driver to 580 or later" in text
    assert "(the case records no fix)" not in text


# --- the user's release ----------------------------------------------------------------------


def test_the_plan_uses_what_the_users_release_accepts(searcher):
    """SGLang 0.5.7 has no --fp4-gemm-backend yet but reads SGLANG_FLASHINFER_FP4_GEMM_BACKEND;
    0.5.4 has neither: the step is left out and a note says why."""
    a = ask(
        searcher, glm_log(), arch="glm_moe_dsa", gpu="sm120", cmd=CMD, tried=TRIED,
        framework="sglang 0.5.7",
    )  # fmt: skip
    d = a.differential
    (second,) = d.plan[1].changes
    assert (second.kind, second.text) == ("env", "SGLANG_FLASHINFER_FP4_GEMM_BACKEND=cudnn")
    assert second.note.endswith("SGLang 0.5.7 reads SGLANG_FLASHINFER_FP4_GEMM_BACKEND instead")
    assert d.plan[1].command.startswith("SGLANG_FLASHINFER_FP4_GEMM_BACKEND=cudnn python -m")
    assert "--fp4-gemm-backend" not in d.plan[1].command
    cudnn = next(c for c in d.candidates if c.change.kind == "env")
    assert cudnn.fixed == (CUDNN_CASE,)  # the evidence is the same setting, in 0.5.7's terms

    older = ask(
        searcher, glm_log(), arch="glm_moe_dsa", gpu="sm120", cmd=CMD, tried=TRIED,
        framework="sglang 0.5.4",
    )  # fmt: skip
    assert plan_of(older) == [{("remove", "--kv-cache-dtype"), ("add", "--disable-cuda-graph")}]
    old = older.differential
    assert (
        "dropped: --fp4-gemm-backend flashinfer_cudnn: --fp4-gemm-backend first appears in "
        "SGLang 0.5.8; SGLang 0.5.4 does not accept --fp4-gemm-backend, and no setting of "
        "SGLang 0.5.4 is known to do the same" in old.notes
    )
