"""From a matched case to the user's changes: diff, corrected command, dead ends already tried."""

from __future__ import annotations

from agent.answer import propose
from agent.flags import parse_command
from kb.records import Finding, Fix, Framework, Match, QueryContext

GLM5 = Finding(
    id="glm5",
    title="GLM-5 NaN at first decode",
    status="works-with-flags",
    framework=Framework(name="sglang"),
    fix=Fix(add=("--fp8-gemm-backend cutlass",)),
    tried_without_effect=(
        "--attention-backend flashinfer",
        "--attention-backend triton",
        "chunked prefill size changes",  # prose: nothing to compare
    ),
)
CMD = "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8 --attention-backend triton"


def test_dead_ends_already_in_the_users_command_are_pointed_out():
    ctx = QueryContext(framework="sglang", command=parse_command(CMD))
    p = propose(Match(GLM5, 1.0), ctx)
    assert p.dead_ends_in_command == ("--attention-backend triton",)
    assert [c.text for c in p.changes] == ["--fp8-gemm-backend cutlass"]
    assert p.command == CMD + " --fp8-gemm-backend cutlass"


def test_without_a_command_there_is_nothing_to_compare():
    p = propose(Match(GLM5, 1.0), QueryContext())
    assert p.dead_ends_in_command == ()
    assert p.command is None
    assert [(c.action, c.text) for c in p.changes] == [("add", "--fp8-gemm-backend cutlass")]


def test_a_model_path_in_the_command_names_the_serving_host_model(tmp_path):
    from agent.answer import build_context
    from kb.errors import ConfigFetchError

    warnings: list[str] = []
    cmd = "python -m sglang.launch_server --model-path /data/models/Qwen3.5-397B-A17B-NVFP4 --tp 8"
    ctx = build_context(cmd=cmd, detect=False, warnings=warnings)
    assert ctx.model == "/data/models/Qwen3.5-397B-A17B-NVFP4" and ctx.arch is None
    assert warnings == []
    # the same path given with --model must exist here
    import pytest

    with pytest.raises(ConfigFetchError, match="no such file or directory"):
        build_context(model=str(tmp_path / "missing"), detect=False, warnings=warnings)
