"""``deploykb lint``: one ``path:line: severity: message`` per problem; errors fail."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agent.cli  # noqa: F401  (registers every command)
from agent.checks import is_link, lint_paths
from agent.cli.app import app
from kb.resources import shipped_findings_dir

GOOD = """\
---
id: {id}
title: "GLM-5-NVFP4 on 8x RTX PRO 6000: NaN at first decode"
status: broken
hardware:
  sm: sm120
framework:
  name: sglang
symptoms:
  - class: device-assert
    text: "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed."
tried_without_effect:
  - disabling CUDA graphs
  - --fp8-gemm-backend cutlass
sources:
  - https://github.com/sgl-project/sglang/issues/14311
  - sgl-project/sglang#14311
  - "report: internal deployment report (seed 003), 2026-02, 8x RTX PRO 6000 Blackwell"
---

## Root cause

Unknown; suspected: DeepGEMM and a scale format that is not ue8m0.
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def lint(*args: str):
    return CliRunner().invoke(app, ["lint", *map(str, args)], catch_exceptions=False)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    d = tmp_path / "findings"
    d.mkdir()
    return d


def test_clean_folder_passes_and_readme_is_skipped(folder):
    write(folder, "glm5.md", GOOD.format(id="glm5"))
    write(folder, "README.md", "# not a finding\n\nno front matter, no sections\n")
    result = lint()  # default: ./findings
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == "1 file checked: 0 errors, 0 warnings\n"


@pytest.mark.parametrize(
    "edit, line",
    [
        (
            ("status: broken", "status: fixed"),
            "findings/x.md:4: error: status 'fixed' is not one of: "
            "works, works-with-flags, broken, partial",
        ),
        (
            ('title: "GLM-5-NVFP4 on 8x RTX PRO 6000: NaN at first decode"\n', ""),
            "findings/x.md:1: error: missing required field 'title'",
        ),
        (
            ('title: "GLM-5-NVFP4 on 8x RTX PRO 6000: NaN at first decode"', 'title: ""'),
            "findings/x.md:3: error: required field 'title' is empty",
        ),
        (
            ("class: device-assert", "class: segfault"),
            "findings/x.md:10: error: symptom class 'segfault' is not one of: nan, garbage-output, "
            "empty-output, accuracy, device-assert, illegal-memory-access, crash, hang, oom, slow, "
            "warning",
        ),
        (
            ("id: x", "id: y"),
            "findings/x.md:2: error: id 'y' does not match the file name; rename the file to y.md "
            "or change the id",
        ),
        (
            ("  - sgl-project/sglang#14311", "  - the SGLang issue about SM120"),
            "findings/x.md:17: warning: source 'the SGLang issue about SM120' is not a link: "
            "use a URL, owner/repo#N or a path to a file",
        ),
        (
            ("--fp8-gemm-backend cutlass", "--fp8-gemm-backnd cutlass"),
            "findings/x.md:14: warning: flag '--fp8-gemm-backnd' is not a known sglang flag "
            "(not in the flag registry)",
        ),
        (
            ("DeepGEMM and", "Seen on 10.1.230.175: DeepGEMM and"),
            "findings/x.md:23: error: unredacted ipv4 '…(12 chars)': replace it with <ip> "
            "(`deploykb add` redacts automatically)",
        ),
        (
            ("DeepGEMM and", "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEF12; DeepGEMM and"),
            "findings/x.md:23: error: unredacted hf-token '…(37 chars)': replace it with "
            "<hf-token> (`deploykb add` redacts automatically)",
        ),
        (
            ("hardware:\n  sm: sm120", "hardware:\n  sm: 120x"),
            "findings/x.md:6: error: 'hardware.sm' must look like sm90, sm100 or sm120 (NVIDIA) "
            "or gfx942 (AMD) (got '120x')",
        ),
    ],
)
def test_each_rule_names_the_line_at_fault(folder, edit, line):
    old, new = edit
    text = GOOD.format(id="x")
    assert old in text
    write(folder, "x.md", text.replace(old, new, 1))
    result = lint("findings")
    assert result.stdout.splitlines() == [line]
    assert result.exit_code == (1 if ": error: " in line else 0)


