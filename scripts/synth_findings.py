#!/usr/bin/env python3
"""Synthetic findings for benchmarks, generated from the shipped ones as templates.

Each synthetic finding is a shipped finding (chosen round-robin) told as another deployment: another
model name (one of ``MODELS`` under one of 50 made-up organisations, with a quantization suffix),
another GPU and SM from ``GPUS``, another GPU count and framework version, and every number in its
symptoms and body shifted by 0-2 (so error lines differ the way they do between two real runs). Its
id is ``bench-<n>-<template id>``. The same ``--seed`` gives the same files.

Nothing generated is checked in: the default output folder is under ``data/bench/`` (gitignored).

Usage:
    .venv/bin/python scripts/synth_findings.py 1000 data/bench/findings-1000
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GENERATOR_VERSION = "2"
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


def templates() -> list[str]:
    """The texts of the shipped findings, in file order."""
    from kb.resources import shipped_findings_dir

    paths = sorted(p for p in shipped_findings_dir().glob("*.md") if p.name != "README.md")
    return [p.read_text(encoding="utf-8") for p in paths]


def variant(text: str, rng: random.Random, n: int) -> tuple[str, str]:
    """``(id, Markdown)`` of another plausible deployment with the same story as ``text``."""
    from kb.parse import parse_text
    from kb.write import render_finding

    f = parse_text(text, "template.md").findings[0]
    gpu, sm = rng.choice(GPUS)
    quant = rng.choice(["FP8", "NVFP4", "AWQ", "BF16"])
    model = f"org{rng.randrange(50)}/{rng.choice(MODELS)}-{quant}"

    def jitter(s: str) -> str:
        return re.sub(r"\d+", lambda m: str(int(m.group(0)) + rng.randrange(3)), s)

    fid = f"bench-{n:06d}-{f.id}"[:120]
    g = replace(
        f,
        id=fid,
        title=f"{model} on {gpu}: {f.title.split(':', 1)[-1].strip()}"[:200],
        model=model,
        hardware=replace(f.hardware, gpu=gpu, sm=sm, count=rng.choice([1, 2, 4, 8])),
        framework=replace(f.framework, version=f"0.{rng.randrange(3, 30)}.{rng.randrange(10)}"),
        symptoms=tuple(replace(s, text=jitter(s.text)) for s in f.symptoms),
        date=None,
        related=(),
        body=jitter(f.body),
        path=None,
        line=None,
    )
    return fid, render_finding(g)


def generate(size: int, folder: Path, seed: int = 42) -> Path:
    """Write ``size`` synthetic findings into ``folder`` (replaced whole; written to a temporary
    sibling first, so an interrupted run leaves no half folder). Returns ``folder``."""
    rng = random.Random(seed)
    texts = templates()
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for n in range(size):
        fid, text = variant(texts[n % len(texts)], rng, n)
        # 1,000 files a folder, as a team's knowledge base sharded by year or team would be
        sub = tmp / f"{n // 1000:03d}"
        sub.mkdir(exist_ok=True)
        (sub / f"{fid}.md").write_text(text, encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("size", type=int, help="how many findings")
    ap.add_argument("folder", type=Path, help="output folder (replaced)")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    generate(args.size, args.folder, args.seed)
    print(f"{args.size} findings in {args.folder}", file=sys.stderr)


if __name__ == "__main__":
    main()
