#!/usr/bin/env python3
"""The performance table of issue 14, measured in one run with its baselines.

Every figure is the median of ``--runs`` fresh processes (or of the queries of one process, for
warm queries), with min and max. Rows:

* cold ingest: ``deploykb ingest`` of the 1k synthetic folder into an empty index (findings/s,
  peak RSS); baseline: sentence-transformers' own ``encode`` of the same texts (threads = cores,
  its default batching, which sorts by length), in the same run;
* first ask with no index: ``deploykb ask`` on the shipped findings with no index file;
* cold ask: a fresh ``deploykb ask - --json`` (the seed queries in turn) on the shipped findings and
  on the 1k/10k/100k folders; baselines: an ``llm similar``-style process (import
  sentence-transformers, embed the query, read every vector, rank) and ``grep -r`` over the folder;
* warm query: one process, one ``Searcher``, 100 queries from the seeds and eval/queries.jsonl;
* unchanged re-ingest: ``deploykb ingest`` again with nothing changed;
* triage / ask of a 1 GB server log (``scripts/synth_log.py``), wall time and peak RSS; baseline:
  ``grep -c -i -F error`` over the same file;
* ``deploykb ask --help``.

Synthetic findings come from ``scripts/synth_findings.py`` (templates: the shipped findings) into
data/bench/ (gitignored). The 1k index is embedded for real (it is the cold-ingest run). The 10k and
100k indexes are built by the same ``kb.ingest.ingest`` with ``PseudoEmbedder``: 384-d unit vectors
hashed from the words, under the real model's name, because embedding 50k-300k texts for real does
not fit a session on 2 cores; their query-time figures (matrix product and ranking over the same
number of rows) do not depend on the vectors' values, their answers do.

Usage:
    .venv/bin/python scripts/bench.py                      # everything (hours on 2 cores)
    .venv/bin/python scripts/bench.py --sizes 1000,10000   # the rows at these sizes only
    .venv/bin/python scripts/bench.py --runtimes           # the embedding runtimes compared
    .venv/bin/python scripts/bench.py --smoke              # seconds: every row at toy size
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
# the warm-query row runs in this process: one BLAS thread, as `deploykb` sets for itself
# (agent/cli.py) before numpy is imported; the measured processes get it from the CLI
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

SEED_QUERIES = [
    (
        [
            '{"choices":[{"message":{"reasoning_content":"!!!!!!!!!!!!!!!!!!!!!!!!"},'
            '"finish_reason":"stop","matched_stop":"NaN happened"}]}'
        ],
        ["--model", "nvidia/Qwen3.5-397B-A17B-NVFP4", "--gpu", "sm120"],
    ),
    (
        [
            "[2026-02-19 00:13:33 TP5] Scheduler hit an exception: Traceback (most recent call last):",
            "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed.",
            "DeepGemm is enabled but the scale_fmt of checkpoint is not ue8m0. "
            "This might cause accuracy degradation on Blackwell.",
        ],
        ["--model", "nvidia/GLM-5-NVFP4", "--gpu", "sm120"],
    ),
    (["what works for Kimi K2 Thinking NVFP4 on RTX PRO 6000?"], []),
]
GREP_NEEDLE = "probability tensor contains"


# --- measuring ------------------------------------------------------------------------------


@dataclass
class Figure:
    values: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.values.append(value)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def show(self, unit: str, digits: int = 2) -> str:
        if not self.values:
            return "n/a"
        if len(self.values) == 1:
            return f"{self.values[0]:.{digits}f} {unit} (1 run)"
        return (
            f"{self.median:.{digits}f} {unit} ({min(self.values):.{digits}f}-"
            f"{max(self.values):.{digits}f}, {len(self.values)} runs)"
        )


def deploykb_exe() -> str:
    exe = Path(sys.executable).parent / "deploykb"
    return str(exe) if exe.exists() else shutil.which("deploykb") or "deploykb"


def run_measured(args: list[str], env: dict[str, str], stdin_path: Path | None = None):
    """(seconds, peak RSS MB, CPU seconds) of one fresh process. Peak RSS is the process's own
    ``VmHWM``, polled: ``wait4``'s ``ru_maxrss`` would include the pages of this (large) process
    that the child had before its ``exec``."""
    stdin = stdin_path.open("rb") if stdin_path else subprocess.DEVNULL
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(args, env=env, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err)
        peak_kb = 0
        status_file = Path(f"/proc/{proc.pid}/status")
        while True:
            try:
                for line in status_file.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak_kb = max(peak_kb, int(line.split()[1]))
            except (OSError, ValueError):
                pass
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.02)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        message = err.read().decode(errors="replace")
    if stdin_path:
        stdin.close()
    if proc.returncode not in (0, 1):
        raise SystemExit(
            f"bench: {' '.join(args[:3])} failed ({proc.returncode}): {message[-500:]}"
        )
    return seconds, peak_kb / 1024, usage.ru_utime + usage.ru_stime


def base_env(db: Path, embedder: str) -> dict[str, str]:
    """The environment of a measured process: the caller's, without its own deploykb settings
    (a row names its index and folders itself)."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("DEPLOYKB_")},
        "DEPLOYKB_DB": str(db),
        "HF_HUB_OFFLINE": "1",
        "DEPLOYKB_EMBEDDER": embedder,
        "PYTHONPATH": str(ROOT),
    }


