"""Launch-command parsing, fix-item classification, flag diffs and their application."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent.flags import (
    apply_changes,
    diff,
    diff_with_notes,
    docker_image,
    parse_command,
    parse_fix_item,
    render_flag,
)
from agent.registry import load_registry
from kb.errors import CommandParseError
from kb.frameworks import normalise_framework
from kb.records import Fix, Flag, FlagChange, LaunchConfig

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "fixtures" / "case_launch_commands.json"

QWEN_CMD = (
    "python -m sglang.launch_server --model-path /data/models/Qwen3.5-397B-A17B-NVFP4 "
    "--tp 8 --attention-backend triton --quantization modelopt_fp4"
)
QWEN_FIX = Fix(
    add=("--moe-runner-backend flashinfer_cutlass", "--fp4-gemm-runner-backend flashinfer_cudnn")
)


def pairs(cfg: LaunchConfig) -> list[tuple[str, str | None]]:
    return [(f.name, f.value) for f in cfg.flags]


# ---------------------------------------------------------------------------------------------
# parse_command
# ---------------------------------------------------------------------------------------------

PARSE_CASES = [
    pytest.param(
        "python -m sglang.launch_server --model-path m --disable-cuda-graph --tp 8",
        "sglang",
        "python -m sglang.launch_server",
        "m",
        [("--disable-cuda-graph", None), ("--tp-size", "8")],
        [],
        id="switch-then-valued-flag",
    ),
    pytest.param(
        "python3 -m sglang.launch_server --model=m --tp_size=2 --moe_runner_backend=triton",
        "sglang",
        "python3 -m sglang.launch_server",
        "m",
        [("--tp-size", "2"), ("--moe-runner-backend", "triton")],
        [],
        id="equals-and-underscores",
    ),
    pytest.param(
        "sglang serve --model-path m --enable-dp-attention true --disable-radix-cache false",
        "sglang",
        "sglang serve",
        "m",
        [("--enable-dp-attention", None), ("--disable-radix-cache", "false")],
        [],
        id="switch-with-true-false",
    ),
    pytest.param(
        "vllm serve Qwen/Qwen3-32B-FP8 --kv-transfer-config "
        '\'{"kv_connector": "NixlConnector"}\' -tp 4',
        "vllm",
        "vllm serve",
        "Qwen/Qwen3-32B-FP8",
        [
            ("--kv-transfer-config", '{"kv_connector": "NixlConnector"}'),
            ("--tensor-parallel-size", "4"),
        ],
        [],
        id="quoted-json",
    ),
    pytest.param(
        "python3 -m sglang.launch_server \\\n  --model-path m \\\n  --tp 4 \\\n"
        "  # a comment line\n",
        "sglang",
        "python3 -m sglang.launch_server",
        "m",
        [("--tp-size", "4")],
        [],
        id="continuations-and-comment",
    ),
    pytest.param(
        "CUDA_VISIBLE_DEVICES=0,1 SGLANG_ENABLE_JIT_DEEPGEMM=0 python -m sglang.launch_server "
        "--model-path m --tp 2",
        "sglang",
        "python -m sglang.launch_server",
        "m",
        [("--tp-size", "2")],
        [("CUDA_VISIBLE_DEVICES", "0,1"), ("SGLANG_ENABLE_JIT_DEEPGEMM", "0")],
        id="env-prefixes",
    ),
    pytest.param(
        "export SGL_ENABLE_JIT_DEEPGEMM=1 && \\\n    python3 -m sglang.launch_server \\\n"
        "      --model-path=zai-org/GLM-5-FP8 --host=0.0.0.0 --trust-remote-code \\",
        "sglang",
        "python3 -m sglang.launch_server",
        "zai-org/GLM-5-FP8",
        [("--host", "0.0.0.0"), ("--trust-remote-code", None)],
        [("SGL_ENABLE_JIT_DEEPGEMM", "1")],
        id="export-and-trailing-backslash",
    ),
    pytest.param(
        "env NCCL_DEBUG=INFO vllm serve m --enforce-eager",
        "vllm",
        "vllm serve",
        "m",
        [("--enforce-eager", None)],
        [("NCCL_DEBUG", "INFO")],
        id="env-command",
    ),
    pytest.param(
        '[Service]\nEnvironment="SGLANG_ENABLE_JIT_DEEPGEMM=0" "CUDA_VISIBLE_DEVICES=0,1"\n'
        "ExecStart=/opt/venv/bin/python3 -m sglang.launch_server --model-path /m --tp 2\n"
        "Restart=always\n",
        "sglang",
        "/opt/venv/bin/python3 -m sglang.launch_server",
        "/m",
        [("--tp-size", "2")],
        [("SGLANG_ENABLE_JIT_DEEPGEMM", "0"), ("CUDA_VISIBLE_DEVICES", "0,1")],
        id="systemd-unit",
    ),
    pytest.param(
        "docker run --gpus all --shm-size 32g -e NCCL_P2P_DISABLE=1 --env HF_HOME=/hf "
        "-v /data:/data -p 30000:30000 --ipc=host -it --rm lmsysorg/sglang:v0.5.9 "
        "python3 -m sglang.launch_server --model-path /data/m --tp 8",
        "sglang",
        "python3 -m sglang.launch_server",
        "/data/m",
        [("--tp-size", "8")],
        [("NCCL_P2P_DISABLE", "1"), ("HF_HOME", "/hf")],
        id="docker-run",
    ),
    pytest.param(
        "docker run --runtime nvidia --gpus all -e VLLM_USE_FLASHINFER_SAMPLER=0 "
        "vllm/vllm-openai:v0.9.1 --model Qwen/Qwen2.5-7B --enforce-eager",
        "vllm",
        "docker run vllm/vllm-openai:v0.9.1",
        "Qwen/Qwen2.5-7B",
        [("--enforce-eager", None)],
        [("VLLM_USE_FLASHINFER_SAMPLER", "0")],
        id="docker-image-entrypoint",
    ),
    pytest.param(
        "vllm serve m --no-enable-prefix-caching -O.cudagraph_mode=PIECEWISE -O3 "
        "--cudagraph-capture-sizes 1 2 4 8 --enforce-eager",
        "vllm",
        "vllm serve",
        "m",
        [
            ("--enable-prefix-caching", "false"),
            ("--compilation-config.cudagraph_mode", "PIECEWISE"),
            ("--optimization-level", "3"),
            ("--cudagraph-capture-sizes", "1 2 4 8"),
            ("--enforce-eager", None),
        ],
        [],
        id="vllm-negation-dotted-multi-value",
    ),
    pytest.param(
        "python -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 2",
        "vllm",
        "python -m vllm.entrypoints.openai.api_server",
        "m",
        [("--tensor-parallel-size", "2")],
        [],
        id="vllm-api-server-module",
    ),
    pytest.param(
        "trtllm-serve serve nvidia/DeepSeek-R1-FP4 --backend pytorch --tp-size 8 "
        "--extra_llm_api_options extra.yaml",
        "tensorrt-llm",
        "trtllm-serve serve",
        "nvidia/DeepSeek-R1-FP4",
        [("--backend", "pytorch"), ("--tp_size", "8"), ("--extra_llm_api_options", "extra.yaml")],
        [],
        id="trtllm-serve",
    ),
    pytest.param(
        "nohup python3 -m sglang.launch_server --model-path /m --tp 8 > /tmp/log.txt 2>&1 &",
        "sglang",
        "python3 -m sglang.launch_server",
        "/m",
        [("--tp-size", "8")],
        [],
        id="redirections",
    ),
    pytest.param(
        'llm = sgl.Engine(model_path=path, tp_size=4,\n    attention_backend="fa3", '
        "enable_torch_compile=True, disable_radix_cache=False)",
        "sglang",
        "sgl.Engine",
        "path",
        [
            ("--tp-size", "4"),
            ("--attention-backend", "fa3"),
            ("--enable-torch-compile", None),
            ("--disable-radix-cache", "false"),
        ],
        [],
        id="python-engine-kwargs",
    ),
    pytest.param(
        'import os\nos.environ["VLLM_USE_DEEP_GEMM"] = "0"\nllm = LLM(\n'
        '    model="Qwen/Q",\n    enforce_eager=True,  # no graphs\n)',
        "vllm",
        "LLM",
        "Qwen/Q",
        [("--enforce-eager", None)],
        [("VLLM_USE_DEEP_GEMM", "0")],
        id="python-llm-kwargs-and-environ",
    ),
    pytest.param(
        "--tp 8 --quantization fp8",
        "sglang",
        None,
        None,
        [("--tp-size", "8"), ("--quantization", "fp8")],
        [],
        id="bare-flags",
    ),
    pytest.param(
        "--tensor-parallel-size 4\n--enforce-eager\n--gpu-memory-utilization 0.8",
        "vllm",
        None,
        None,
        [
            ("--tensor-parallel-size", "4"),
            ("--enforce-eager", None),
            ("--gpu-memory-utilization", "0.8"),
        ],
        [],
        id="bare-flags-one-per-line",
    ),
]


@pytest.mark.parametrize(("text", "fw", "program", "model", "flags", "env"), PARSE_CASES)
def test_parse_command(text, fw, program, model, flags, env) -> None:
    cfg = parse_command(text)
    assert (cfg.framework, cfg.program, cfg.model) == (fw, program, model)
    assert pairs(cfg) == flags
    assert list(cfg.env) == env
    assert cfg.raw == text


def test_written_keeps_the_users_spelling() -> None:
    cfg = parse_command(
        "python -m sglang.launch_server --model-path m --moe_runner_backend="
        "flashinfer_cutlass --tp 8"
    )
    assert cfg.flags[0] == Flag(
        "--moe-runner-backend", "flashinfer_cutlass", "--moe_runner_backend=flashinfer_cutlass"
    )
    assert cfg.flags[1].written == "--tp 8"


def test_framework_hint_only_for_bare_flags() -> None:
    assert parse_command("--quantization fp8", "vllm").framework == "vllm"
    assert parse_command("--quantization fp8").framework is None  # both frameworks know it
    assert parse_command("vllm serve m --quantization fp8", "sglang").framework == "vllm"


def test_docker_image() -> None:
    cmd = (
        "docker run --gpus all -e X=1 --ipc=host lmsysorg/sglang:v0.5.12-cu130 "
        "python3 -m sglang.launch_server --model-path m"
    )
    assert docker_image(cmd) == "lmsysorg/sglang:v0.5.12-cu130"
    assert docker_image("vllm serve m") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'python -m sglang.launch_server --kv-transfer-config \'{"a": 1}',
            '--cmd: unbalanced quote in "\'{"a": 1}"',
        ),
        ('vllm serve m --chat-template "abc', '--cmd: unbalanced quote in ""abc"'),
        ("", "--cmd: empty launch command"),
        ("   \n", "--cmd: empty launch command"),
        ("echo hello world", '--cmd: no launch command or flags recognised in "echo hello world"'),
        (
            "please make it stop producing NaN on my B200 cluster right now",
            "--cmd: no launch command or flags recognised in "
            '"please make it stop producing NaN on ..."',
        ),
        (
            "llm = LLM(model='m', enforce_eager=True",
            "--cmd: unbalanced parenthesis in \"LLM(model='m', enforce_eager=True\"",
        ),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(CommandParseError) as exc:
        parse_command(text)
    assert str(exc.value) == message


def test_parse_error_names_the_source() -> None:
    with pytest.raises(CommandParseError) as exc:
        parse_command("vllm serve 'm", source="findings/x.md:14")
    assert str(exc.value) == 'findings/x.md:14: unbalanced quote in "\'m"'


def _case_commands() -> list:
    cases = json.loads(CASES.read_text(encoding="utf-8"))["cases"]
    return [pytest.param(case, id=case["id"]) for case in cases]


@pytest.mark.parametrize("case", _case_commands())
def test_real_launch_commands(case: dict) -> None:
    reg = load_registry()
    text = case["launch_command"]
    cfg = parse_command(text)
    assert cfg.framework == normalise_framework(case["framework"])
    assert cfg.flags or cfg.model
    unknown = [f.name for f in cfg.flags if not reg.is_known(f.name, cfg.framework)]
    assert unknown == []
    # no --flag written in a shell command is lost or swallowed as another flag's value
    if cfg.program is None or " " in cfg.program:
        written = " ".join(f.written for f in cfg.flags)
        model_flags = {
            "--model",
            "--model-path",
            "--model_args",
            "--model-args",
            "--tasks",
            "--num_fewshot",
            "--batch_size",
            "--limit",
            "--trust_remote_code",
        }
        for name in re.findall(r"(?<![\w-])(--[A-Za-z][\w-]*)", text):
            if name not in model_flags:
                assert name in written, name


# ---------------------------------------------------------------------------------------------
# parse_fix_item
# ---------------------------------------------------------------------------------------------

FIX_ITEMS = [
    ("--fp8-gemm-backend cutlass", "sglang", [("flag", "--fp8-gemm-backend", "cutlass", None)]),
    (
        "--attention-backend fa3 --speculative-eagle-topk 1",
        "sglang",
        [
            ("flag", "--attention-backend", "fa3", None),
            ("flag", "--speculative-eagle-topk", "1", None),
        ],
    ),
    (
        "--fp4-gemm-runner-backend flashinfer_cudnn",
        "sglang",
        [
            (
                "flag",
                "--fp4-gemm-backend",
                "flashinfer_cudnn",
                "written as --fp4-gemm-runner-backend: sglang registers --fp4-gemm-backend, "
                "not --fp4-gemm-runner-backend",
            )
        ],
    ),
    ("--disable-cuda-graph", "sglang", [("flag", "--disable-cuda-graph", None, None)]),
    (
        "-O.cudagraph_mode=PIECEWISE",
        "vllm",
        [("flag", "--compilation-config.cudagraph_mode", "PIECEWISE", None)],
    ),
    ("VLLM_USE_FLASHINFER_SAMPLER=0", "vllm", [("env", "VLLM_USE_FLASHINFER_SAMPLER", "0", None)]),
    ("SGL_ENABLE_JIT_DEEPGEMM=0", "sglang", [("env", "SGLANG_ENABLE_JIT_DEEPGEMM", "0", None)]),
    (
        "export NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1",
        None,
        [("env", "NCCL_P2P_DISABLE", "1", None), ("env", "NCCL_IB_DISABLE", "1", None)],
    ),
    (
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False",
        "vllm",
        [("env", "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False", None)],
    ),
    ("vllm==0.6.2", "vllm", [("pin", "vllm", "==0.6.2", None)]),
    (
        "flashinfer-python>=0.6.15.post1",
        "vllm",
        [("pin", "flashinfer-python", ">=0.6.15.post1", None)],
    ),
    ("cuDNN>=9.23.1", "vllm", [("pin", "cuDNN", ">=9.23.1", None)]),
    (
        "lmsysorg/sglang:v0.5.11-cu130",
        "sglang",
        [("pin", "lmsysorg/sglang", "v0.5.11-cu130", "image")],
    ),
    (
        "vllm/vllm-openai:nightly-4559c43a9 (0.23.1rc1.dev552+g4559c43a9)",
        "vllm",
        [("pin", "vllm/vllm-openai", "nightly-4559c43a9", "image (0.23.1rc1.dev552+g4559c43a9)")],
    ),
    (
        "uv pip install --force-reinstall --no-deps nvidia-cutlass-dsl-libs-cu13",
        "sglang",
        [("pin", "nvidia-cutlass-dsl-libs-cu13", None, "install command")],
    ),
    (
        "pip install -U 'flashinfer-python==0.6.16rc4' sgl-kernel",
        "sglang",
        [
            ("pin", "flashinfer-python", "==0.6.16rc4", "install command"),
            ("pin", "sgl-kernel", None, "install command"),
        ],
    ),
    ("enforce_eager=True", "vllm", [("flag", "--enforce-eager", None, "python kwarg")]),
    ("enforce_eager=False", "vllm", [("flag", "--enforce-eager", "false", "python kwarg")]),
    (
        'attention_backend="flashinfer"',
        "sglang",
        [("flag", "--attention-backend", "flashinfer", "python kwarg")],
    ),
    (
        "enable_chunked_prefill: false",
        "tensorrt-llm",
        [("flag", "enable_chunked_prefill", "false", "config")],
    ),
    (
        "kv_cache_config.free_gpu_memory_fraction: 0.6",
        "tensorrt-llm",
        [("flag", "kv_cache_config.free_gpu_memory_fraction", "0.6", "config")],
    ),
    (
        "cuda_graph_batch_sizes : [1, 2, 4]",
        "tensorrt-llm",
        [("flag", "cuda_graph_batch_sizes", "[1, 2, 4]", "config")],
    ),
]


@pytest.mark.parametrize(("text", "fw", "expected"), FIX_ITEMS)
def test_parse_fix_item(text: str, fw, expected) -> None:
    got = parse_fix_item(text, fw)
    assert [(c.kind, c.name, c.value, c.note) for c in got] == expected
    assert all(c.action == "add" for c in got)


def test_parse_fix_item_keeps_the_written_text_and_action() -> None:
    (ch,) = parse_fix_item("--moe_runner_backend=flashinfer_trtllm", "sglang", action="remove")
    assert ch == FlagChange(
        kind="flag",
        action="remove",
        name="--moe-runner-backend",
        value="flashinfer_trtllm",
        text="--moe_runner_backend=flashinfer_trtllm",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "fix item is empty: write a flag, NAME=value, a pin or a config line"),
        (
            "Disable cuda graph",
            'fix item "Disable cuda graph": not a flag, NAME=value, package pin, image or config '
            "line",
        ),
        (
            "--pipeline-parallel-size=2 instead of --tensor-parallel-size=2",
            'fix item "--pipeline-parallel-size=2 instead of --tensor-parallel-size=2": "instead" '
            "is neither a flag nor a flag value",
        ),
        (
            "pip install --upgrade",
            'fix item "pip install --upgrade": install command names no package',
        ),
    ],
)
def test_parse_fix_item_errors(text: str, message: str) -> None:
    with pytest.raises(CommandParseError) as exc:
        parse_fix_item(text, "vllm")
    assert str(exc.value) == message


def _shipped_fix_items() -> list:
    out = []
    for path in sorted((ROOT / "findings").glob("*.md")):
        if path.name == "README.md":
            continue
        from kb.parse import parse_file

        for f in parse_file(path).findings:
            fw = normalise_framework(f.framework.name)
            for fix in (f.fix, *f.alternatives):
                for key in ("add", "remove", "env", "pins"):
                    for item in getattr(fix, key):
                        out.append(pytest.param(item, fw, id=f"{path.stem}:{key}:{item}"[:90]))
    return out


@pytest.mark.parametrize(("item", "fw"), _shipped_fix_items())
def test_every_shipped_fix_item_is_classified(item: str, fw) -> None:
    if fw is None:
        pytest.skip("the finding's framework is none the registry covers (a fork of its own)")
    reg = load_registry()
    for ch in parse_fix_item(item, fw):
        if ch.kind == "flag" and ch.name.startswith("-"):
            assert reg.is_known(ch.name, fw), f"{item}: {ch.name} is not a known {fw} flag"


# ---------------------------------------------------------------------------------------------
# diff
# ---------------------------------------------------------------------------------------------


def test_qwen_seed_case_adds_both_flags_in_registered_spelling() -> None:
    current = parse_command(QWEN_CMD)
    changes, notes = diff_with_notes(current, QWEN_FIX, finding_framework="sglang")
    assert changes == (
        FlagChange(
            kind="flag",
            action="add",
            name="--moe-runner-backend",
            value="flashinfer_cutlass",
            text="--moe-runner-backend flashinfer_cutlass",
        ),
        FlagChange(
            kind="flag",
            action="add",
            name="--fp4-gemm-backend",
            value="flashinfer_cudnn",
            text="--fp4-gemm-backend flashinfer_cudnn",
            note="written as --fp4-gemm-runner-backend: sglang registers "
            "--fp4-gemm-backend, not --fp4-gemm-runner-backend",
        ),
    )
    assert notes == ()


def test_qwen_seed_case_corrected_command() -> None:
    current = parse_command(QWEN_CMD)
    fixed = apply_changes(current, diff(current, QWEN_FIX, finding_framework="sglang"))
    assert fixed == (
        QWEN_CMD + " --moe-runner-backend flashinfer_cutlass --fp4-gemm-backend flashinfer_cudnn"
    )
    again = parse_command(fixed)
    assert pairs(again) == [
        ("--tp-size", "8"),
        ("--attention-backend", "triton"),
        ("--quantization", "modelopt_fp4"),
        ("--moe-runner-backend", "flashinfer_cutlass"),
        ("--fp4-gemm-backend", "flashinfer_cudnn"),
    ]
    assert diff(again, QWEN_FIX, finding_framework="sglang") == ()  # nothing left to do


def test_renamed_spelling_matches_the_users_flag() -> None:
    current = parse_command(
        "python -m sglang.launch_server --model-path m "
        "--fp4-gemm-backend=flashinfer_cudnn --moe-runner-backend "
        "flashinfer_trtllm"
    )
    changes, notes = diff_with_notes(current, QWEN_FIX, finding_framework="sglang")
    assert [(c.action, c.name, c.value, c.old) for c in changes] == [
        ("change", "--moe-runner-backend", "flashinfer_cutlass", "flashinfer_trtllm"),
    ]
    assert notes == ("already set: --fp4-gemm-backend=flashinfer_cudnn",)


def test_change_keeps_user_spelling_and_fixes_a_rejected_one() -> None:
    current = parse_command(
        "--tp 8\n--fp8-gemm-runner-backend auto\n--kv-cache-dtype fp8_e4m3", "sglang"
    )
    fix = Fix(add=("--fp8-gemm-backend cutlass", "--tp 4"), remove=("--kv-cache-dtype fp8_e4m3",))
    changes = diff(current, fix, finding_framework="sglang")
    assert [(c.action, c.text, c.old) for c in changes] == [
        ("change", "--fp8-gemm-backend cutlass", "auto"),
        ("change", "--tp-size 4", "8"),
        ("remove", "--kv-cache-dtype fp8_e4m3", None),
    ]
    assert apply_changes(current, changes) == "--tp 4\n--fp8-gemm-backend cutlass"


def test_remove_only_what_is_there() -> None:
    current = parse_command(
        "python -m sglang.launch_server --model-path m --enable-torch-compile "
        "--attention-backend flashinfer"
    )
    fix = Fix(remove=("--enable-torch-compile", "--enable-dp-attention", "--attention-backend fa3"))
    changes, notes = diff_with_notes(current, fix, finding_framework="sglang")
    assert [(c.action, c.name, c.text) for c in changes] == [
        ("remove", "--enable-torch-compile", "--enable-torch-compile"),
    ]
    assert notes == (
        "not in your command: --enable-dp-attention (nothing to remove)",
        "your command has --attention-backend flashinfer, not --attention-backend fa3: left as is",
    )


def test_a_removal_whose_value_the_source_does_not_give_removes_whatever_is_set() -> None:
    # vllm-19613: the reporter set NCCL_BUFFSIZE too large and the default cured it; the thread
    # gives no value, so the finding writes the value as <too-large-value>
    current = parse_command(
        "NCCL_BUFFSIZE=16777216 NCCL_DEBUG=INFO vllm serve m --tensor-parallel-size 2 "
        "--kv-cache-dtype fp8"
    )
    fix = Fix(remove=("NCCL_BUFFSIZE=<too-large-value>", "--kv-cache-dtype <any>"))
    changes, notes = diff_with_notes(current, fix, finding_framework="vllm")
    assert [(c.action, c.name, c.text) for c in changes] == [
        ("remove", "NCCL_BUFFSIZE", "NCCL_BUFFSIZE=16777216"),
        ("remove", "--kv-cache-dtype", "--kv-cache-dtype fp8"),
    ]
    assert notes == ()
    # a real value still has to match
    fix = Fix(remove=("NCCL_BUFFSIZE=4194304",))
    changes, notes = diff_with_notes(current, fix, finding_framework="vllm")
    assert changes == ()
    assert notes == (
        "your command has NCCL_BUFFSIZE=16777216, not NCCL_BUFFSIZE=4194304: left as is",
    )


def test_without_a_command_everything_is_listed_and_replacements_pair_up() -> None:
    fix = Fix(
        add=("--moe-runner-backend flashinfer_cutlass",),
        remove=("--moe-runner-backend flashinfer_trtllm", "--enable-dp-attention"),
        env=("SGLANG_ENABLE_JIT_DEEPGEMM=0",),
        pins=("sgl-deep-gemm==0.1.3",),
    )
    assert diff(None, fix, finding_framework="sglang") == (
        FlagChange(
            kind="flag",
            action="change",
            name="--moe-runner-backend",
            value="flashinfer_cutlass",
            old="flashinfer_trtllm",
            text="--moe-runner-backend flashinfer_cutlass",
        ),
        FlagChange(
            kind="env",
            action="add",
            name="SGLANG_ENABLE_JIT_DEEPGEMM",
            value="0",
            text="SGLANG_ENABLE_JIT_DEEPGEMM=0",
        ),
        FlagChange(
            kind="pin",
            action="add",
            name="sgl-deep-gemm",
            value="==0.1.3",
            text="sgl-deep-gemm==0.1.3",
        ),
        FlagChange(
            kind="flag",
            action="remove",
            name="--enable-dp-attention",
            value=None,
            text="--enable-dp-attention",
        ),
    )


def test_environment_changes() -> None:
    current = parse_command(
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True NCCL_DEBUG=INFO "
        "vllm serve m --tensor-parallel-size 2"
    )
    fix = Fix(
        env=(
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False",
            "NCCL_DEBUG=INFO",
            "NCCL_P2P_DISABLE=1",
        ),
        remove=("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",),
    )
    changes, notes = diff_with_notes(current, fix, finding_framework="vllm")
    assert [(c.kind, c.action, c.name, c.value, c.old) for c in changes] == [
        (
            "env",
            "change",
            "PYTORCH_CUDA_ALLOC_CONF",
            "expandable_segments:False",
            "expandable_segments:True",
        ),
        ("env", "add", "NCCL_P2P_DISABLE", "1", None),
    ]
    assert notes == ("already set: NCCL_DEBUG=INFO",)
    assert apply_changes(current, changes) == (
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False NCCL_DEBUG=INFO NCCL_P2P_DISABLE=1 "
        "vllm serve m --tensor-parallel-size 2"
    )


def test_switches_on_and_off() -> None:
    current = parse_command("vllm serve m --enforce-eager --no-enable-prefix-caching")
    changes = diff(
        current,
        Fix(add=("enforce_eager=False", "--enable-prefix-caching")),
        finding_framework="vllm",
    )
    assert [(c.action, c.text, c.old) for c in changes] == [
        ("change", "--no-enforce-eager", "true"),
        ("change", "--enable-prefix-caching", "false"),
    ]
    assert apply_changes(current, changes) == (
        "vllm serve m --no-enforce-eager --enable-prefix-caching"
    )
    # a store_true switch cannot be negated: turning it off removes it
    sg = parse_command("python -m sglang.launch_server --model-path m --enable-torch-compile")
    (ch,) = diff(sg, Fix(add=("--enable-torch-compile false",)), finding_framework="sglang")
    assert (ch.action, ch.text) == ("remove", "--enable-torch-compile")
    assert apply_changes(sg, (ch,)) == "python -m sglang.launch_server --model-path m"


def test_pins_and_images() -> None:
    current = parse_command(
        "docker run --gpus all lmsysorg/sglang:v0.5.12-cu130 "
        "python3 -m sglang.launch_server --model-path m"
    )
    changes, notes = diff_with_notes(
        current,
        Fix(pins=("lmsysorg/sglang:v0.5.11-cu130", "flashinfer-python==0.6.16rc4")),
        finding_framework="sglang",
    )
    assert [(c.kind, c.name, c.value) for c in changes] == [
        ("pin", "lmsysorg/sglang", "v0.5.11-cu130"),
        ("pin", "flashinfer-python", "==0.6.16rc4"),
    ]
    assert apply_changes(current, changes) == (
        "docker run --gpus all lmsysorg/sglang:v0.5.11-cu130 "
        "python3 -m sglang.launch_server --model-path m"
    )
    fixed = parse_command(apply_changes(current, changes))
    _, notes = diff_with_notes(
        fixed, Fix(pins=("lmsysorg/sglang:v0.5.11-cu130",)), finding_framework="sglang"
    )
    assert notes == ("already set: image lmsysorg/sglang:v0.5.11-cu130",)


EAGER_CAVEAT = (
    " (approximate: vLLM --enforce-eager also turns off torch.compile; "
    "-cc.cudagraph_mode=NONE turns off only CUDA graphs)"
)


def test_sglang_finding_translated_for_a_vllm_command() -> None:
    current = parse_command("vllm serve Qwen/Q --tensor-parallel-size 4")
    fix = Fix(
        add=(
            "--disable-cuda-graph",
            "--attention-backend triton",
            "--moe-runner-backend flashinfer_mxfp4",
            "--tp 4",
        ),
        env=("SGLANG_ENABLE_JIT_DEEPGEMM=0", "NCCL_P2P_DISABLE=1"),
        pins=("sglang==0.5.9",),
    )
    changes, notes = diff_with_notes(current, fix, finding_framework="sglang")
    assert changes == (
        FlagChange(
            kind="flag",
            action="add",
            name="--enforce-eager",
            value=None,
            text="--enforce-eager",
            note="translated from sglang --disable-cuda-graph" + EAGER_CAVEAT,
        ),
        FlagChange(
            kind="flag",
            action="add",
            name="--attention-backend",
            value="TRITON_ATTN",
            text="--attention-backend TRITON_ATTN",
            note="translated from sglang --attention-backend triton",
        ),
        FlagChange(
            kind="env", action="add", name="NCCL_P2P_DISABLE", value="1", text="NCCL_P2P_DISABLE=1"
        ),
    )
    assert notes == (
        "no vllm equivalent known for sglang --moe-runner-backend flashinfer_mxfp4",
        "no vllm equivalent known for sglang SGLANG_ENABLE_JIT_DEEPGEMM=0",
        "dropped: sglang==0.5.9 is a sglang pin, not for vllm",
        "already set: --tensor-parallel-size 4",
    )
    assert apply_changes(current, changes) == (
        "NCCL_P2P_DISABLE=1 vllm serve Qwen/Q --tensor-parallel-size 4 --enforce-eager "
        "--attention-backend TRITON_ATTN"
    )


def test_vllm_finding_translated_for_sglang() -> None:
    fix = Fix(
        add=("--enforce-eager",),
        env=("VLLM_USE_FLASHINFER_SAMPLER=0", "VLLM_ATTENTION_BACKEND=FLASHINFER"),
    )
    changes = diff(None, fix, finding_framework="vllm", target_framework="sglang")
    assert [(c.kind, c.text, c.note) for c in changes] == [
        ("flag", "--disable-cuda-graph", "translated from vllm --enforce-eager" + EAGER_CAVEAT),
        (
            "flag",
            "--sampling-backend pytorch",
            "translated from vllm VLLM_USE_FLASHINFER_SAMPLER=0",
        ),
        (
            "flag",
            "--attention-backend flashinfer",
            "translated from vllm VLLM_ATTENTION_BACKEND=FLASHINFER",
        ),
    ]


def test_target_framework_defaults_to_the_command() -> None:
    current = parse_command("python -m sglang.launch_server --model-path m")
    (ch,) = diff(current, Fix(add=("--enforce-eager",)), finding_framework="vllm")
    assert (ch.name, ch.note) == (
        "--disable-cuda-graph",
        "translated from vllm --enforce-eager" + EAGER_CAVEAT,
    )


# ---------------------------------------------------------------------------------------------
# apply_changes: layouts
# ---------------------------------------------------------------------------------------------


def test_apply_keeps_continuation_layout() -> None:
    current = parse_command(
        "export SGL_ENABLE_JIT_DEEPGEMM=1 && \\\n"
        "    python3 -m sglang.launch_server \\\n"
        "      --model-path=zai-org/GLM-5-FP8 \\\n"
        "      --tp 8 \\\n"
        "      --enable-torch-compile \\\n"
        "      --host=0.0.0.0 --port=8888"
    )
    fix = Fix(
        add=("--fp8-gemm-backend cutlass", "--tp 4"),
        remove=("--enable-torch-compile",),
        env=("SGL_ENABLE_JIT_DEEPGEMM=0",),
    )
    fixed = apply_changes(current, diff(current, fix, finding_framework="sglang"))
    assert fixed == (
        "export SGL_ENABLE_JIT_DEEPGEMM=0 && \\\n"
        "    python3 -m sglang.launch_server \\\n"
        "      --model-path=zai-org/GLM-5-FP8 \\\n"
        "      --tp 4 \\\n"
        "      --host=0.0.0.0 --port=8888 \\\n"
        "      --fp8-gemm-backend cutlass"
    )
    again = parse_command(fixed)
    assert pairs(again) == [
        ("--tp-size", "4"),
        ("--host", "0.0.0.0"),
        ("--port", "8888"),
        ("--fp8-gemm-backend", "cutlass"),
    ]
    assert again.env == (("SGL_ENABLE_JIT_DEEPGEMM", "0"),)


def test_apply_to_python_keyword_arguments() -> None:
    current = parse_command(
        "llm = LLM(\n"
        '    model="nm-testing/x",\n'
        "    max_model_len=1024,\n"
        "    enforce_eager=False,  # enable CUDA graphs\n"
        ")"
    )
    fix = Fix(add=("enforce_eager=True", "--max-num-seqs 2"), remove=("enforce_eager=False",))
    fixed = apply_changes(current, diff(current, fix, finding_framework="vllm"))
    assert fixed == (
        "llm = LLM(\n"
        '    model="nm-testing/x",\n'
        "    max_model_len=1024,\n"
        "    enforce_eager=True,  # enable CUDA graphs\n"
        "    max_num_seqs=2,\n"
        ")"
    )
    assert pairs(parse_command(fixed)) == [
        ("--max-model-len", "1024"),
        ("--enforce-eager", None),
        ("--max-num-seqs", "2"),
    ]


def test_apply_removes_a_keyword_argument() -> None:
    current = parse_command('llm = sgl.Engine(model_path=p, tp_size=4, attention_backend="fa3")')
    changes = diff(
        current,
        Fix(add=('attention_backend="flashinfer"',), remove=("tp_size=4",)),
        finding_framework="sglang",
    )
    assert apply_changes(current, changes) == (
        'llm = sgl.Engine(model_path=p, attention_backend="flashinfer")'
    )


def test_apply_to_docker_and_systemd() -> None:
    docker = parse_command(
        "docker run --gpus all -e NCCL_P2P_DISABLE=1 --ipc=host "
        "lmsysorg/sglang:v0.5.12-cu130 python3 -m sglang.launch_server "
        "--model-path /m --tp 8"
    )
    changes = diff(
        docker,
        Fix(env=("NCCL_P2P_DISABLE=0", "SGLANG_DEEPGEMM_SANITY_CHECK=1")),
        finding_framework="sglang",
    )
    assert apply_changes(docker, changes) == (
        "docker run -e SGLANG_DEEPGEMM_SANITY_CHECK=1 --gpus all -e NCCL_P2P_DISABLE=0 "
        "--ipc=host lmsysorg/sglang:v0.5.12-cu130 python3 -m sglang.launch_server "
        "--model-path /m --tp 8"
    )
    removed = diff(docker, Fix(remove=("NCCL_P2P_DISABLE=1",)), finding_framework="sglang")
    assert apply_changes(docker, removed) == (
        "docker run --gpus all --ipc=host lmsysorg/sglang:v0.5.12-cu130 "
        "python3 -m sglang.launch_server --model-path /m --tp 8"
    )
    unit = parse_command(
        '[Service]\nEnvironment="SGLANG_ENABLE_JIT_DEEPGEMM=1"\n'
        "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m\n"
    )
    changes = diff(
        unit,
        Fix(env=("SGL_ENABLE_JIT_DEEPGEMM=0",), add=("--disable-cuda-graph",)),
        finding_framework="sglang",
    )
    assert apply_changes(unit, changes) == (
        '[Service]\nEnvironment="SGLANG_ENABLE_JIT_DEEPGEMM=0"\n'
        "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m --disable-cuda-graph\n"
    )


def test_apply_to_lm_eval_model_args() -> None:
    current = parse_command(
        "MODEL=google/gemma-2-27b-it\nlm_eval --model vllm --model_args "
        "pretrained=$MODEL,enforce_eager=False --tasks gsm8k"
    )
    assert current.model == "google/gemma-2-27b-it"
    changes = diff(
        current, Fix(add=("--enforce-eager", "--max-model-len 4096")), finding_framework="vllm"
    )
    assert apply_changes(current, changes) == (
        "MODEL=google/gemma-2-27b-it\nlm_eval --model vllm --model_args "
        "pretrained=$MODEL,enforce_eager=True,max_model_len=4096 --tasks gsm8k"
    )


def test_apply_skips_what_a_command_cannot_hold() -> None:
    current = parse_command("trtllm-serve m --tp_size 8")
    changes = diff(
        current,
        Fix(add=("enable_chunked_prefill: false",), pins=("vllm==0.6.2",)),
        finding_framework="tensorrt-llm",
    )
    assert [c.kind for c in changes] == ["flag", "pin"]
    assert apply_changes(current, changes) == "trtllm-serve m --tp_size 8"


def test_apply_without_raw_text_renders_the_record() -> None:
    current = LaunchConfig(
        framework="vllm",
        program="vllm serve",
        model="m",
        flags=(Flag("--tensor-parallel-size", "2", "-tp 2"),),
        env=(("NCCL_DEBUG", "INFO"),),
    )
    changes = diff(current, Fix(add=("--enforce-eager",)), finding_framework="vllm")
    assert apply_changes(current, changes) == (
        "NCCL_DEBUG=INFO vllm serve m --tensor-parallel-size 2 --enforce-eager"
    )


@pytest.mark.parametrize(
    ("flag", "fw", "text"),
    [
        (Flag("--tp-size", "8", ""), "sglang", "--tp-size 8"),
        (Flag("--enforce-eager", None, ""), "vllm", "--enforce-eager"),
        (Flag("--enforce-eager", "false", ""), "vllm", "--no-enforce-eager"),
        (Flag("--kv-transfer-config", '{"a": 1}', ""), "vllm", "--kv-transfer-config '{\"a\": 1}'"),
        (Flag("--cudagraph-capture-sizes", "1 2 4", ""), "vllm", "--cudagraph-capture-sizes 1 2 4"),
        (
            Flag("--chat-template", "my template.jinja", ""),
            "vllm",
            "--chat-template 'my template.jinja'",
        ),
        (
            Flag("enable_chunked_prefill", "false", ""),
            "tensorrt-llm",
            "enable_chunked_prefill: false",
        ),
    ],
)
def test_render_flag(flag: Flag, fw: str, text: str) -> None:
    assert render_flag(flag, fw) == text


def test_value_already_set_under_a_rejected_spelling_is_respelled() -> None:
    current = parse_command(
        "python -m sglang.launch_server --model-path m --fp8-gemm-runner-backend cutlass"
    )
    (ch,) = diff(current, Fix(add=("--fp8-gemm-backend cutlass",)), finding_framework="sglang")
    assert (ch.action, ch.text, ch.old) == ("change", "--fp8-gemm-backend cutlass", "cutlass")
    assert ch.note == (
        "your command spells it --fp8-gemm-runner-backend: sglang registers "
        "--fp8-gemm-backend, not --fp8-gemm-runner-backend"
    )
    assert apply_changes(current, (ch,)) == (
        "python -m sglang.launch_server --model-path m --fp8-gemm-backend cutlass"
    )


def test_systemd_environment_after_execstart() -> None:
    unit = (
        "[Service]\nExecStart=/usr/bin/vllm serve m --enforce-eager\n"
        "Environment=VLLM_USE_DEEP_GEMM=0\n"
    )
    cfg = parse_command(unit)
    assert (cfg.program, cfg.env) == ("/usr/bin/vllm serve", (("VLLM_USE_DEEP_GEMM", "0"),))
