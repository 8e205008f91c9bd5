"""``deploykb add``: from a failing log and two commands to a safe, indexed, shareable finding."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agent.cli  # noqa: F401  (registers every command)
from agent import draft as A
from agent import fixes as F
from agent.checks import lint_paths
from agent.cli.app import app
from agent.flags import parse_command
from agent.hub import load_model_config as REAL_LOAD
from kb.errors import InputError
from kb.parse import parse_file, parse_text
from kb.records import Fix, SalientLine, Symptom, Triage
from kb.write import render_finding

FIXTURES = Path(__file__).parent / "fixtures"
ADD = FIXTURES / "add"
LOG = ADD / "glm5-server.log"
FAILING = (ADD / "glm5-failing.sh").read_text().strip()
WORKING = (ADD / "glm5-working.sh").read_text().strip()
GLM5_CONFIG = json.loads((FIXTURES / "configs" / "glm-5.json").read_text())
SEED_SSH = (
    "ssh root@10.1.230.174 'journalctl -u sglang-qwen -o cat --no-pager | "
    'grep -i "fp4\\|nvfp4\\|gemm.*runner\\|cutlass\\|cudnn\\|NaN" | head -15\''
)
NEW_ID = "glm-5-nvfp4-sm120-device-assert"


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A clean working directory with findings/, a temporary index, the hash embedder, no GPU,
    no network (config.json of nvidia/GLM-5-NVFP4 comes from the test fixture)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "findings").mkdir()
    monkeypatch.setenv("DEPLOYKB_DB", str(tmp_path / "state" / "kb.db"))
    monkeypatch.setenv("DEPLOYKB_EMBEDDER", "hash")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("DEPLOYKB_FINDINGS", raising=False)
    monkeypatch.setattr("agent.context.detect_gpu", lambda *a, **k: None)

    def config(model, **kw):
        if model == "nvidia/GLM-5-NVFP4":
            return GLM5_CONFIG
        from kb.errors import ConfigFetchError

        raise ConfigFetchError(
            f"cannot reach https://huggingface.co to fetch config.json for '{model}'"
        )

    monkeypatch.setattr("agent.hub.load_model_config", config)
    return tmp_path


def run(*args: str, input: str | None = None):  # noqa: A002
    return CliRunner().invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)


def seed_add(*extra: str, input: str | None = None):
    return run(
        "add",
        "--no-input",
        "--log",
        LOG,
        "--failing-cmd",
        FAILING,
        "--working-cmd",
        WORKING,
        "--gpu",
        "RTX PRO 6000",
        *extra,
        input=input,
    )


# --- the done-when scenario ----------------------------------------------------------------


def test_glm5_seed_becomes_a_clean_finding(env):
    result = seed_add()
    assert result.exit_code == 0, result.stderr
    path = env / "findings" / f"{NEW_ID}.md"
    assert result.stdout.splitlines()[0] == f"wrote findings/{NEW_ID}.md"
    assert result.stdout.splitlines()[-1] == f"share it: git add findings/{NEW_ID}.md"

    report = lint_paths([env / "findings"])
    assert report.errors == () and report.warnings == ()

    text = path.read_text()
    log = LOG.read_text()
    for address in re.findall(r"\d{1,3}(?:\.\d{1,3}){3}", log):
        assert address not in text
    assert "ssh" not in text

    f = parse_file(path).findings[0]
    assert render_finding(f) == text  # parses back to the record it was written from
    assert f.id == NEW_ID and f.status == "works-with-flags"
    assert f.model == "nvidia/GLM-5-NVFP4" and f.architecture == "glm_moe_dsa"
    assert (f.hardware.gpu, f.hardware.count, f.hardware.sm) == (
        "NVIDIA RTX PRO 6000 Blackwell",
        8,
        "sm120",
    )
    assert f.framework.name == "sglang"
    assert f.fix == Fix(add=("--fp8-gemm-backend cutlass",))
    assert (f.failing_command, f.working_command) == (FAILING, WORKING)
    # the scheduler's catch-all banner is framework boilerplate: recorded, it would make every
    # later crash of any kind look like this case
    assert [s.cls for s in f.symptoms][:2] == ["device-assert", "warning"]
    assert not any("hit an exception" in s.text for s in f.symptoms)
    assert f.symptoms[0].text == (
        "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed."
    )

    from kb.store import get_finding, load_findings, open_db

    db = open_db(env / "state" / "kb.db")  # indexed at once, beside the shipped findings
    assert get_finding(db, NEW_ID).fix == f.fix
    assert "glm5-nvfp4-sm120-deepgemm-ue8m0-nan" in {x.id for x in load_findings(db)}
    db.close()


@pytest.mark.model
def test_new_finding_is_the_top_answer_of_ask_for_the_same_log(
    env, monkeypatch, shipped_index_path
):
    # `ask` embeds with the bundled model, so the index is built with it (the shipped findings,
    # from the session's real-model index, plus the new one) and `ask` finds it current.
    monkeypatch.setenv("DEPLOYKB_EMBEDDER", "auto")
    (env / "state").mkdir()
    shutil.copy(shipped_index_path, env / "state" / "kb.db")
    added = seed_add()
    assert added.exit_code == 0, added.stderr
    asked = run("ask", "--log", LOG, "--json")
    assert asked.exit_code == 0, asked.stderr
    assert json.loads(asked.stdout)["matches"][0]["id"] == NEW_ID


def test_finding_parses_back_to_the_same_record():
    draft = A.Draft(
        id="x-sm120-nan",
        title="X on B200: NaN, fixed by --a 1",
        status="works-with-flags",
        date="2026-02-19",
        model="org/X",
        gpu="NVIDIA B200",
        gpu_count=8,
        sm="sm100",
        framework="sglang",
        framework_version="0.5.9",
        symptoms=(Symptom("nan", 'a "quoted" `line` with: colons'),),
        root_cause="Two lines\nof cause.",
        fix=Fix(add=("--a 1",), remove=("--b",), env=("X=1",), pins=("pkg==1.2",)),
        tried=("--c 2",),
        failing_command="python -m sglang.launch_server --b",
        working_command="X=1 python -m sglang.launch_server --a 1",
        sources=("org/repo#1",),
        related=("other",),
        tags=("moe",),
        notes="Checked twice.",
    )
    f = A.build_finding(draft)
    back = parse_text(render_finding(f), "x-sm120-nan.md").findings[0]
    assert replace(back, path=None, line=None) == f


# --- redaction -----------------------------------------------------------------------------


def test_seed_ssh_command_in_notes_is_redacted_and_reported(env):
    result = seed_add("--notes", f"found with {SEED_SSH}")
    assert result.exit_code == 0, result.stderr
    text = (env / "findings" / f"{NEW_ID}.md").read_text()
    assert "10.1.230.174" not in text and "root@" not in text
    assert "found with ssh <user>@<host> 'journalctl -u sglang-qwen" in text
    # the report says what was replaced and by what, never the value itself
    assert "  notes: ssh-user-host …(17 chars) -> <user>@<host>" in result.stderr.splitlines()
    assert "10.1.230.174" not in result.stderr and "root@" not in result.stderr


def test_addresses_in_log_lines_and_commands_are_redacted(env, tmp_path):
    log = tmp_path / "nccl.log"
    log.write_text(
        "[2026-03-01 10:00:00 TP1] RuntimeError: NCCL error: remote process exited, "
        "peer gpu-node-07.cluster.internal 192.168.7.21:29500\n"
    )
    result = run(
        "add",
        "--no-input",
        "--log",
        log,
        "--title",
        "NCCL peer exit",
        "--status",
        "broken",
        "--failing-cmd",
        "python -m sglang.launch_server --model-path /home/alice/glm5 --tp 2 "
        "--dist-init-addr 192.168.7.21:5000",
        "--working-cmd",
        "python -m sglang.launch_server --model-path /home/alice/glm5 --tp 2 "
        "--dist-init-addr 192.168.7.21:5000 --disable-custom-all-reduce",
    )
    assert result.exit_code == 0, result.stderr
    text = next((tmp_path / "findings").glob("*.md")).read_text()
    for secret in ("192.168.7.21", "gpu-node-07", "alice"):
        assert secret not in text
    assert "--dist-init-addr <ip>:5000" in text
    assert "symptoms[1]: hostname …(28 chars) -> <host>" in result.stderr
    assert "  working_command: home-path …(11 chars) -> /home/<user>" in result.stderr.splitlines()
    for secret in ("192.168.7.21", "gpu-node-07", "alice"):
        assert secret not in result.stderr


def test_no_redact_keeps_the_text_as_written(env):
    result = seed_add("--notes", SEED_SSH, "--no-redact")
    assert result.exit_code == 0, result.stderr
    assert "root@10.1.230.174" in (env / "findings" / f"{NEW_ID}.md").read_text()
    assert "before writing" not in result.stderr
    assert "unredacted ssh-user-host '…(17 chars)'" in result.stderr  # lint will say so


# --- prompts -------------------------------------------------------------------------------


def test_prompts_fill_in_what_options_and_derivation_left(env, monkeypatch):
    monkeypatch.setattr(
        "agent.context.detect_gpu", lambda *a, **k: ("NVIDIA RTX PRO 6000 Blackwell", "sm120")
    )
    answers = [
        "",  # model: keep nvidia/GLM-5-NVFP4 (from the working command)
        "",  # GPU: keep 8x NVIDIA RTX PRO 6000 Blackwell (nvidia-smi + --tp 8)
        "",  # framework: keep sglang
        "main",  # framework version
        "",  # drop none of the symptoms found in the log
        "nan: logits became NaN at the first decode step",
        "",  # no more symptoms
        "",  # the step that failed: the log does not show it, none given
        "DeepGEMM with a checkpoint whose scale format is not ue8m0.",  # root cause
        "y",  # keep the fix found from the two commands
        "remove --kv-cache-dtype",
        "",  # no more changes
        "--attention-backend triton",  # tried without effect
        "--attention-backend flashmla_sparse",
        "",
        "fixed",  # status: not valid, asked again
        "",  # status: accept the default (works-with-flags)
        "sgl-project/sglang#14311",  # sources
        "",
        "",  # notes: none
        "",  # title: accept the default
    ]
    result = run(
        "add",
        "--log",
        LOG,
        "--failing-cmd",
        FAILING,
        "--working-cmd",
        WORKING,
        input="\n".join(answers) + "\n",
    )
    assert result.exit_code == 0, result.stderr
    assert "'fixed' is not one of: works, works-with-flags, broken, partial" in result.stdout
    f = parse_file(env / "findings" / f"{NEW_ID}.md").findings[0]
    assert f.framework.version == "main"
    assert (f.hardware.count, f.hardware.sm) == (8, "sm120")
    assert f.symptoms[-1] == Symptom("nan", "logits became NaN at the first decode step")
    assert f.root_cause == "DeepGEMM with a checkpoint whose scale format is not ue8m0."
    assert f.fix == Fix(add=("--fp8-gemm-backend cutlass",), remove=("--kv-cache-dtype",))
    assert f.tried_without_effect == (
        "--attention-backend triton",
        "--attention-backend flashmla_sparse",
    )
    assert f.status == "works-with-flags"
    assert f.sources == ("sgl-project/sglang#14311",)
    assert f.title == (
        "GLM-5-NVFP4 on 8x RTX PRO 6000 Blackwell: device-assert, "
        "fixed by --fp8-gemm-backend cutlass"
    )


def test_prompts_never_put_a_secret_from_the_log_or_the_commands_back_on_screen(env, tmp_path):
    token = "hf_" + "Zq7" * 12
    key = "sk-" + "live9" * 8
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-02-19 00:05:09] Scheduler hit an exception: Traceback (most recent call last):\n"
        f"huggingface_hub.errors.HfHubHTTPError: 401 Client Error: bad token {token} for url\n"
        "RuntimeError: CUDA error: device-side assert triggered\n"
    )
    cmd = f"python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8 --api-key {key}"
    result = run(
        "add", "--log", str(log), "--gpu", "RTX PRO 6000", "--failing-cmd", cmd,
        "--working-cmd", cmd + " --disable-cuda-graph", input="\n" * 40,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    shown = result.stdout + result.stderr
    assert "Symptoms found:" in shown and "Fix found:" in shown  # the prompts did show them
    assert token not in shown and key not in shown
    written = next((env / "findings").glob("*.md")).read_text()
    assert token not in written and key not in written


def test_what_happened_says_the_step_that_failed_what_was_tried_and_what_changed(env):
    failing = "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8"
    result = run("add", "--no-input", "--log", ADD / "ima-capture.log", "--gpu", "RTX PRO 6000",
                 "--failing-cmd", failing, "--working-cmd", failing + " --disable-cuda-graph",
                 "--tried", "--cuda-graph-max-bs 16", "--tried", "a newer driver")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    path = env / "findings" / "glm-5-nvfp4-sm120-illegal-memory-access.md"
    f = parse_file(path).findings[0]
    # the default title: the model's id, the GPU, the symptom and the step, the fix
    assert f.title == (
        "GLM-5-NVFP4 on 8x RTX PRO 6000 Blackwell: illegal-memory-access at CUDA-graph capture, "
        "fixed by --disable-cuda-graph"
    )
    happened = path.read_text().split("## What happened\n\n", 1)[1].split("\n## ", 1)[0]
    assert happened == (
        "It failed at CUDA-graph capture:\n\n"  # the log was capturing when it failed
        "```text\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "[2026-03-01 10:00:05] Received sigquit from a child process. It usually means the child "
        "failed.\n"
        "```\n\n"
        "Tried without effect: `--cuda-graph-max-bs 16`, `a newer driver`.\n\n"
        "The working command is the failing one with `--disable-cuda-graph` added.\n"
    )
    # a log that does not show the step: --failed-at says it
    given = run("add", "--no-input", "--log", LOG, "--failed-at", "under load", "--id", "given",
                "--title", "t")  # fmt: skip
    assert given.exit_code == 0, given.stderr
    assert "It failed under load:\n" in (env / "findings" / "given.md").read_text()


@pytest.mark.parametrize(
    ("log", "stage"),
    [
        ("logs/glm5_nvfp4_sglang_tp8.log", "the first request"),  # ready, one real request
        ("logs/vllm_091_worker_illegal_memory_access.log", "under load"),  # 6 running
        ("add/ima-capture.log", "CUDA-graph capture"),
        ("add/glm5-server.log", None),  # a grep of the log: no step shows
    ],
)
def test_the_step_that_failed_is_read_from_the_log(log, stage):
    from agent.logs import triage
    from agent.stages import failed_stage, first_error_line

    lines = (FIXTURES / log).read_text().splitlines()
    assert failed_stage(lines, first_error_line(triage(lines))) == stage


def test_single_symptom_lines_can_be_dropped_at_the_prompt(env):
    log = ADD / "ima-capture.log"  # two symptoms: the IMA line and the sigquit line
    answers = [
        "nvidia/GLM-5-NVFP4",  # model
        "sm120",  # GPU
        "sglang",
        "",  # version
        "3",  # not one of them: asked again
        "2",  # drop the sigquit line
        "",  # no more symptoms
        "",  # the step that failed
        "",  # root cause
        "",  # no change
        "",  # tried
        "broken",
        "",  # sources
        "",  # notes
        "",  # title
    ]
    result = run("add", "--log", log, "--id", "dropped", input="\n".join(answers) + "\n")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert (
        "Symptoms found:\n"
        "  1. illegal-memory-access: RuntimeError: CUDA error: an illegal memory access was "
        "encountered\n"
        "  2. crash: [2026-03-01 10:00:05] Received sigquit from a child process. It usually means "
        "the child failed.\n"
        "Drop which (e.g. 2,4; 'all'; empty keeps them all): 3\n"
        "  numbers from 1 to 2, e.g. 2,4, or 'all'\n"
        "Drop which (e.g. 2,4; 'all'; empty keeps them all): 2\n"
    ) in out
    f = parse_file(env / "findings" / "dropped.md").findings[0]
    assert [s.cls for s in f.symptoms] == ["illegal-memory-access"]


def test_typed_model_and_gpu_are_looked_up(env):
    answers = [
        "nvidia/GLM-5-NVFP4",  # model: config.json gives the architecture
        "sm120",  # GPU: a bare SM names no GPU
        "sglang",
        "",  # version
        "",  # drop none of the symptoms of the log
        "",
        "",  # the step that failed
        "",  # root cause
        "--fp8-gemm-backend cutlass",  # nothing derived: typed
        "",
        "",  # tried
        "",  # status: default
        "",  # sources
        "",  # notes
        "GLM-5-NVFP4: NaN at first decode",
    ]
    result = run("add", "--log", LOG, input="\n".join(answers) + "\n")
    assert result.exit_code == 0, result.stderr
    f = parse_file(env / "findings" / f"{NEW_ID}.md").findings[0]
    assert (f.model, f.architecture) == ("nvidia/GLM-5-NVFP4", "glm_moe_dsa")
    assert (f.hardware.gpu, f.hardware.sm) == (None, "sm120")
    assert f.fix == Fix(add=("--fp8-gemm-backend cutlass",)) and f.status == "works-with-flags"
    assert f.title == "GLM-5-NVFP4: NaN at first decode"


def test_from_ask_links_the_case_that_helped_and_prefills_context(env):
    result = run(
        "add",
        "--no-input",
        "--from-ask",
        ADD / "ask-glm5.json",
        "--title",
        "GLM-5 again",
    )
    assert result.exit_code == 0, result.stderr
    f = parse_file(env / "findings" / f"{NEW_ID}.md").findings[0]
    assert f.related == ("glm5-nvfp4-sm120-deepgemm-ue8m0-nan",)
    assert (f.model, f.hardware.gpu, f.hardware.sm) == (
        "nvidia/GLM-5-NVFP4",
        "NVIDIA RTX PRO 6000 Blackwell",
        "sm120",
    )
    assert (f.framework.name, f.framework.version) == ("sglang", "main")
    assert f.fix == Fix(add=("--fp8-gemm-backend cutlass",))
    assert [s.cls for s in f.symptoms] == [
        "device-assert",
        "crash",
    ]  # the pasted ssh line is not one


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "Error: --from-ask answer.json: no such file"),
        (
            "{not json",
            "Error: --from-ask answer.json:1: not JSON; save it with `deploykb ask --json`",
        ),
        (
            '{"findings": []}',
            "Error: --from-ask answer.json: not a saved `deploykb ask --json` answer "
            "(no 'matches' list)",
        ),
    ],
)
def test_bad_saved_answer_is_refused(env, content, message):
    if content is not None:
        (env / "answer.json").write_text(content)
    result = run("add", "--no-input", "--from-ask", "answer.json", "--title", "t")
    assert result.exit_code == 2
    assert result.stderr.strip() == message
    assert list((env / "findings").iterdir()) == []


@pytest.mark.parametrize("how", ["eof", "ctrl-c"])
def test_interrupted_prompts_write_nothing(env, monkeypatch, how):
    if how == "ctrl-c":

        def interrupt(*a, **k):
            raise KeyboardInterrupt

        monkeypatch.setattr("typer.prompt", interrupt)
    result = run(
        "add", "--log", LOG, "--failing-cmd", FAILING, "--working-cmd", WORKING, input="\n"
    )
    assert result.exit_code == 130
    assert result.stderr.strip().splitlines()[-1] == "Error: interrupted; nothing was written."
    assert list((env / "findings").iterdir()) == []
    assert not (env / "state").exists()


# --- bad input -----------------------------------------------------------------------------


def test_identical_commands_are_refused(env):
    same = FAILING.replace("--tp 8", "--tp-size=8")  # the same flags, spelt differently
    result = run("add", "--no-input", "--failing-cmd", FAILING, "--working-cmd", same)
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: --working-cmd is identical to --failing-cmd: nothing to record as a fix\n"
    )
    assert list((env / "findings").iterdir()) == []


def test_an_empty_command_is_refused(env):
    result = run("add", "--no-input", "--failing-cmd", "", "--working-cmd", FAILING)
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: --failing-cmd is empty: pass the launch command, or leave the option out\n"
    )
    assert list((env / "findings").iterdir()) == []


def test_status_outside_the_list_is_refused(env):
    result = seed_add("--status", "fixed")
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: --status 'fixed' is not one of: works, works-with-flags, broken, partial\n"
    )
    assert list((env / "findings").iterdir()) == []


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "Error: --log {log}: no such file"),
        (b"", "Error: empty input: paste an error, a log, or a question"),
        (b"\x7fELF\x00\x01\x02", "Error: input looks binary ({log}); pass a text log"),
    ],
)
def test_unreadable_log_is_refused(env, content, message):
    log = env / "server.log"
    if content is not None:
        log.write_bytes(content)
    result = run("add", "--no-input", "--log", "server.log", "--title", "t")
    assert result.exit_code == 2
    assert result.stderr.strip() == message.format(log="server.log")
    assert list((env / "findings").iterdir()) == []


def test_log_from_stdin_needs_no_input(env):
    result = run("add", "--log", "-", input="x")
    assert result.exit_code == 2
    assert "--log - reads the log from stdin, so prompts cannot: add --no-input" in result.stderr
    piped = run(
        "add",
        "--no-input",
        "--log",
        "-",
        "--title",
        "from stdin",
        "--add-flag=--disable-cuda-graph",
        input=LOG.read_text(),
    )
    assert piped.exit_code == 0, piped.stderr
    f = parse_file(next((env / "findings").glob("*.md"))).findings[0]
    assert f.symptoms[0].cls == "device-assert"


# --- a model folder on this machine ----------------------------------------------------------


@pytest.fixture
def model_folder(env, monkeypatch):
    """``models/glm5-local`` with a config.json; config.json files on disk are read for real."""
    from agent import hub

    fake = hub.load_model_config  # the env fixture's: no network

    def config(model, **kw):
        return REAL_LOAD(model, **kw) if Path(model).expanduser().exists() else fake(model, **kw)

    monkeypatch.setattr("agent.hub.load_model_config", config)
    folder = env / "models" / "glm5-local"
    folder.mkdir(parents=True)
    return folder


def write_config(folder: Path, **extra: object) -> None:
    (folder / "config.json").write_text(json.dumps({**GLM5_CONFIG, **extra}))


def folder_add(folder: Path, *extra: str):
    return run("add", "--no-input", "--model", folder, "--gpu", "8x RTX PRO 6000",
               "--symptom", "nan: logits are NaN at the first decode step", "--status", "broken",
               *extra)  # fmt: skip


def test_a_model_folder_records_the_id_its_config_names(model_folder):
    write_config(model_folder, _name_or_path="zai-org/GLM-5")
    result = folder_add(model_folder)
    assert result.exit_code == 0, result.stderr
    path = env_findings(model_folder) / "glm-5-sm120-nan.md"
    f = parse_file(path).findings[0]
    assert (f.model, f.architecture) == ("zai-org/GLM-5", "glm_moe_dsa")  # read from the folder
    assert f.title == "GLM-5 on 8x RTX PRO 6000 Blackwell: nan"  # not the folder's name
    assert "glm5-local" not in path.read_text()
    assert lint_paths([path.parent]).warnings == ()


def test_a_model_in_the_hub_cache_records_the_cache_folders_id(env, model_folder):
    snapshot = env / "hub" / "models--nvidia--GLM-5-NVFP4" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    write_config(snapshot)  # no _name_or_path
    result = folder_add(snapshot)
    assert result.exit_code == 0, result.stderr
    f = parse_file(env / "findings" / "glm-5-nvfp4-sm120-nan.md").findings[0]
    assert f.model == "nvidia/GLM-5-NVFP4"


def test_a_model_folder_that_names_no_id_needs_model_id(model_folder):
    write_config(model_folder, _name_or_path="/data/ckpt/run3")  # a path, not an id
    refused = folder_add(model_folder)
    assert refused.exit_code == 2
    assert refused.stderr == (
        "Error: --model models/glm5-local: a folder on one machine, and its config.json names no "
        "Hugging Face id (_name_or_path): pass --model-id org/name (the id the finding records; "
        "the folder is still read for config.json)\n"
    ).replace("models/glm5-local", str(model_folder))
    given = folder_add(model_folder, "--model-id", "zai-org/GLM-5", "--id", "given")
    assert given.exit_code == 0, given.stderr
    f = parse_file(env_findings(model_folder) / "given.md").findings[0]
    assert (f.model, f.architecture) == ("zai-org/GLM-5", "glm_moe_dsa")


def test_the_prompt_asks_for_the_id_of_a_model_folder(model_folder):
    write_config(model_folder)
    answers = [
        "/elsewhere/ckpt",  # another folder (not here): still no id
        "zai-org/GLM-5",
        "sglang",  # framework (the GPU was given)
        "",  # version
        "nan: logits are NaN at the first decode step",
        "",
        "",  # the step that failed
        "",  # root cause
        "",  # no change
        "",  # tried
        "broken",
        "",  # sources
        "",  # notes
        "",  # title: the default
    ]
    result = run("add", "--model", model_folder, "--gpu", "sm120",
                 input="\n".join(answers) + "\n")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert f"Model: the Hugging Face id (org/name) of {model_folder}" in result.stdout
    assert "nothing in that folder names its Hugging Face id: type it (org/name)" in result.stdout
    f = parse_file(env_findings(model_folder) / "glm-5-sm120-nan.md").findings[0]
    assert (f.model, f.architecture) == ("zai-org/GLM-5", "glm_moe_dsa")


def test_a_model_path_in_the_commands_is_not_recorded(env):
    cmd = "python -m sglang.launch_server --model-path /srv/models/glm5 --tp 8"
    result = run("add", "--no-input", "--failing-cmd", cmd, "--working-cmd",
                 cmd + " --disable-cuda-graph", "--title", "t", "--id", "path-model")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert (
        "warning: the commands name the model by a folder, /srv/models/glm5, and it is not on "
        "this machine: no model recorded (pass --model-id org/name)"
    ) in result.stderr.splitlines()
    assert parse_file(env / "findings" / "path-model.md").findings[0].model is None


def test_the_log_file_is_never_a_source(env):
    result = seed_add("--source", str(LOG), "--source", "sgl-project/sglang#14311")
    assert result.exit_code == 0, result.stderr
    assert (
        f"warning: --source {LOG}: the log given with --log is a file on this machine, not a "
        "source a reader can open; not recorded (its error lines are the symptoms)"
    ) in result.stderr.splitlines()
    f = parse_file(env / "findings" / f"{NEW_ID}.md").findings[0]
    assert f.sources == ("sgl-project/sglang#14311",)


def env_findings(model_folder: Path) -> Path:
    return model_folder.parent.parent / "findings"


def test_with_arch_a_config_that_cannot_be_read_is_no_warning(env):
    # the fixture's Hub is unreachable for any model but GLM-5-NVFP4
    args = ("add", "--no-input", "--model", "zai-org/GLM-5", "--gpu", "B200", "--title", "t",
            "--symptom", "nan: logits are NaN", "--status", "broken")  # fmt: skip
    without = run(*args)
    assert without.exit_code == 0, without.stderr
    assert "warning: cannot reach https://huggingface.co" in without.stderr
    with_arch = run(*args, "--arch", "glm_moe_dsa", "--id", "with-arch")
    assert with_arch.exit_code == 0, with_arch.stderr
    assert "warning" not in with_arch.stderr and "--arch" not in with_arch.stderr
    f = parse_file(env / "findings" / "with-arch.md").findings[0]
    assert f.architecture == "glm_moe_dsa"


def test_a_model_typed_at_the_prompt_keeps_the_arch_option(env):
    answers = ["nvidia/GLM-5-NVFP4", "sm120", "sglang", "", "", "", "", "", "", "", "broken",
               "", "", ""]  # fmt: skip
    result = run("add", "--log", LOG, "--arch", "deepseek_v3", "--id", "arch-kept",
                 input="\n".join(answers) + "\n")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    f = parse_file(env / "findings" / "arch-kept.md").findings[0]
    assert (f.model, f.architecture) == ("nvidia/GLM-5-NVFP4", "deepseek_v3")  # not glm_moe_dsa


def test_no_findings_folder_is_an_error(env):
    (env / "findings").rmdir()
    result = seed_add()
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: no findings folder: pass --findings DIR")


def test_findings_option_chooses_the_folder(env, monkeypatch):
    team = env / "team"
    team.mkdir()
    monkeypatch.setenv("DEPLOYKB_FINDINGS", str(team))
    result = seed_add()
    assert result.exit_code == 0, result.stderr
    assert (team / f"{NEW_ID}.md").is_file()
    assert list((env / "findings").iterdir()) == []


def test_a_folder_that_does_not_exist_is_refused_unless_mkdir(env, monkeypatch):
    missing = seed_add("--dir", "teem")
    assert missing.exit_code == 2
    assert missing.stderr == (
        "Error: --dir teem: no such folder; create it (mkdir -p teem) or pass --mkdir\n"
    )
    assert not (env / "teem").exists()
    monkeypatch.setenv("DEPLOYKB_FINDINGS", str(env / "team"))
    from_env = seed_add()
    assert from_env.exit_code == 2
    assert from_env.stderr == (
        f"Error: --findings {env / 'team'}: no such folder; create it "
        f"(mkdir -p {env / 'team'}) or pass --mkdir\n"
    )
    (env / "a-file").write_text("")
    assert seed_add("--dir", "a-file").stderr == "Error: --dir a-file: not a folder\n"
    created = seed_add("--dir", "team/gpu", "--mkdir")
    assert created.exit_code == 0, created.stderr
    assert created.stdout.splitlines()[0] == f"wrote team/gpu/{NEW_ID}.md"


def test_what_lint_would_say_is_said_before_writing(env):
    result = seed_add("--add-flag", "--fp8-gemm-backnd cutlass", "--source", "a chat with Bob")
    assert result.exit_code == 0, result.stderr
    lines = (env / "findings" / f"{NEW_ID}.md").read_text().splitlines()
    flag_line = lines.index("    - --fp8-gemm-backnd cutlass") + 1
    source_line = lines.index("  - a chat with Bob") + 1
    assert result.stderr.splitlines()[-2:] == [
        f"warning: findings/{NEW_ID}.md:{flag_line}: flag '--fp8-gemm-backnd' is not a known "
        "sglang flag (not in the flag registry)",
        f"warning: findings/{NEW_ID}.md:{source_line}: source 'a chat with Bob' is not a link: "
        "use a URL, owner/repo#N or a path to a file",
    ]


# --- never overwrite -----------------------------------------------------------------------


def test_existing_file_is_kept_unless_forced_then_backed_up(env):
    first = seed_add("--id", "glm5-case", "--root-cause", "first version")
    assert first.exit_code == 0, first.stderr
    path = env / "findings" / "glm5-case.md"
    original = path.read_text()

    again = seed_add("--id", "glm5-case", "--root-cause", "second version")
    assert again.exit_code == 2
    assert again.stderr == (
        "Error: findings/glm5-case.md already exists; use --force to replace it "
        "(the old file is kept as glm5-case.md.bak)\n"
    )
    assert path.read_text() == original

    forced = seed_add("--id", "glm5-case", "--root-cause", "second version", "--force")
    assert forced.exit_code == 0, forced.stderr
    assert "(the old file is kept as findings/glm5-case.md.bak)" in forced.stdout
    assert (env / "findings" / "glm5-case.md.bak").read_text() == original
    assert parse_file(path).findings[0].root_cause == "second version"


def test_derived_ids_are_made_unique(env):
    assert seed_add().exit_code == 0
    second = seed_add()
    assert second.exit_code == 0, second.stderr
    assert (env / "findings" / f"{NEW_ID}-2.md").is_file()
    assert lint_paths([env / "findings"]).errors == ()


def test_json_output_names_the_file_and_the_redactions(env):
    result = seed_add("--notes", SEED_SSH, "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["id"] == NEW_ID and out["indexed"] is True and out["backup"] is None
    assert out["redactions"] == [
        {
            "field": "notes",
            "kind": "ssh-user-host",
            "preview": "…(17 chars)",
            "replacement": "<user>@<host>",
        }
    ]


# --- the pure parts ------------------------------------------------------------------------


def test_command_diff_keeps_the_working_commands_spelling():
    failing = parse_command(
        "NCCL_P2P_DISABLE=1 python -m sglang.launch_server --model-path m --tp=8 "
        "--mem-fraction-static 0.80 --kv-cache-dtype fp8_e4m3 --attention-backend flashinfer"
    )
    working = parse_command(
        "SGLANG_ENABLE_JIT_DEEPGEMM=0 python -m sglang.launch_server --model-path m --tp-size 8 "
        "--mem-fraction-static 0.8 --attention_backend=triton --disable-cuda-graph"
    )
    assert F.fix_from_commands(failing, working) == Fix(
        add=("--disable-cuda-graph",),
        change=("--attention_backend=flashinfer -> triton",),  # a value changed is a change
        remove=("--kv-cache-dtype fp8_e4m3", "NCCL_P2P_DISABLE=1"),
        env=("SGLANG_ENABLE_JIT_DEEPGEMM=0",),
    )


MEM_FAILING = "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8 --mem-fraction-static 0.9"
MEM_WORKING = MEM_FAILING.replace("0.9", "0.82")
OOM = "oom: torch.OutOfMemoryError: CUDA out of memory while capturing CUDA graphs at batch 512"


def test_a_changed_value_is_recorded_read_linted_proposed_and_exported_as_a_change(env):
    added = run("add", "--no-input", "--failing-cmd", MEM_FAILING, "--working-cmd", MEM_WORKING,
                "--gpu", "RTX PRO 6000", "--symptom", OOM)  # fmt: skip
    assert added.exit_code == 0, added.stderr
    path = env / "findings" / "glm-5-nvfp4-sm120-oom.md"
    text = path.read_text()
    assert "fix:\n  change:\n    - --mem-fraction-static 0.9 -> 0.82\n" in text
    assert "\n## Fix\n\n- Change `--mem-fraction-static 0.9 → 0.82`\n" in text
    assert "add:" not in text and "Add `" not in text
    f = parse_file(path).findings[0]
    assert f.fix == Fix(change=("--mem-fraction-static 0.9 -> 0.82",))
    assert f.title.endswith("oom, fixed by --mem-fraction-static 0.9 → 0.82")
    assert lint_paths([env / "findings"]).errors == () == lint_paths([env / "findings"]).warnings
    # ask proposes it as a change from the user's value
    asked = run("ask", OOM.split(": ", 1)[1], "--gpu", "sm120", "--cmd", MEM_FAILING,
                "--findings", "findings", "--json")  # fmt: skip
    best = json.loads(asked.stdout)["matches"][0]
    assert best["id"] == "glm-5-nvfp4-sm120-oom"
    assert [(c["action"], c["name"], c["old"], c["value"]) for c in best["changes"]] == [
        ("change", "--mem-fraction-static", "0.9", "0.82")
    ]
    shown = run("show", "glm-5-nvfp4-sm120-oom").stdout
    assert "\nFix\n  --mem-fraction-static 0.9 → 0.82\n" in shown
    exported = run("export", "--format", "md", "--findings", "findings", "--model", "GLM-5-NVFP4")
    assert "`--mem-fraction-static 0.9 → 0.82`" in exported.stdout


def test_a_change_is_typed_as_old_arrow_new():
    assert F.parse_change("--mem-fraction-static 0.9 -> 0.82") == (
        "change",
        "--mem-fraction-static 0.9 -> 0.82",
    )
    assert F.parse_change("NCCL_ALGO=Ring → Tree") == ("change", "NCCL_ALGO=Ring → Tree")
    with pytest.raises(InputError) as exc:
        F.parse_change("--mem-fraction-static -> 0.82")
    assert str(exc.value) == (
        "'--mem-fraction-static -> 0.82': a change is written '--flag OLD -> NEW' or "
        "'NAME=OLD -> NEW'"
    )


def test_a_change_entry_against_a_command_is_a_change_or_an_add():
    from agent.flags import diff

    fix = Fix(change=("--mem-fraction-static 0.9 -> 0.82",))
    listed = diff(None, fix, finding_framework="sglang")  # no command: the entry as written
    assert [(c.action, c.name, c.old, c.value) for c in listed] == [
        ("change", "--mem-fraction-static", "0.9", "0.82")
    ]
    mine = parse_command(MEM_FAILING.replace("0.9", "0.88"))  # the user's own value is the old
    assert [(c.action, c.old, c.value) for c in diff(mine, fix)] == [("change", "0.88", "0.82")]
    without = parse_command(MEM_FAILING.replace(" --mem-fraction-static 0.9", ""))
    assert [(c.action, c.value) for c in diff(without, fix)] == [("add", "0.82")]
    assert diff(parse_command(MEM_WORKING), fix) == ()  # already in place


def test_command_diff_records_an_image_change_as_a_pin():
    base = "docker run --gpus all {image} python3 -m sglang.launch_server --model-path m --tp 8"
    failing = parse_command(base.format(image="lmsysorg/sglang:v0.5.8"))
    working = parse_command(base.format(image="lmsysorg/sglang:v0.5.9-cu129"))
    assert F.fix_from_commands(failing, working) == Fix(pins=("lmsysorg/sglang:v0.5.9-cu129",))


def test_a_command_names_framework_version_model_gpu_count_and_quantization():
    cfg = parse_command(
        "docker run --gpus all lmsysorg/sglang:v0.5.9-cu129 python3 -m sglang.launch_server "
        "--model-path nvidia/GLM-5-NVFP4 --tp 8 --quantization modelopt_fp4"
    )
    assert F.draft_from_command(cfg) == A.Draft(
        framework="sglang",
        framework_version="v0.5.9-cu129",
        model="nvidia/GLM-5-NVFP4",
        gpu_count=8,
        quantization="modelopt_fp4",
    )


def test_commands_of_two_frameworks_cannot_be_diffed():
    with pytest.raises(InputError, match="--failing-cmd runs sglang and --working-cmd runs vllm"):
        F.fix_from_commands(
            parse_command("python -m sglang.launch_server --model-path m --tp 2"),
            parse_command("vllm serve m -tp 2"),
        )


def test_symptoms_from_triage_skip_pasted_commands_and_context():
    tri = Triage(
        (
            SalientLine("Assertion `x` failed.", "s1", "device-assert", "assertion"),
            SalientLine(
                "$ ssh host 'grep \"hit an exception\" log'", "s2", "crash", "scheduler-exception"
            ),
            SalientLine("ValueError: bad shape", "s3", None, "exception"),
            SalientLine("loading weights", "s4", None, "before-traceback"),
            SalientLine("Assertion `x` failed.", "s5", "device-assert", "assertion"),
        )
    )
    assert A.symptoms_from_triage(tri) == (
        Symptom("device-assert", "Assertion `x` failed."),
        Symptom("crash", "ValueError: bad shape"),
    )


def test_the_real_error_is_kept_however_common_its_words_and_the_banners_are_not(env):
    log = ADD / "ima-capture.log"  # a scheduler banner, the IMA line, the sigquit line
    result = run("add", "--no-input", "--log", log, "--title", "IMA", "--status", "broken",
                 "--id", "ima")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    f = parse_file(env / "findings" / "ima.md").findings[0]
    assert [(s.cls, s.text) for s in f.symptoms] == [
        ("illegal-memory-access", "RuntimeError: CUDA error: an illegal memory access was encountered"),
        ("crash", "[2026-03-01 10:00:05] Received sigquit from a child process. It usually means "
         "the child failed."),
    ]  # fmt: skip
    # the banner's words are the ranking's boilerplate, and so are the IMA line's; only the
    # banner, which names no failure of its own, is left out
    from agent.informative import is_boilerplate
    from agent.logs import triage

    lines = triage(log.read_text().splitlines()).lines
    ima = next(ln for ln in lines if ln.cls == "illegal-memory-access")
    banner = next(ln for ln in lines if "Scheduler hit an exception" in ln.text)
    assert is_boilerplate(ima.signature) and is_boilerplate(banner.signature)


def test_symptom_option_takes_a_class_or_words_that_name_one():
    from agent.logs import classify

    assert A.parse_symptom("oom: CUDA out of memory", classify) == Symptom(
        "oom", "CUDA out of memory"
    )
    assert A.parse_symptom("torch.OutOfMemoryError: CUDA out of memory", classify).cls == "oom"
    with pytest.raises(InputError, match="start it with its class, e.g. 'crash: "):
        A.parse_symptom("the server went quiet", classify)


def test_typed_changes_go_to_the_right_list():
    fix = Fix()
    for entry in (
        "--fp8-gemm-backend cutlass",
        "remove --enable-dp-attention",
        "NCCL_P2P_DISABLE=1",
        "flashinfer-python==0.6.1",
        "lmsysorg/sglang:v0.5.9",
    ):
        fix = F.add_change(fix, entry, "sglang")
    assert fix == Fix(
        add=("--fp8-gemm-backend cutlass",),
        remove=("--enable-dp-attention",),
        env=("NCCL_P2P_DISABLE=1",),
        pins=("flashinfer-python==0.6.1", "lmsysorg/sglang:v0.5.9"),
    )
    with pytest.raises(InputError, match="not a change"):
        F.add_change(fix, "use the other backend")


def test_ids_come_from_model_sm_and_main_symptom():
    draft = A.Draft(model="nvidia/GLM-5-NVFP4", sm="sm120", symptoms=(Symptom("nan", "x"),))
    assert A.make_id(draft) == "glm-5-nvfp4-sm120-nan"
    assert A.make_id(draft, {"glm-5-nvfp4-sm120-nan", "glm-5-nvfp4-sm120-nan-2"}) == (
        "glm-5-nvfp4-sm120-nan-3"
    )
    assert A.make_id(A.Draft(model="/home/alice/models/Qwen3.5-397B/", sm="sm100")) == (
        "qwen3.5-397b-sm100"
    )
    assert A.make_id(A.Draft(title="NCCL hangs on 2x V100")) == "nccl-hangs-on-2x-v100"


def test_an_id_used_by_another_indexed_folder_is_refused(env):
    result = seed_add("--id", "glm5-nvfp4-sm120-deepgemm-ue8m0-nan")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: --id 'glm5-nvfp4-sm120-deepgemm-ue8m0-nan' is already used by "
    )
    assert result.stderr.rstrip().endswith(
        "findings/glm5-nvfp4-sm120-deepgemm-ue8m0-nan.md; choose another id"
    )
    assert list((env / "findings").iterdir()) == []