def test_duplicate_ids_across_files(folder):
    write(folder, "a/same.md", GOOD.format(id="same"))
    write(folder, "b/same.md", GOOD.format(id="same"))
    result = lint("findings")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "findings/b/same.md:2: error: duplicate id 'same' (also in findings/a/same.md:2)"
    ]


def test_errors_come_before_warnings_and_strict_fails_on_warnings(folder):
    write(folder, "w.md", GOOD.format(id="w").replace("sgl-project/sglang#14311", "a chat"))
    write(folder, "e.md", GOOD.format(id="e").replace("status: broken", "status: ok"))
    result = lint("findings")
    assert result.exit_code == 1
    assert [ln.split(": ")[1] for ln in result.stdout.splitlines()] == ["error", "warning"]
    assert result.stderr == "2 files checked: 1 error, 1 warning\n"

    (folder / "e.md").unlink()
    assert lint("findings").exit_code == 0
    assert lint("findings", "--strict").exit_code == 1


def test_json_output(folder):
    write(folder, "x.md", GOOD.format(id="x").replace("status: broken", "status: ok"))
    result = lint("findings", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "files": 1,
        "errors": [
            {
                "path": "findings/x.md",
                "line": 4,
                "message": "status 'ok' is not one of: works, works-with-flags, broken, partial",
            }
        ],
        "warnings": [],
        "notes": [],
    }


def test_yaml_errors_are_reported_with_their_line(folder):
    write(folder, "x.md", GOOD.format(id="x").replace("status: broken", "status: [oops"))
    result = lint("findings")
    assert result.exit_code == 1
    assert result.stdout.startswith("findings/x.md:")
    assert "invalid YAML in front matter" in result.stdout


def test_unknown_flags_in_commands_are_warnings(folder):
    text = GOOD.format(id="x").replace(
        "sources:",
        "failing_command: |\n"
        "  python -m sglang.launch_server --model-path m --tp 8 --turbo-mode\n"
        "sources:",
    )
    write(folder, "x.md", text)
    result = lint("findings")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "findings/x.md:15: warning: flag '--turbo-mode' is not a known sglang flag "
        "(not in the flag registry)"
    ]


TOKENS = """\
---
id: tokens
title: "Model on H100: OOM at start-up"
status: works-with-flags
model: <redacted>/Model-<ip>
hardware:
  sm: sm90
framework:
  name: sglang
  version: 0.<ip>
fix:
  add:
    - --mem-fraction-static <ip>
    - --dist-init-addr <ip>:5000
  change:
    - --chunked-prefill-size 8192 -> <host>
  env:
    - HF_TOKEN=<redacted>
    - SGLANG_CUSTOM=<redacted>
tried_without_effect:
  - --cuda-graph-max-bs <ip>
  - restarting <host>
failing_command: |
  HF_TOKEN=<redacted> /home/<user>/venv/bin/python -m sglang.launch_server --model-path /home/<user>/models/m --host <ip> --max-running-requests <ip>
working_command: |
  docker run <host>:5000/team/sglang:v0.5.9 python -m sglang.launch_server --model-path m --tp 2
sources:
  - sgl-project/sglang#1
---
"""


def test_a_redaction_placeholder_where_a_value_must_stand_is_an_error(folder):
    write(folder, "tokens.md", TOKENS)
    result = lint("findings")
    assert result.exit_code == 1
    ph = "holds the redaction placeholder"
    assert result.stdout.splitlines() == [
        f"findings/tokens.md:5: error: model: '<redacted>/Model-<ip>' {ph}s <redacted> and <ip> "
        "where a value must stand: write the model's Hugging Face id",
        f"findings/tokens.md:10: error: framework.version: '0.<ip>' {ph} <ip> where a value must "
        "stand: write the version as the source gives it",
        f"findings/tokens.md:13: error: fix.add: '--mem-fraction-static <ip>' {ph} <ip> where a "
        "value must stand: write the value the source gives (a version, a number, a flag)",
        f"findings/tokens.md:16: error: fix.change: '--chunked-prefill-size 8192 -> <host>' {ph} "
        "<host> where a value must stand: write the value the source gives (a version, a number, "
        "a flag)",
        f"findings/tokens.md:19: error: fix.env: 'SGLANG_CUSTOM=<redacted>' {ph} <redacted> where "
        "a value must stand: write the value the source gives (a version, a number, a flag)",
        f"findings/tokens.md:21: error: tried_without_effect: '--cuda-graph-max-bs <ip>' {ph} "
        "<ip> where a value must stand: write the value the source gives (a version, a number, "
        "a flag)",
        f"findings/tokens.md:23: error: failing_command: '--max-running-requests <ip>' {ph} <ip> "
        "where a value must stand: write the value the source gives (a version, a number, a flag)",
    ]  # an address in --dist-init-addr and --host, HF_TOKEN's secret, a home directory in a
    # path and a private registry's host are what redaction is for: not errors


