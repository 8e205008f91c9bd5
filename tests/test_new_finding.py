"""``agent.new_finding``: the policy of ``deploykb add`` without the command line. What it has to
say comes back as warnings; its edges (config.json, nvidia-smi, stdin) are parameters."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agent.draft import Draft
from agent.hub import is_hub_id, model_context, model_reference
from agent.new_finding import Request, choose_folder, derive_draft, gpu_facts, model_facts, start
from kb.errors import ConfigFetchError, InputError

FIXTURES = Path(__file__).parent / "fixtures"
LOG = FIXTURES / "add" / "glm5-server.log"


def test_model_references_and_the_one_hub_id_test(tmp_path):
    (tmp_path / "local").mkdir()
    assert model_reference(str(tmp_path / "local")) == "local"
    assert model_reference(str(tmp_path / "gone")) == "missing"
    assert model_reference("./gone") == "missing"
    assert model_reference("nvidia/GLM-5-NVFP4") == "hub"
    assert model_reference("GLM-5") == "name"
    assert is_hub_id("org/name") and not is_hub_id("a/b/c") and not is_hub_id("-x/y")


def test_model_context_looks_up_only_what_names_a_config(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr("agent.hub.load_model_config", lambda m, **kw: asked.append(m) or {})
    assert model_context("GLM-5") is None
    assert model_context(str(tmp_path / "gone"), must_exist=False) is None
    assert asked == []
    model_context("org/model")
    assert asked == ["org/model"]


def test_what_cannot_be_derived_is_a_warning_not_a_print(capsys, monkeypatch):
    def unreachable(model, **kw):  # type: ignore[no-untyped-def]
        raise ConfigFetchError(f"cannot reach the Hub for '{model}'")

    monkeypatch.setattr("agent.hub.load_model_config", unreachable)
    draft, warnings = derive_draft(
        Request(model="org/model", gpu="8x Potato 9000", log="-"),
        detect=False,
        stdin=io.StringIO("all quiet\n"),
    )
    assert warnings == [
        "--log -: no error lines found; add the symptoms with --symptom",
        "cannot reach the Hub for 'org/model' (the finding gets no architecture or "
        "quantization from it)",
        "--gpu '8x Potato 9000': not a GPU deploykb knows; kept as written, SM left empty "
        "(add it, e.g. --gpu 'sm120')",
    ]
    assert (draft.gpu, draft.gpu_count, draft.sm) == ("Potato 9000", 8, None)
    assert capsys.readouterr() == ("", "")


def test_a_known_gpu_and_a_bare_model_name_need_no_warning():
    assert gpu_facts("8x RTX PRO 6000")[0].sm == "sm120"
    assert gpu_facts("B200")[1] is None
    assert model_facts("GLM-5") == (Draft(), None)  # a bare name: nothing to look up


def test_options_win_over_what_the_log_and_commands_say(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "findings").mkdir()
    request = Request(
        log=str(LOG),
        failing_cmd="python -m sglang.launch_server --model-path m --tp 8",
        working_cmd="python -m sglang.launch_server --model-path m --tp 8 --enforce-eager",
        framework="sglang 0.5.9",
        status="broken",
        add=("--disable-cuda-graph",),
    )
    started = start(request, prompting=False, detect=False, today="2026-12-01")
    d = started.draft
    assert (d.framework, d.framework_version, d.status, d.gpu_count) == (
        "sglang",
        "0.5.9",
        "broken",
        8,
    )
    assert d.fix.add == ("--enforce-eager", "--disable-cuda-graph")
    assert d.date == "2026-12-01" and d.symptoms
    assert started.folder.path == Path("findings")


def test_where_to_write_is_refused_before_anything_is_derived(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="no findings folder"):
        choose_folder(None, [])
    with pytest.raises(InputError, match="--log - reads the log from stdin, so prompts cannot"):
        start(Request(log="-"), prompting=True)