# --- data -----------------------------------------------------------------------------------


class PseudoEmbedder:
    """384-d unit vectors hashed from the words, reported under the real model's name: builds
    10k/100k indexes whose query-time cost equals the real one's (see the module docstring).
    ``HashEmbedder``'s vectors, with each word hashed once and a row summed by ``np.bincount``."""

    def __init__(self, name: str, dim: int = 384) -> None:
        import re

        self._words = re.compile(r"[a-z0-9_]+")
        self._slots: dict[str, tuple[int, float]] = {}
        self.name = name
        self.dim = dim

    def _slot(self, word: str) -> tuple[int, float]:
        import hashlib

        found = self._slots.get(word)
        if found is None:
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
            found = self._slots[word] = (h % self.dim, 1.0 if (h >> 16) & 1 else -1.0)
        return found

    def embed(self, texts):
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            slots = [self._slot(w) for w in self._words.findall((text or "").lower())]
            if slots:
                where, sign = zip(*slots, strict=True)
                out[row] = np.bincount(where, weights=sign, minlength=self.dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=out, where=norms > 0)


def synthetic_folder(size: int) -> Path:
    from synth_findings import GENERATOR_VERSION, generate

    folder = ROOT / "data" / "bench" / f"findings-{size}"
    stamp = folder / ".generator"
    if not (stamp.is_file() and stamp.read_text() == GENERATOR_VERSION):
        print(f"bench: generating {size} synthetic findings...", file=sys.stderr)
        generate(size, folder)
        stamp.write_text(GENERATOR_VERSION)
    return folder


