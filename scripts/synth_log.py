#!/usr/bin/env python3
"""A large server log for benchmarks, made from the test fixtures' real log lines.

The log starts with the healthy SGLang start-up of
``tests/fixtures/logs/kimi_k2_thinking_sglang_healthy.log`` and the INFO lines of
``tests/fixtures/logs/vllm_091_worker_illegal_memory_access.log``; then the steady state of the
healthy log (its prefill, decode and request lines) repeats with advancing timestamps until the
size is reached, as in a server that ran for days; the crash of ``tests/fixtures/logs/glm5_nvfp4_sglang_tp8.log``
(eight ranks' garbled CUDA assertions, a traceback) is spliced in at every ``--crash-every`` MB and
at the end, so triage has real work in every part of the file. Nothing generated is checked in.

Usage:
    .venv/bin/python scripts/synth_log.py 1024 /tmp/server-1g.log        # size in MB
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "fixtures" / "logs"


def _healthy_lines() -> tuple[list[str], list[str]]:
    """(start-up lines, steady-state lines)."""
    kimi = (LOGS / "kimi_k2_thinking_sglang_healthy.log").read_text(encoding="utf-8").splitlines()
    vllm = (LOGS / "vllm_091_worker_illegal_memory_access.log").read_text(encoding="utf-8")
    info = [ln for ln in vllm.splitlines() if " INFO " in ln or ln.startswith("INFO ")]
    steady = [ln for ln in kimi if re.search(r"(?:Prefill|Decode) batch|\"(?:GET|POST) ", ln)]
    return [ln for ln in kimi if not ln.startswith("$ ")] + info, steady


def generate(size_mb: int, path: Path, crash_every_mb: int = 100) -> Path:
    startup, healthy = _healthy_lines()
    crash = (LOGS / "glm5_nvfp4_sglang_tp8.log").read_text(encoding="utf-8")
    if not crash.endswith("\n"):
        crash += "\n"
    target = size_mb << 20
    next_crash = crash_every_mb << 20
    written = 0
    second = 0
    with path.open("w", encoding="utf-8") as out:
        out.write("\n".join(startup) + "\n")
        while written < target:
            second += 1
            hh, mm, ss = (second // 3600) % 24, (second // 60) % 60, second % 60
            stamp = f"{hh:02d}:{mm:02d}:{ss:02d}"
            block = (
                "\n".join(re.sub(r"\d\d:\d\d:\d\d", stamp, ln, count=1) for ln in healthy) + "\n"
            )
            out.write(block)
            written += len(block.encode("utf-8"))
            if written >= next_crash:
                out.write(crash)
                written += len(crash.encode("utf-8"))
                next_crash += crash_every_mb << 20
        out.write(crash)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("size_mb", type=int)
    ap.add_argument("path", type=Path)
    ap.add_argument("--crash-every", type=int, default=100, metavar="MB")
    args = ap.parse_args()
    generate(args.size_mb, args.path, args.crash_every)


if __name__ == "__main__":
    main()