def test_a_path_on_one_machine_as_model_or_source_is_a_warning(folder):
    text = GOOD.format(id="local").replace(
        "status: broken\n", "status: broken\nmodel: /data/models/glm5-local\n"
    )
    text = text.replace("  - sgl-project/sglang#14311\n", "  - ~/logs/server.log\n")
    lines = write(folder, "local.md", text).read_text().splitlines()
    result = lint("findings")
    assert result.exit_code == 0  # warnings: --strict fails on them
    model_line = lines.index("model: /data/models/glm5-local") + 1
    source_line = lines.index("  - ~/logs/server.log") + 1
    assert result.stdout.splitlines() == [
        f"findings/local.md:{model_line}: warning: model '/data/models/glm5-local' is a path on "
        "one machine: write the model's Hugging Face id (org/name)",
        f"findings/local.md:{source_line}: warning: source '~/logs/server.log' is a path on one "
        "machine: cite what a reader can open (a URL, owner/repo#N, a file in the repository, "
        "'report: ...')",
    ]


def test_missing_folder_is_an_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = lint()
    assert result.exit_code == 2  # bad input: nothing to lint was named
    assert result.stderr == "Error: no findings/ folder here; pass the folders or files to lint\n"


@pytest.mark.parametrize(
    "source, ok",
    [
        ("https://github.com/vllm-project/vllm/issues/7419", True),
        ("vllm-project/vllm#7419", True),
        ("shared/seeds/003_861d3f58ddb8af43.txt", True),
        ("FINDINGS.md", True),
        ("~/notes/glm5.md", True),
        ("report: internal deployment report (seed 003), 2026-02, 8x RTX PRO 6000 Blackwell", True),
        ("report:", False),
        ("report:   ", False),
        ("a report: internal notes", False),
        ("the vLLM forum", False),
        ("vllm-project/vllm", False),
        ("https://", False),
    ],
)
def test_what_counts_as_a_link(source, ok):
    assert is_link(source) is ok


def test_shipped_findings_lint_clean():
    report = lint_paths([shipped_findings_dir()])
    assert report.files >= 41
    assert [str(p) for p in report.errors] == []
    assert [str(p) for p in report.warnings] == []


def test_an_unknown_component_is_an_error_naming_the_vocabulary(tmp_path):
    from agent.checks import lint_paths

    path = tmp_path / "x-1.md"
    path.write_text(
        "---\nid: x-1\ntitle: t\nstatus: broken\ncomponents:\n  - deepgemm\n  - warp-drive\n---\n"
    )
    report = lint_paths([path])
    messages = [str(p) for p in report.errors]
    assert len(messages) == 1, messages
    assert messages[0].startswith(
        f"{path}:7: component 'warp-drive' is not in data/components.json"
    )


def test_a_link_inside_the_folder_is_read_and_one_outside_is_refused(folder, tmp_path):
    write(folder, "a.md", GOOD.format(id="a"))
    (folder / "sub").mkdir()
    (folder / "sub" / "b.md").symlink_to(folder / "a.md")  # the same file: read once
    outside = write(tmp_path, "elsewhere/c.md", GOOD.format(id="c"))
    (folder / "c.md").symlink_to(outside)
    result = lint("findings")
    assert result.stdout.splitlines() == [
        f"findings/c.md: error: symbolic link to {outside.resolve()}, outside the folders "
        "checked: not followed (commit the file, not a link)"
    ]
    assert lint("findings", "elsewhere").exit_code == 0  # both folders checked: it is read