def pseudo_index(size: int, folder: Path, embedder: str) -> Path:
    """An index of the shipped findings and ``folder`` with pseudo vectors, cached under
    data/bench/ while it is current: the schema, parser and model the code expects, the match
    keys of this code, and the files' fingerprint of the folder as it is (anything else would
    make the first cold ``ask`` rebuild it inline, with real vectors). Built into a temporary
    file and renamed, so an interrupted build leaves nothing that looks usable."""
    from agent.cli.index import expected_embedder_name, ready_index
    from agent.search import precompute, precomputed
    from kb.errors import KBIndexError
    from kb.ingest import files_fingerprint, ingest
    from kb.paths import findings_dirs
    from kb.resources import shipped_findings_dir
    from kb.store import check_index, get_meta, open_db

    path = ROOT / "data" / "bench" / f"index-{size}.db"
    name = expected_embedder_name(embedder)
    if path.is_file():
        db = open_db(path)
        try:
            check_index(db, name)
            fingerprint = files_fingerprint(findings_dirs([folder]))
            if get_meta(db, "findings_fingerprint") == fingerprint and precomputed(db):
                return path
        except KBIndexError:
            pass
        finally:
            db.close()
    print(f"bench: indexing {size} findings with pseudo vectors...", file=sys.stderr)
    start = time.perf_counter()
    building = path.with_name(path.name + ".building")
    for leftover in (building, Path(f"{building}-wal"), Path(f"{building}-shm")):
        leftover.unlink(missing_ok=True)
    db = open_db(building)
    ingest(db, [shipped_findings_dir(), folder], lambda: PseudoEmbedder(name), embedder_name=name)
    precompute(db)
    db.close()
    ready_index(building, [folder], embedder).close()  # records the files' fingerprint
    for stale in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        stale.unlink(missing_ok=True)
    os.replace(building, path)
    print(f"bench: indexed in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return path


# --- rows -----------------------------------------------------------------------------------


def indexed_count(folder: Path) -> int:
    """Finding files an ingest of ``folder`` indexes: the shipped ones and the folder's."""
    from kb.ingest import finding_files
    from kb.resources import shipped_findings_dir

    return len(finding_files([shipped_findings_dir(), folder]))


def cold_ingest(folder: Path, runs: int, embedder: str, tmp: Path, keep: Path) -> dict:
    """Fresh ingests of the shipped findings and ``folder``; the first run's index is kept."""
    rate, rss, cpu = Figure(), Figure(), Figure()
    count = indexed_count(folder)
    for i in range(runs):
        db = tmp / f"ingest-{i}.db"
        seconds, mb, cs = run_measured(
            [deploykb_exe(), "ingest", "--findings", str(folder)], base_env(db, embedder)
        )
        rate.add(count / seconds)
        rss.add(mb)
        cpu.add(cs / count * 1000)
        if i == 0:
            shutil.copy(db, keep)
    return {"findings": count, "rate": rate, "rss": rss, "cpu_ms": cpu, "db": keep}


def st_encode(folder: Path, runs: int) -> tuple[Figure, Figure]:
    """sentence-transformers' own encode of the texts ingest embeds, threads = cores: findings/s
    of the encode call alone (not its process start or model load), and its CPU-ms a finding."""
    rate, cpu = Figure(), Figure()
    code = f"""
import os, sys, time
sys.path.insert(0, {str(ROOT)!r})
from kb.document import document_text, symptom_texts
from kb.ingest import finding_files
from kb.parse import parse_file
from kb.resources import shipped_findings_dir
texts = []
files = finding_files([shipped_findings_dir(), __import__('pathlib').Path({str(folder)!r})])
for p in files:
    for f in parse_file(p).findings:
        texts += [document_text(f), *symptom_texts(f)]
import torch
torch.set_num_threads(os.cpu_count())
from sentence_transformers import SentenceTransformer
from kb.embed import bundled_model_path
m = SentenceTransformer(str(bundled_model_path()), device="cpu")
t, c = time.perf_counter(), time.process_time()
m.encode(texts, normalize_embeddings=True)
print(len(files) / (time.perf_counter() - t), 1000 * (time.process_time() - c) / len(files))
"""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout
        rate.add(float(out.split()[-2]))
        cpu.add(float(out.split()[-1]))
    return rate, cpu


def first_ask(runs: int, embedder: str, tmp: Path) -> tuple[Figure, Figure]:
    wall, cpu = Figure(), Figure()
    for i in range(runs):
        env = base_env(tmp / f"first-{i}.db", embedder)
        seconds, _, cs = run_measured([deploykb_exe(), "ask", "NaN happened", "--json"], env)
        wall.add(seconds)
        cpu.add(cs)
    return wall, cpu


def both(figures: tuple[Figure, Figure], unit: str = "s", digits: int = 2) -> str:
    wall, cpu = figures
    return f"{wall.show(unit, digits)}; CPU {cpu.show(unit, digits)}"


def cold_ask(db: Path, folder: Path | None, runs: int, embedder: str) -> tuple[Figure, Figure]:
    """(wall seconds, CPU seconds) of fresh ``deploykb ask`` processes, the seed queries in turn."""
    wall, cpu = Figure(), Figure()
    env = base_env(db, embedder)
    if folder is not None:
        env["DEPLOYKB_FINDINGS"] = str(folder)
    for i in range(runs + 1):
        lines, opts = SEED_QUERIES[i % len(SEED_QUERIES)]
        seconds, _, cs = run_measured(
            [deploykb_exe(), "ask", "\n".join(lines), "--json", *opts], env
        )
        if i:  # the first run may record the files' fingerprint
            wall.add(seconds)
            cpu.add(cs)
    return wall, cpu


def llm_similar(db: Path, runs: int) -> Figure:
    """An ``llm similar``-style process: import sentence-transformers, embed, read all vectors."""
    code = f"""
import sqlite3, sys, numpy as np
from sentence_transformers import SentenceTransformer
sys.path.insert(0, {str(ROOT)!r})
from kb.embed import bundled_model_path
m = SentenceTransformer(str(bundled_model_path()), device="cpu")
q = m.encode([sys.argv[1]], normalize_embeddings=True)[0]
rows = sqlite3.connect({str(db)!r}).execute(
    "SELECT finding_id, vector FROM embeddings WHERE part = 'doc'").fetchall()
mat = np.vstack([np.frombuffer(v, dtype=np.float32) for _, v in rows])
print([rows[i][0] for i in np.argsort(-(mat @ q))[:3]])
"""
    fig = Figure()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", code, SEED_QUERIES[1][0][1]],
            env=env,
            capture_output=True,
            check=True,
        )
        fig.add(time.perf_counter() - start)
    return fig


