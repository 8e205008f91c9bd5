"""Several deploykb processes at once: no finding is lost, no "database is locked" reaches a user.

The default run is small (a few seconds). Full size, as documented in the README:

    DEPLOYKB_RACE_TRIALS=30 DEPLOYKB_SOAK_SECONDS=60 python -m pytest -q tests/test_concurrency.py -s

Workers are forked processes that run the real CLI (typer's CliRunner) against one index file and
one findings folder, so they contend for the same SQLite file and the same directory exactly as
separate `deploykb` commands do.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import re
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "findings"
RACE_TRIALS = int(os.environ.get("DEPLOYKB_RACE_TRIALS", "1"))
SOAK_SECONDS = float(os.environ.get("DEPLOYKB_SOAK_SECONDS", "4"))

ctx = multiprocessing.get_context("fork")


def _invoke(args: list[str]) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    import agent.cli  # noqa: F401  (registers every command)
    from agent.cli.app import app

    result = CliRunner().invoke(app, args)
    err = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        err += f"\nTraceback: {type(result.exception).__name__}: {result.exception}"
    return result.exit_code, result.stdout, err


def _setenv(db: Path) -> None:
    os.environ.update(
        DEPLOYKB_DB=str(db), DEPLOYKB_EMBEDDER="hash", HF_HUB_OFFLINE="1", COLUMNS="200"
    )
    os.environ.pop("DEPLOYKB_FINDINGS", None)


# --- two and four `add` with the same title at the same moment ------------------------------------


def _add_worker(barrier, queue, workdir: str, db: str) -> None:
    os.chdir(workdir)
    _setenv(Path(db))
    import agent.context

    agent.context.detect_gpu = lambda *a, **k: None
    import agent.cli  # noqa: F401  (imported before the barrier: the adds start together)

    barrier.wait()
    code, out, err = _invoke(
        [
            "add",
            "--no-input",
            "--title",
            "Same title at the same moment",
            "--model",
            "acme/Race-7B",
            "--gpu",
            "sm120",
            "--symptom",
            "crash: RuntimeError: CUDA error: an illegal memory access was encountered",
            "--add-flag",
            "--disable-cuda-graph",
        ]
    )
    queue.put((code, out, err))


@pytest.mark.slow
@pytest.mark.parametrize("writers", [2, 4])
def test_simultaneous_adds_keep_every_finding(tmp_path, writers):
    for trial in range(RACE_TRIALS):
        work = tmp_path / f"trial{trial}"
        (work / "findings").mkdir(parents=True)
        db = work / "state" / "kb.db"
        barrier = ctx.Barrier(writers)
        queue = ctx.Queue()
        procs = [
            ctx.Process(target=_add_worker, args=(barrier, queue, str(work), str(db)))
            for _ in range(writers)
        ]
        for p in procs:
            p.start()
        results = [queue.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        for code, _out, err in results:
            assert code == 0, err
        written = sorted(
            m.group(1) for _, out, _ in results for m in re.finditer(r"^wrote (\S+)$", out, re.M)
        )
        files = sorted(f"findings/{p.name}" for p in (work / "findings").glob("*.md"))
        # each add reported its own file, and every reported file is on disk, complete
        assert len(set(written)) == writers, written
        assert written == files
        from kb.parse import parse_file

        ids = {parse_file(work / f).findings[0].id for f in files}
        assert len(ids) == writers
        # and each is in the index
        from kb.store import load_findings, open_db

        database = open_db(db)
        assert ids <= {f.id for f in load_findings(database)}
        database.close()


# --- two ingesters and four askers for a while, findings changing underneath ---------------------

ERROR_MARKERS = ("Error", "Traceback", "locked", "malformed")


def _loop_worker(kind: str, deadline: float, queue, db: str, team: str) -> None:
    _setenv(Path(db))
    random.seed(os.getpid())
    calls = errors = 0
    samples: list[str] = []
    queries = [
        "probability tensor contains either inf, nan or element < 0",
        "CUDA error: an illegal memory access was encountered",
        "what works for Kimi K2 on B200?",
    ]
    while time.time() < deadline:
        if kind == "ingest":
            code, out, err = _invoke(["ingest", str(SHIPPED), team])
        else:
            code, out, err = _invoke(
                ["ask", random.choice(queries), "--findings", team, "--gpu", "sm120", "--json"]
            )
        calls += 1
        bad = code != 0 or any(m in err for m in ERROR_MARKERS)
        if bad:
            errors += 1
            if len(samples) < 5:
                samples.append(f"{kind} exit {code}: {err.strip()[-300:]}")
    queue.put((kind, calls, errors, samples))


def _changer(deadline: float, team: Path) -> None:
    """Edit, add and delete team findings the way people do (each file written whole)."""
    random.seed(1)
    template = (SHIPPED / "glm5-nvfp4-sm120-deepgemm-ue8m0-nan.md").read_text()
    n = 0
    while time.time() < deadline:
        n += 1
        fid = f"team-case-{n % 5}"
        path = team / f"{fid}.md"
        if path.exists() and random.random() < 0.3:
            path.unlink()
        else:
            text = template.replace("glm5-nvfp4-sm120-deepgemm-ue8m0-nan", fid, 1)
            text += f"\nEdit {n}: the same crash came back on node {n}.\n"
            tmp = team / f".{fid}.tmp"
            tmp.write_text(text)
            os.replace(tmp, path)
        time.sleep(0.05)


@pytest.mark.slow
def test_ingest_and_ask_together_while_findings_change(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    db = tmp_path / "state" / "kb.db"
    _setenv(db)
    code, _, err = _invoke(["ingest", str(SHIPPED), str(team)])
    assert code == 0, err
    deadline = time.time() + SOAK_SECONDS
    queue = ctx.Queue()
    workers = [
        ctx.Process(target=_loop_worker, args=(kind, deadline, queue, str(db), str(team)))
        for kind in ["ingest"] * 2 + ["ask"] * 4
    ]
    changer = ctx.Process(target=_changer, args=(deadline, team))
    for p in [*workers, changer]:
        p.start()
    results = [queue.get(timeout=SOAK_SECONDS + 300) for _ in workers]
    for p in [*workers, changer]:
        p.join(timeout=60)
    calls = sum(r[1] for r in results)
    errors = sum(r[2] for r in results)
    samples = [s for r in results for s in r[3]]
    print(f"\nconcurrency: {calls} calls in {SOAK_SECONDS:g} s, {errors} errors")
    assert all(r[1] > 0 for r in results)
    assert errors == 0, samples
