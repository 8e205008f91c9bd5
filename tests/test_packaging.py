"""A wheel install, not only an editable one, carries and finds the shipped findings and data."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.fail(f"building the wheel failed: {proc.stderr[-2000:]}")
    (path,) = out.glob("deploykb-*.whl")
    return path


def test_wheel_contains_findings_and_reference_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.name for p in (ROOT / "findings").glob("*.md")}
    packaged = {n.rsplit("/", 1)[1] for n in names if n.startswith("kb/_shipped/findings/")}
    assert shipped <= packaged
    for data in (
        "flags.json",
        "arch_traits.json",
        "gpus.json",
        "triage.json",
        "stages.json",
        "components.json",
        "differential.json",
        "metadata.json",  # Datasette's facets and labels for the index (docs/export.md)
    ):
        assert f"kb/_shipped/data/{data}" in names
    assert not any(n.endswith((".db", ".db-journal")) for n in names)


def test_installed_package_reads_its_own_copy(wheel, tmp_path):
    zipfile.ZipFile(wheel).extractall(tmp_path)
    code = (
        "import kb.resources as r, json; "
        "print(json.dumps([str(r.shipped_findings_dir()), str(r.data_file('flags.json'))]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    findings_dir, flags = (Path(p) for p in __import__("json").loads(proc.stdout))
    assert findings_dir == tmp_path / "kb" / "_shipped" / "findings"
    assert len([p for p in findings_dir.glob("*.md") if p.name != "README.md"]) >= 41
    assert flags == tmp_path / "kb" / "_shipped" / "data" / "flags.json"


def test_the_one_console_command_is_the_cli_entry_point(wheel, tmp_path):
    """``deploykb = agent.cli:main``, and the wheel holds the CLI layer and every command."""
    archive = zipfile.ZipFile(wheel)
    (entry_points,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
    scripts = archive.read(entry_points).decode().split("[console_scripts]", 1)[1]
    assert [line.strip() for line in scripts.strip().splitlines()] == ["deploykb = agent.cli:main"]
    names = set(archive.namelist())
    for command in ("add", "ask", "indexing", "lint", "listing", "show", "table", "triage"):
        assert f"agent/cli/commands/{command}.py" in names
    archive.extractall(tmp_path)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from agent.cli import main; import sys; sys.argv = ['deploykb', '--version']; main()",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdout.strip() == "deploykb 0.1.0", proc.stderr