def grep_r(folder: Path, runs: int) -> Figure:
    fig = Figure()
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            ["grep", "-r", "-l", "-i", "-F", GREP_NEEDLE, str(folder)], capture_output=True
        )
        fig.add(time.perf_counter() - start)
    return fig


def warm(db: Path, queries: int, embedder: str) -> tuple[Figure, Figure]:
    """(wall ms, CPU ms) of each query in one process, after one warm-up query (the model and
    the vectors loaded); the process's CPU time, all threads, per query."""
    from agent.answer import answer, build_context
    from agent.search import Searcher
    from kb.embed import load_embedder
    from kb.store import open_db

    pool = list(SEED_QUERIES)
    eval_file = ROOT / "eval" / "queries.jsonl"
    if eval_file.exists():
        for line in eval_file.read_text().splitlines():
            q = json.loads(line)
            if q.get("text"):
                pool.append((q["text"].splitlines(), ["--gpu", q["gpu"]] if q.get("gpu") else []))
    database = open_db(db)
    searcher = Searcher(database, lambda: load_embedder(embedder))
    answer(["warm-up query: NaN"], build_context(detect=False, warnings=[]), searcher)
    wall, cpu = Figure(), Figure()
    for i in range(queries):
        lines, opts = pool[i % len(pool)]
        gpu = opts[opts.index("--gpu") + 1] if "--gpu" in opts else None
        ctx = build_context(gpu=gpu, detect=False, warnings=[])
        start, start_cpu = time.perf_counter(), time.process_time()
        answer(lines, ctx, searcher)
        cpu.add(1000 * (time.process_time() - start_cpu))
        wall.add(1000 * (time.perf_counter() - start))
    database.close()
    return wall, cpu


def reingest(db: Path, folder: Path, runs: int, embedder: str) -> tuple[Figure, Figure]:
    wall, cpu = Figure(), Figure()
    for _ in range(runs):
        seconds, _, cs = run_measured(
            [deploykb_exe(), "ingest", "--findings", str(folder)], base_env(db, embedder)
        )
        wall.add(seconds)
        cpu.add(cs)
    return wall, cpu


