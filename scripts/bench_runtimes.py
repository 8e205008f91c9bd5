#!/usr/bin/env python3
"""Embedding runtimes compared on the same texts, each in its own process (``scripts/bench.py
--runtimes`` runs it): load time, query latency (one 60-word query, one thread, as ``ask`` embeds)
and ingest throughput (documents and symptoms of synthetic findings, all cores, as ``ingest``
embeds). Prints one JSON object.

Usage (a child of bench.py): bench_runtimes.py RUNTIME FINDINGS_DIR COUNT REPEATS
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUERY = (
    "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed. "
    "RuntimeError: CUDA error: device-side assert triggered CUDA kernel errors might be "
    "asynchronously reported at some other API call, so the stacktrace below might be incorrect. "
    "DeepGemm is enabled but the scale_fmt of checkpoint is not ue8m0. This might cause accuracy "
    "degradation on Blackwell."
)


def texts_of(folder: Path, count: int) -> list[str]:
    from kb.document import document_text, symptom_texts
    from kb.ingest import finding_files
    from kb.parse import parse_file

    out: list[str] = []
    for path in finding_files([folder])[:count]:
        for f in parse_file(path).findings:
            out += [document_text(f), *symptom_texts(f)]
    return out


def make(runtime: str, threads: int):
    from kb import embed

    if runtime == "sentence-transformers":
        return embed.SentenceTransformerEmbedder(threads=threads)
    if runtime == "onnx":
        return embed.OnnxEmbedder(threads=threads)
    raise SystemExit(f"unknown runtime {runtime}")


def main() -> None:
    runtime, folder, count, repeats = (
        sys.argv[1],
        Path(sys.argv[2]),
        int(sys.argv[3]),
        int(sys.argv[4]),
    )
    cores = os.cpu_count() or 1
    texts = texts_of(folder, count)
    start = time.perf_counter()
    query_embedder = make(runtime, 1)
    load_s = time.perf_counter() - start
    query_ms = []
    for _ in range(30):
        t = time.perf_counter()
        query_embedder.embed([QUERY])
        query_ms.append(1000 * (time.perf_counter() - t))
    ingest_embedder = make(runtime, cores)
    rates, cpu_ms = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        ingest_embedder.embed(texts)
        rates.append(count / (time.perf_counter() - t))
        cpu_ms.append(1000 * (time.process_time() - c) / count)
    print(
        json.dumps(
            {
                "runtime": runtime,
                "findings": count,
                "texts": len(texts),
                "load_s": load_s,
                "query_ms": [statistics.median(query_ms), min(query_ms), max(query_ms)],
                "findings_per_s": [statistics.median(rates), min(rates), max(rates)],
                "cpu_ms_per_finding": [statistics.median(cpu_ms), min(cpu_ms), max(cpu_ms)],
                "load_average": os.getloadavg()[0],
                "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


if __name__ == "__main__":
    main()
