#!/usr/bin/env python3
"""Public evaluation of `deploykb ask` on eval/queries.jsonl.

For each retrieval mode it prints recall@1 and recall@3 (the expected finding is first / in the top
three), fix-hit@1 (the first answer proposes the expected fix), and how often the answer is marked
confident on the queries that have an answer and on the off-topic negatives.

Modes, in one run over the same index:
  hybrid      error-signature lines + BM25 + embeddings, fused, weighted by deployment context
  bm25        FTS5 BM25 alone
  embedding   cosine similarity of MiniLM embeddings alone

Usage:
    .venv/bin/python scripts/eval.py                 # table
    .venv/bin/python scripts/eval.py --misses        # also list the queries hybrid gets wrong
    .venv/bin/python scripts/eval.py --json          # machine-readable
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

MODES = {
    "hybrid": ("lines", "bm25", "embedding"),
    "bm25": ("bm25",),
    "embedding": ("embedding",),
}


def load_queries(path: Path) -> list[dict]:
    queries = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                queries.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}:{n}: invalid JSON ({exc.msg})") from None
    return queries


def query_lines(q: dict) -> list[str]:
    if q.get("log"):
        return (ROOT / q["log"]).read_text(errors="replace").splitlines(keepends=True)
    return q["text"].splitlines(keepends=True) or [q["text"]]


def fix_keys(items, framework: str | None) -> set[tuple[str, str | None]]:
    """Canonical (name, value) pairs of fix strings, through the same parser `ask` uses."""
    from agent.flags import parse_fix_item

    keys: set[tuple[str, str | None]] = set()
    for item in items:
        for change in parse_fix_item(item, framework):
            value = (change.value or "").strip("'\"").lower() or None
            keys.add((change.name.lower(), value))
    return keys


def proposal_keys(proposal) -> set[tuple[str, str | None]]:
    return {
        (c.name.lower(), (c.value or "").strip("'\"").lower() or None) for c in proposal.changes
    }


def build_index(db_path: Path):
    from kb.embed import load_embedder
    from kb.ingest import ingest
    from kb.resources import shipped_findings_dir
    from kb.store import open_db

    db = open_db(db_path)
    report = ingest(db, [shipped_findings_dir()], lambda: load_embedder("auto"))
    if report.errors:
        raise SystemExit("\n".join(str(e) for e in report.errors))
    return db


def run(queries: list[dict], db) -> dict:
    from agent.ask import answer, build_context
    from agent.search import Searcher

    searcher = Searcher(db)
    results: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for q in queries:
        warnings: list[str] = []
        full_ctx = build_context(
            model=q.get("model"),
            arch=q.get("arch"),
            quant=q.get("quant"),
            gpu=q.get("gpu"),
            framework=q.get("framework"),
            cmd=q.get("cmd"),
            detect=False,
            warnings=warnings,
        )
        for mode, use in MODES.items():
            ctx = full_ctx if mode == "hybrid" else type(full_ctx)(command=full_ctx.command)
            a = answer(query_lines(q), ctx, searcher, top=3, use=use)
            ids = [p.match.finding.id for p in a.proposals]
            expected = set(q.get("expected") or [])
            row = {
                "id": q["id"],
                "kind": q.get("kind"),
                "expected": sorted(expected),
                "got": ids,
                "confident": a.confident,
                "hit1": bool(ids) and ids[0] in expected,
                "hit3": bool(expected & set(ids[:3])),
                "fix_hit1": None,
            }
            if q.get("expected_fix") and a.proposals and expected:
                best = a.proposals[0]
                want = fix_keys(q["expected_fix"], best.match.finding.framework.name)
                row["fix_hit1"] = bool(want & proposal_keys(best))
            results[mode].append(row)
    return results


def summarise(rows: list[dict]) -> dict:
    pos = [r for r in rows if r["expected"]]
    neg = [r for r in rows if not r["expected"]]
    fix = [r for r in pos if r["fix_hit1"] is not None]
    return {
        "queries": len(pos),
        "negatives": len(neg),
        "recall@1": sum(r["hit1"] for r in pos) / max(1, len(pos)),
        "recall@3": sum(r["hit3"] for r in pos) / max(1, len(pos)),
        "fix-hit@1": sum(bool(r["fix_hit1"]) for r in fix) / max(1, len(fix)),
        "fix_queries": len(fix),
        "confident_on_positives": sum(r["confident"] for r in pos) / max(1, len(pos)),
        "confident_on_negatives": sum(r["confident"] for r in neg) / max(1, len(neg)),
        "confident_and_right": sum(r["confident"] and r["hit1"] for r in pos) / max(1, len(pos)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description="Evaluate deploykb ask on eval/queries.jsonl.")
    ap.add_argument("--queries", type=Path, default=ROOT / "eval" / "queries.jsonl")
    ap.add_argument("--db", type=Path, help="use this index instead of building a fresh one")
    ap.add_argument("--misses", action="store_true", help="list the queries hybrid gets wrong")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    queries = load_queries(args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        if args.db:
            from kb.store import open_db

            db = open_db(args.db)
        else:
            db = build_index(Path(tmp) / "eval.db")
        results = run(queries, db)

    table = {mode: summarise(rows) for mode, rows in results.items()}
    if args.json:
        print(json.dumps({"summary": table, "rows": results}, indent=2))
        return
    kinds = Counter(q.get("kind") for q in queries)
    print(f"{len(queries)} queries ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})")
    print()
    header = (
        f"{'mode':<10} {'recall@1':>9} {'recall@3':>9} {'fix-hit@1':>10} {'conf+':>7} {'conf-':>7}"
    )
    print(header)
    print("-" * len(header))
    for mode, s in table.items():
        print(
            f"{mode:<10} {s['recall@1']:>9.3f} {s['recall@3']:>9.3f} {s['fix-hit@1']:>10.3f} "
            f"{s['confident_on_positives']:>7.2f} {s['confident_on_negatives']:>7.2f}"
        )
    s = table["hybrid"]
    print()
    print(
        f"positives {s['queries']}, negatives {s['negatives']}, with an expected fix {s['fix_queries']}; "
        "conf+ / conf- = share marked confident on positives / on negatives (want high / 0)"
    )
    if args.misses:
        print("\nhybrid misses:")
        for r in results["hybrid"]:
            if r["expected"] and not r["hit1"]:
                print(f"  {r['id']:<6} {r['kind']:<22} want {r['expected']} got {r['got'][:3]}")
            if not r["expected"] and r["confident"]:
                print(f"  {r['id']:<6} {r['kind']:<22} negative marked confident: {r['got'][:1]}")


if __name__ == "__main__":
    main()