def log_rows(log: Path, db: Path, runs: int, embedder: str) -> dict:
    triage_s, triage_mb, ask_s, ask_mb, grep_s = Figure(), Figure(), Figure(), Figure(), Figure()
    triage_cpu, ask_cpu = Figure(), Figure()
    env = base_env(db, embedder)
    for _ in range(runs):
        s, mb, cs = run_measured([deploykb_exe(), "triage", "--log", str(log)], env)
        triage_s.add(s)
        triage_mb.add(mb)
        triage_cpu.add(cs)
        s, mb, cs = run_measured([deploykb_exe(), "ask", "-", "--json"], env, stdin_path=log)
        ask_s.add(s)
        ask_mb.add(mb)
        ask_cpu.add(cs)
        start = time.perf_counter()
        subprocess.run(["grep", "-c", "-i", "-F", "error", str(log)], capture_output=True)
        grep_s.add(time.perf_counter() - start)
    return {"triage_s": triage_s, "triage_mb": triage_mb, "ask_s": ask_s, "ask_mb": ask_mb,
            "grep_s": grep_s, "triage_cpu": triage_cpu, "ask_cpu": ask_cpu}  # fmt: skip


def help_row(runs: int) -> tuple[Figure, Figure]:
    wall, cpu = Figure(), Figure()
    for _ in range(runs):
        seconds, _, cs = run_measured([deploykb_exe(), "ask", "--help"], dict(os.environ))
        wall.add(seconds)
        cpu.add(cs)
    return wall, cpu


# --- the embedding runtimes --------------------------------------------------------------------


def runtimes(folder: Path, count: int, repeats: int) -> list[dict]:
    out = []
    for name in ("onnx", "sentence-transformers"):
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "bench_runtimes.py"), name, str(folder),
             str(count), str(repeats)],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


# --- main -----------------------------------------------------------------------------------


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{os.cpu_count()} cores ({cpu}){mem}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, load average at start {os.getloadavg()[0]:.1f}"
    )


