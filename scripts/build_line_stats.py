#!/usr/bin/env python3
"""Build data/line_stats.json: how often each word of a salient log line occurs across real logs.

Corpus, one document each: every shipped finding (its recorded symptom lines), every real log kept in
the repository (eval/logs/, tests/fixtures/logs/), and every report of the ranking's training parts
(scripts/fit_ranking.py TRAIN_PARTS: DEV, TEST and FRESH to FRESH11, triaged like `ask` triages
its input). A sealed part is never read.

    .venv/bin/python scripts/build_line_stats.py            # write data/line_stats.json
    .venv/bin/python scripts/build_line_stats.py --check    # exit 1 if the file is out of date
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

OUT = ROOT / "data" / "line_stats.json"


def _line_tokens(texts):
    from agent import match as M
    from agent.logs import signature

    return [M.tokens(signature(t)) for t in texts]


def corpus() -> tuple[list[tuple[str, list[frozenset[str]]]], dict]:
    """(failure key, token sets of its lines) for every document. Documents about the same failure
    (a finding, the logs the public evaluation maps to it, dev reports that expect it) share a key,
    so that a word counts once per failure, not once per copy of one log."""
    from agent.logs import triage
    from kb.parse import parse_file
    from scripts.heldout import load_reports, part

    docs: list[tuple[str, list[frozenset[str]]]] = []
    n_findings = 0
    log_failure: dict[str, str] = {}
    queries = ROOT / "eval" / "queries.jsonl"
    if queries.exists():
        for line in queries.read_text().splitlines():
            q = json.loads(line) if line.strip() else {}
            if q.get("log") and q.get("expected"):
                log_failure[Path(q["log"]).name] = q["expected"][0]
    for path in sorted((ROOT / "findings").glob("*.md")):
        if path.name == "README.md":
            continue
        for f in parse_file(path).findings:
            docs.append((f.id, _line_tokens([s.text for s in f.symptoms])))
            n_findings += 1
    logs = sorted((ROOT / "eval" / "logs").glob("*.log")) + sorted(
        (ROOT / "tests" / "fixtures" / "logs").glob("*.log")
    )
    for path in logs:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        key = log_failure.get(path.name, "log:" + path.name)
        docs.append((key, _line_tokens([ln.text for ln in triage(lines).lines])))
    from scripts.fit_ranking import TRAIN_PARTS
    from scripts.heldout import FRESH_PARTS

    dev = [
        r
        for name in TRAIN_PARTS
        for r in (
            load_reports(FRESH_PARTS[name]) if name in FRESH_PARTS else part(load_reports(), name)
        )
    ]
    for r in dev:
        text = (r.get("text") or "") + "\n"
        key = (r.get("expect") or ["report:" + r["id"]])[0]
        docs.append(
            (key, _line_tokens([ln.text for ln in triage(text.splitlines(keepends=True)).lines]))
        )
    info = {"findings": n_findings, "logs": len(logs), "training_reports": len(dev)}
    return docs, info


def build() -> dict:
    from agent.informative import build_stats

    docs, info = corpus()
    stats = build_stats(docs)
    return {
        "_doc": (
            "For each word of salient log lines (agent.match.tokens of the masked signature): in how "
            "many distinct failures it occurs, over a corpus of real logs, findings and the reports of "
            "the ranking's training parts (DEV, TEST, FRESH to FRESH11) (documents about one failure count once); read by agent/informative.py. "
            "Words seen in one failure only are left out; n_docs counts failures."
        ),
        "_source": {
            "command": "python scripts/build_line_stats.py",
            "corpus": info,
            "built": dt.date.today().isoformat(),
        },
        **stats,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    data = build()
    if args.check:
        old = json.loads(OUT.read_text()) if OUT.exists() else {}
        same = old.get("df") == data["df"] and old.get("n_docs") == data["n_docs"]
        print(
            "data/line_stats.json is up to date" if same else "data/line_stats.json is out of date"
        )
        return 0 if same else 1
    OUT.write_text(json.dumps(data, indent=0, sort_keys=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {data['n_docs']} documents, {len(data['df'])} words")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
