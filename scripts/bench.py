#!/usr/bin/env python3
"""Latency benchmark for `deploykb ask`.

Two figures, as the ask issue defines them:

* cold: `deploykb ask` in a fresh process on the shipped knowledge base (index already built),
  wall-clock p50/p90 over repeated runs of the three seed queries;
* warm: p50/p90 per query inside one process on an index of 10,000 findings (generated from the
  shipped ones by varying model, GPU, framework version and error numbers, then ingested and embedded
  for real), after a first query has loaded the index into memory.

Usage:
    .venv/bin/python scripts/bench.py            # both
    .venv/bin/python scripts/bench.py --cold     # only the fresh-process figure
    .venv/bin/python scripts/bench.py --warm --size 10000

The 10k index is cached under data/bench/ (gitignored); building it embeds ~40k texts once
(about 15 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# the same BLAS setting as the deploykb command (agent/cli.py), before numpy is imported
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

GENERATOR_VERSION = "1"
GPUS = [
    ("NVIDIA B200", "sm100"),
    ("NVIDIA H100", "sm90"),
    ("NVIDIA RTX PRO 6000 Blackwell", "sm120"),
    ("NVIDIA GB10", "sm121"),
    ("NVIDIA H20", "sm90"),
    ("NVIDIA B300", "sm103"),
    ("NVIDIA RTX 5090", "sm120"),
    ("NVIDIA A100", "sm80"),
    ("NVIDIA L40S", "sm89"),
]
MODELS = [
    "Qwen3-235B-A22B",
    "DeepSeek-V3.1",
    "GLM-4.6",
    "Kimi-K2-Instruct",
    "MiniMax-M2",
    "Llama-4-Maverick",
    "gpt-oss-120b",
    "Mistral-Large-3",
    "Qwen3-Coder-480B",
    "Gemma-3-27B",
]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    k = max(0, min(len(values) - 1, round(q * (len(values) - 1))))
    return values[k]


def deploykb_exe() -> str:
    exe = Path(sys.executable).parent / "deploykb"
    return str(exe) if exe.exists() else shutil.which("deploykb") or "deploykb"


def cold(runs: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "kb.db"
        env = {**os.environ, "DEPLOYKB_DB": str(db), "HF_HUB_OFFLINE": "1"}
        subprocess.run([deploykb_exe(), "ingest"], env=env, check=True, capture_output=True)
        times: list[float] = []
        for i in range(runs):
            lines, opts = SEED_QUERIES[i % len(SEED_QUERIES)]
            start = time.perf_counter()
            proc = subprocess.run(
                [deploykb_exe(), "ask", "-", "--json", *opts],
                input="\n".join(lines),
                env=env,
                capture_output=True,
                text=True,
            )
            times.append(time.perf_counter() - start)
            if proc.returncode != 0:
                raise SystemExit(f"ask failed: {proc.stderr.strip()}")
    return {
        "runs": runs,
        "p50_s": statistics.median(times),
        "p90_s": pct(times, 0.9),
        "min_s": min(times),
        "max_s": max(times),
    }


def _variant(text: str, rng: random.Random, n: int) -> str:
    """A plausible other deployment: other model, GPU, version and numbers, same kind of story."""
    from dataclasses import replace

    from kb.parse import parse_text
    from kb.write import render_finding

    f = parse_text(text, "x.md").findings[0]
    gpu, sm = rng.choice(GPUS)
    model = (
        f"org{rng.randrange(50)}/{rng.choice(MODELS)}-{rng.choice(['FP8', 'NVFP4', 'AWQ', 'BF16'])}"
    )

    def jitter(s: str) -> str:
        return re.sub(r"\d+", lambda m: str(int(m.group(0)) + rng.randrange(3)), s)

    symptoms = tuple(replace(s, text=jitter(s.text)) for s in f.symptoms)
    g = replace(
        f,
        id=f"bench-{n:05d}-{f.id}"[:120],
        title=f"{model} on {gpu}: {f.title.split(':', 1)[-1].strip()}"[:200],
        model=model,
        hardware=replace(f.hardware, gpu=gpu, sm=sm, count=rng.choice([1, 2, 4, 8])),
        framework=replace(f.framework, version=f"0.{rng.randrange(3, 30)}.{rng.randrange(10)}"),
        symptoms=symptoms,
        date=None,
        related=(),
        body=jitter(f.body),
        path=None,
        line=None,
    )
    return render_finding(g)


def build_big_index(size: int) -> Path:
    from kb.embed import load_embedder
    from kb.ingest import ingest
    from kb.resources import shipped_findings_dir
    from kb.store import index_status, open_db

    base = ROOT / "data" / "bench"
    folder = base / f"findings-{size}-v{GENERATOR_VERSION}"
    db_path = base / f"index-{size}-v{GENERATOR_VERSION}.db"
    if not folder.is_dir():
        rng = random.Random(42)
        sources = sorted(p for p in shipped_findings_dir().glob("*.md") if p.name != "README.md")
        texts = [p.read_text() for p in sources]
        tmp = folder.with_suffix(".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for n in range(size - len(texts)):
            text = _variant(texts[n % len(texts)], rng, n)
            fid = re.search(r"^id: (.+)$", text, re.M).group(1).strip()
            (tmp / f"{fid}.md").write_text(text)
        tmp.rename(folder)
    db = open_db(db_path)
    if index_status(db)["count"] < size:
        print(
            f"bench: building the {size}-finding index (embeds every text once)...", file=sys.stderr
        )
        start = time.perf_counter()
        report = ingest(db, [shipped_findings_dir(), folder], lambda: load_embedder("auto"))
        print(
            f"bench: indexed {report.total} findings, embedded {report.embedded} texts in "
            f"{time.perf_counter() - start:.0f} s",
            file=sys.stderr,
        )
    return db_path


def warm(size: int, queries: int) -> dict:
    from agent.ask import answer, build_context
    from agent.search import Searcher
    from kb.store import index_status, open_db

    db = open_db(build_big_index(size))
    count = index_status(db)["count"]
    eval_file = ROOT / "eval" / "queries.jsonl"
    pool = [(lines, opts) for lines, opts in SEED_QUERIES]
    if eval_file.exists():
        for line in eval_file.read_text().splitlines():
            q = json.loads(line)
            if q.get("text"):
                pool.append((q["text"].splitlines(), ["--gpu", q["gpu"]] if q.get("gpu") else []))
    searcher = Searcher(db)
    start = time.perf_counter()
    answer(["warm-up query: NaN"], build_context(detect=False, warnings=[]), searcher)
    load_s = time.perf_counter() - start
    times = []
    for i in range(queries):
        lines, opts = pool[i % len(pool)]
        gpu = opts[opts.index("--gpu") + 1] if "--gpu" in opts else None
        ctx = build_context(gpu=gpu, detect=False, warnings=[])
        t = time.perf_counter()
        answer(lines, ctx, searcher)
        times.append(time.perf_counter() - t)
    return {
        "findings": count,
        "queries": queries,
        "first_query_load_s": load_s,
        "p50_ms": 1000 * statistics.median(times),
        "p90_ms": 1000 * pct(times, 0.9),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", action="store_true", help="only the fresh-process figure")
    ap.add_argument("--warm", action="store_true", help="only the warm 10k figure")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    both = not (args.cold or args.warm)
    if args.cold or both:
        r = cold(args.runs)
        print(
            f"cold  deploykb ask, fresh process, shipped KB: p50 {r['p50_s']:.3f} s  "
            f"p90 {r['p90_s']:.3f} s  (min {r['min_s']:.3f}, max {r['max_s']:.3f}, {r['runs']} runs)"
            f"   target p50 <= 1.0 s"
        )
    if args.warm or both:
        r = warm(args.size, args.queries)
        print(
            f"warm  {r['findings']} findings, one process: p50 {r['p50_ms']:.1f} ms  "
            f"p90 {r['p90_ms']:.1f} ms per query ({r['queries']} queries; first query loaded the "
            f"index in {r['first_query_load_s']:.2f} s)   target p50 <= 50 ms"
        )


if __name__ == "__main__":
    main()