def software() -> str:
    import sqlite3
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("onnxruntime", "torch", "sentence-transformers", "numpy"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            pass
    return ", ".join([*found, f"SQLite {sqlite3.sqlite_version}"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--runs", type=int, default=5, help="fresh processes per figure")
    ap.add_argument("--ingest-runs", type=int, default=3)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--log-mb", type=int, default=1024)
    ap.add_argument("--runtimes", action="store_true", help="only compare the embedding runtimes")
    ap.add_argument("--smoke", action="store_true", help="toy sizes, hash embedder, one run")
    ap.add_argument(
        "--reuse-ingest",
        action="store_true",
        help="skip the cold-ingest row and reuse the 1k index a previous run kept",
    )
    args = ap.parse_args()

    if args.runtimes:
        for r in runtimes(synthetic_folder(1000), 60, 3):
            print(json.dumps(r))
        return

    embedder = "auto"
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.smoke:
        embedder, sizes, args.runs, args.ingest_runs = "hash", [30], 1, 1
        args.queries, args.log_mb = 10, 2
    print(f"machine: {machine()}")
    print(f"software: {software()}")
    # the measured processes import deploykb from its bytecode, as an installed package does:
    # with PYTHONDONTWRITEBYTECODE set and no __pycache__, each would compile kb/ and agent/ again
    import compileall

    for package in ("kb", "agent"):
        compileall.compile_dir(ROOT / package, quiet=2)
    rows: list[tuple[str, str, str, str]] = []  # (row, measured, baseline, target)
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        ingest_size = sizes[0]
        if args.smoke:
            from synth_findings import generate

            folders = {ingest_size: generate(ingest_size, tmp / f"findings-{ingest_size}")}
        else:
            folders = {size: synthetic_folder(size) for size in sizes}
        # cold ingest, with sentence-transformers' encode of the same texts as its baseline
        keep = (tmp if args.smoke else ROOT / "data" / "bench") / f"index-{ingest_size}-real.db"
        if args.reuse_ingest and keep.is_file():  # the query rows again, on the kept 1k index
            ci = {"findings": indexed_count(folders[ingest_size]), "rate": Figure(), "rss": Figure(),
                  "cpu_ms": Figure(), "db": keep}  # fmt: skip
            st = None
        else:
            ci = cold_ingest(folders[ingest_size], args.ingest_runs, embedder, tmp, keep)
            st = None if args.smoke else st_encode(folders[ingest_size], args.ingest_runs)
        ratio = (
            f"; {ci['rate'].median / st[0].median:.2f}x (CPU per finding: "
            f"{st[1].median / ci['cpu_ms'].median:.2f}x)"
            if st
            else ""
        )
        rows.append((
            f"cold ingest, {ci['findings']} findings",
            f"{ci['rate'].show('findings/s')}, {ci['cpu_ms'].show('CPU-ms/finding', 0)}, "
            f"RSS {ci['rss'].show('MB', 0)}",
            f"sentence-transformers encode: {st[0].show('findings/s')}, "
            f"{st[1].show('CPU-ms/finding', 0)}{ratio}"
            if st
            else "n/a",
            ">= 10 findings/s, >= 1.5x sentence-transformers, RSS <= 400 MB",
        ))  # fmt: skip
        rows.append((
            "first ask with no index (shipped findings)",
            both(first_ask(args.runs, embedder, tmp)),
            "", "<= 5 s (or built at install: scripts/setup.sh)",
        ))  # fmt: skip
        shipped_db = tmp / "shipped.db"
        cold_ask(shipped_db, None, 0, embedder)  # builds it
        rows.append((
            "cold ask, shipped findings",
            both(cold_ask(shipped_db, None, args.runs, embedder)),
            "" if args.smoke else f"llm similar-style: {llm_similar(shipped_db, args.runs).show('s')}",
            "<= 1.0 s",
        ))  # fmt: skip
        dbs: dict[int, Path] = {ingest_size: ci["db"]}
        for size in sizes[1:]:
            dbs[size] = pseudo_index(size, folders[size], embedder)
        targets = {1000: "", 10000: "<= 1.5 s", 100000: "<= 3 s"}
        for size in sizes:
            baseline = f"grep -r: {grep_r(folders[size], args.runs).show('s', 3)}"
            if not args.smoke:
                baseline += f"; llm similar-style: {llm_similar(dbs[size], args.runs).show('s')}"
            rows.append((
                f"cold ask, {size} findings",
                both(cold_ask(dbs[size], folders[size], args.runs, embedder)),
                baseline, targets.get(size, ""),
            ))  # fmt: skip
        warm_targets = {10000: "<= 50 ms", 100000: "<= 150 ms"}
        for size in sizes:
            rows.append((
                f"warm query, {size} findings",
                both(warm(dbs[size], args.queries, embedder), "ms", 1), "",
                warm_targets.get(size, ""),
            ))  # fmt: skip
        reingest_targets = {1000: "<= 0.5 s", 10000: "<= 3 s"}
        for size in sizes:
            if size > 10000:
                continue
            rows.append((
                f"unchanged re-ingest, {size} findings",
                both(reingest(dbs[size], folders[size], args.runs, embedder)),
                "", reingest_targets.get(size, ""),
            ))  # fmt: skip
        from synth_log import generate as make_log

        log = make_log(args.log_mb, tmp / "server.log")
        lr = log_rows(log, shipped_db, max(1, min(args.runs, 3)), embedder)
        size = f"{args.log_mb} MB" if args.log_mb < 1024 else f"{args.log_mb // 1024} GB"
        rows.append((
            f"triage of a {size} server log",
            f"{lr['triage_s'].show('s')}; CPU {lr['triage_cpu'].show('s')}; "
            f"RSS {lr['triage_mb'].show('MB', 0)}",
            f"grep -c -i -F error: {lr['grep_s'].show('s')}", "<= 20 s, <= 300 MB",
        ))  # fmt: skip
        rows.append((
            f"ask - of a {size} server log",
            f"{lr['ask_s'].show('s')}; CPU {lr['ask_cpu'].show('s')}; "
            f"RSS {lr['ask_mb'].show('MB', 0)}",
            "", "<= 25 s, <= 300 MB",
        ))  # fmt: skip
        rows.append(("deploykb ask --help", both(help_row(args.runs)), "", "<= 0.25 s"))
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    print()
    print("| row | measured: median (min-max) | baseline, same run | target |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
