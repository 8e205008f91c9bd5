#!/usr/bin/env python3
"""Evaluate `deploykb ask` on real public failure reports it was not tuned on.

The evaluation holds reports written by other people than the findings' sources, in parts: DEV and
TEST (eval/heldout/, split by finding) and FRESH to FRESH11 (eval/fresh*/, each collected after a fit
and scored once; all but the newest have joined the training data since). The ranking is fitted on
the parts already read (scripts/fit_ranking.py TRAIN_PARTS); a part of scripts/heldout.py
FRESH_PARTS that is not among them is the sealed part, read by this script only, and gives the
held-out figure. One run scores, on the same fresh index of the shipped findings:

  ask         the fitted ranking (error lines + BM25 + embeddings + components + context)
  bm25        FTS5 BM25 alone over the same findings, queried with the report's triaged lines
  bm25-report FTS5 BM25 alone, queried with the whole report (the stronger keyword baseline)

  embedding   MiniLM cosine alone

Columns: recall@1 / recall@3 (an expected finding first / in the top three), fix@1 (the top answer
proposes the report's confirmed fix: knob and value), knob@1 (the same knob, any value), conf-neg
(share of negatives answered confidently: want 0), conf-right (share of right top-1 answers marked
confident: want high). The baselines' confidence is a threshold on their own top score, set on the
training parts' negatives in the same run (the highest such negative's score).

    .venv/bin/python scripts/eval.py                      # every part's table
    .venv/bin/python scripts/eval.py --misses fresh6      # also list what ask gets wrong on a part
    .venv/bin/python scripts/eval.py --json > out.json    # every query with its signals
    .venv/bin/python scripts/eval.py --set paraphrase     # the old paraphrase set (regression)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

MODES = {
    "ask": ("lines", "bm25", "embedding"),
    "bm25": ("bm25",),
    "bm25-report": ("bm25-report",),
    "embedding": ("embedding",),
}


# --- queries ---------------------------------------------------------------------------------


def heldout_queries() -> list[dict]:
    """DEV and TEST (eval/heldout) and every part of scripts/heldout.py FRESH_PARTS (eval/fresh*; one
    not among the training parts was merged after the ranking was last fitted and is read only
    here)."""
    from scripts.heldout import FRESH_PARTS, load_reports, split

    reports = load_reports()
    parts = split(reports)
    for name, folder in FRESH_PARTS.items():
        fresh = load_reports(folder)  # none when the folder is not there
        parts.update({r["id"]: name for r in fresh})
        reports += fresh
    out = []
    for r in reports:
        ctx = r.get("context") or {}
        out.append(
            {
                "id": r["id"],
                "part": parts[r["id"]],
                "kind": r["kind"],
                "text": r.get("text") or "",
                "cmd": r.get("command"),
                "model": ctx.get("model"),
                "gpu": ctx.get("gpu"),
                "quant": ctx.get("quantization"),
                "framework": ctx.get("framework"),
                "expected": r.get("expect") or [],
                "fix": r.get("fix"),
                "url": r.get("url"),
            }
        )
    return out


def paraphrase_queries() -> list[dict]:
    from scripts.heldout import read_jsonl

    out = []
    for _, q in read_jsonl(ROOT / "eval" / "queries.jsonl"):
        text = (ROOT / q["log"]).read_text(errors="replace") if q.get("log") else q["text"]
        fix = {"add": q.get("expected_fix") or []} if q.get("expected_fix") else None
        out.append(
            {
                "id": q["id"],
                "part": "paraphrase",
                "kind": "positive" if q.get("expected") else "negative",
                "text": text,
                "cmd": q.get("cmd"),
                "model": q.get("model"),
                "arch": q.get("arch"),
                "gpu": q.get("gpu"),
                "quant": q.get("quant"),
                "framework": q.get("framework"),
                "expected": q.get("expected") or [],
                "fix": fix,
            }
        )
    return out


# --- fixes -----------------------------------------------------------------------------------


def fix_keys(fix: dict | None, framework: str | None) -> set[tuple[str, str | None]]:
    """Canonical (knob, value) pairs of a fix mapping, through the parser `ask` uses."""
    from agent.flags import parse_fix_item
    from kb.errors import DeployKBError

    keys: set[tuple[str, str | None]] = set()
    if not fix:
        return keys
    for item in [*fix.get("add", []), *fix.get("remove", []), *fix.get("env", [])]:
        try:
            changes = parse_fix_item(item, framework)
        except DeployKBError:
            continue
        for change in changes:
            value = (change.value or "").strip("'\"").lower() or None
            keys.add((change.name.lower(), value))
    for pin in fix.get("pins", []):
        keys.add(pin_key(pin))
    return keys


def pin_key(pin: str) -> tuple[str, str | None]:
    """('vllm', '0.6.2') for 'vllm==0.6.2', 'vllm:0.6.2' or 'vllm 0.6.2'; another operator stays
    ('vllm', '>=0.6.4'): it claims something else than one release."""
    pin = pin.strip()
    m = re.match(r"^([A-Za-z0-9_.\-\[\]]+)\s*(==|:|\s)\s*(\S+)$", pin)
    if m:
        return m[1].lower(), m[3].lower()
    m = re.match(r"^([A-Za-z0-9_.\-\[\]]+)\s*([<>!~=]=?.*)$", pin)
    if m:
        return m[1].lower(), m[2].replace(" ", "").lower() or None
    return pin.lower(), None


def proposal_keys(proposal) -> set[tuple[str, str | None]]:
    """(knob, value) of each change; a pin's '==' is dropped, as in ``fix_keys``."""
    out = set()
    for c in proposal.changes:
        value = (c.value or "").strip("'\"").lower() or None
        if c.kind == "pin" and value and value.startswith("=="):
            value = value[2:] or None
        out.add((c.name.lower(), value))
    return out


def fix_hit(
    want: set[tuple[str, str | None]], have: set[tuple[str, str | None]], *frameworks: str | None
) -> bool:
    """Whether the proposal makes one of the report's confirmed changes: the same knob with the
    same value, or, for a flag, a value the flag registry takes for the same one in one of
    ``frameworks`` (the report's, then the matched finding's, for a report whose framework is a
    wrapper such as Orpheus-TTS): ``--dtype half`` and ``dtype=torch.float16``, from the
    releases' ``_STR_DTYPE_TO_TORCH_DTYPE``."""
    from agent.registry import load_registry

    reg = load_registry()
    for knob, value in want:
        for other, other_value in have:
            if knob != other:
                continue
            if value == other_value:
                return True
            if (
                knob.startswith("--")
                and value
                and other_value
                and any(reg.same_value(knob, value, other_value, fw) for fw in frameworks if fw)
            ):
                return True
    return False


# --- running ---------------------------------------------------------------------------------


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


def query_context(q: dict):
    """The context a user would pass as options; a value the tool rejects is dropped, as the user
    would drop it after the error."""
    from agent.answer import build_context
    from kb.errors import DeployKBError

    opts = {k: q.get(k) for k in ("model", "arch", "quant", "gpu", "framework", "cmd")}
    dropped = []
    for _ in range(len(opts) + 1):
        warnings: list[str] = []
        try:
            return build_context(detect=False, warnings=warnings, **opts), dropped
        except DeployKBError as exc:
            message = str(exc)
            for key in ("cmd", "model", "gpu", "framework", "quant", "arch"):
                if opts.get(key) and (key in message or f"--{key}" in message):
                    break
            else:
                key = next(
                    k for k in ("cmd", "model", "gpu", "framework", "quant", "arch") if opts.get(k)
                )
            dropped.append(f"{key}: {message}")
            opts[key] = None
    raise SystemExit(f"{q['id']}: cannot build a context")


def run(
    queries: list[dict], db, *, detail: bool = False, modes: dict | None = None
) -> dict[str, list[dict]]:
    from agent.answer import answer
    from agent.search import Searcher

    searcher = Searcher(db)
    modes = MODES if modes is None else modes
    results: dict[str, list[dict]] = {mode: [] for mode in modes}
    for q in queries:
        full_ctx, dropped = query_context(q)
        want_fix = fix_keys(q.get("fix"), full_ctx.framework)
        lines = q["text"].splitlines(keepends=True) or [q["text"]]
        for mode, use in modes.items():
            ctx = full_ctx if mode == "ask" else type(full_ctx)(command=full_ctx.command)
            a = answer(lines, ctx, searcher, top=3, use=use)
            ids = [p.match.finding.id for p in a.proposals]
            expected = set(q["expected"])
            row = {
                "id": q["id"],
                "part": q["part"],
                "kind": q["kind"],
                "expected": sorted(expected),
                "got": ids,
                "top_score": a.proposals[0].match.score if a.proposals else 0.0,
                "confident": a.confident,
                "band": [a.track.low, a.track.high] if a.track else None,
                "hit1": bool(ids) and ids[0] in expected,
                "hit3": bool(expected & set(ids[:3])),
                "fix_hit1": None,
                "knob_hit1": None,
            }
            if want_fix and a.proposals and expected:
                have = proposal_keys(a.proposals[0])
                top_fw = a.proposals[0].match.finding.framework.name
                row["fix_hit1"] = fix_hit(want_fix, have, full_ctx.framework, top_fw)
                row["knob_hit1"] = bool({k for k, _ in want_fix} & {k for k, _ in have})
            if detail:
                row["verdict"] = a.verdict
                row["dropped_context"] = dropped
                row["context"] = {
                    "model": a.context.model,
                    "sm": a.context.sm,
                    "quantization": a.context.quantization,
                    "framework": a.context.framework,
                }
                row["matches"] = [
                    {
                        "id": p.match.finding.id,
                        "score": p.match.score,
                        "signals": dict(p.match.signals),
                    }
                    for p in a.proposals
                ]
            results[mode].append(row)
    return results


def _train_parts() -> tuple[str, ...]:
    from scripts.fit_ranking import TRAIN_PARTS

    return TRAIN_PARTS


def apply_baseline_confidence(results: dict[str, list[dict]]) -> dict[str, float]:
    """A baseline is 'confident' above the highest top score any negative of the ranking's
    training parts got (same run)."""
    train = _train_parts()
    thresholds = {}
    for mode in ("bm25", "bm25-report", "embedding"):
        dev_neg = [
            r["top_score"] for r in results[mode] if r["part"] in train and not r["expected"]
        ]
        t = max(dev_neg) if dev_neg else float("inf")
        thresholds[mode] = t
        for r in results[mode]:
            r["confident"] = bool(r["got"]) and r["top_score"] > t
    return thresholds


def summarise(rows: list[dict]) -> dict:
    pos = [r for r in rows if r["expected"]]
    neg = [r for r in rows if not r["expected"]]
    fix = [r for r in pos if r["fix_hit1"] is not None]
    right = [r for r in pos if r["hit1"]]

    def share(items, key) -> float | None:
        return sum(bool(r[key]) for r in items) / len(items) if items else None

    return {
        "positives": len(pos),
        "negatives": len(neg),
        "with_fix": len(fix),
        "recall@1": share(pos, "hit1"),
        "recall@3": share(pos, "hit3"),
        "fix@1": share(fix, "fix_hit1"),
        "knob@1": share(fix, "knob_hit1"),
        "conf-neg": share(neg, "confident"),
        "conf-right": share(right, "confident"),
    }


def track_table(rows: list[dict]) -> list[dict]:
    """Per probability band of data/ranking.json's track record: what it states (out-of-fold on
    the training parts) and what ``rows`` (ask's answers on one part) show: reports whose top
    answer fell in the band and how many of those were right (a negative's never is)."""
    from agent.rank import load_ranker

    out = []
    for low, high, right, reports in load_ranker().track_record:
        inside = [r for r in rows if r.get("band") == [low, high]]
        out.append(
            {
                "band": [low, high],
                "stated_right": right,
                "stated_reports": reports,
                "right": sum(1 for r in inside if r["hit1"]),
                "reports": len(inside),
            }
        )
    return out


def print_track(title: str, table: list[dict]) -> None:
    if not table:
        return
    print(f"{title}: how often a top answer in each probability band was right")
    print(f"{'band':<10}{'stated (training, out-of-fold)':>32}{'this part':>14}")
    for b in table:
        stated = f"{b['stated_right']}/{b['stated_reports']}"
        if b["stated_reports"]:
            stated += f" = {b['stated_right'] / b['stated_reports']:.2f}"
        seen = f"{b['right']}/{b['reports']}"
        if b["reports"]:
            seen += f" = {b['right'] / b['reports']:.2f}"
        print(f"{b['band'][0]:.1f}-{b['band'][1]:.1f}   {stated:>30}{seen:>14}")
    print()


def _fmt(x) -> str:
    return "    -" if x is None else f"{x:5.2f}"


def print_table(title: str, table: dict[str, dict]) -> None:
    s = table["ask"]
    print(
        f"{title}: {s['positives']} positives ({s['with_fix']} with a confirmed fix), "
        f"{s['negatives']} negatives"
    )
    cols = ("recall@1", "recall@3", "fix@1", "knob@1", "conf-neg", "conf-right")
    header = f"{'mode':<10}" + "".join(f"{c:>11}" for c in cols)
    print(header)
    print("-" * len(header))
    for mode, row in table.items():
        print(f"{mode:<10}" + "".join(f"{_fmt(row[c]):>11}" for c in cols))
    print()


def main() -> None:
    from scripts.heldout import PARTS

    ap = argparse.ArgumentParser(description="Evaluate deploykb ask on held-out real reports.")
    ap.add_argument("--set", choices=("heldout", "paraphrase"), default="heldout")
    ap.add_argument("--db", type=Path, help="use this index instead of building a fresh one")
    ap.add_argument(
        "--misses",
        choices=(*PARTS, "paraphrase"),
        help="list what ask gets wrong",
    )
    ap.add_argument("--json", action="store_true", help="every query with its signals and evidence")
    ap.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"which parts to run: {','.join(PARTS)} (default), or a subset",
    )
    args = ap.parse_args()

    queries = heldout_queries() if args.set == "heldout" else paraphrase_queries()
    wanted = set(args.parts.split(",")) | {"paraphrase"}
    queries = [q for q in queries if q["part"] in wanted]
    with tempfile.TemporaryDirectory() as tmp:
        if args.db:
            from kb.store import open_db

            db = open_db(args.db)
        else:
            db = build_index(Path(tmp) / "eval.db")
        results = run(queries, db, detail=args.json)

    parts = tuple(p for p in PARTS if p in wanted) if args.set == "heldout" else ("paraphrase",)
    thresholds = apply_baseline_confidence(results) if args.set == "heldout" else {}
    tables = {
        part: {
            mode: summarise([r for r in rows if r["part"] == part])
            for mode, rows in results.items()
        }
        for part in parts
    }
    tracks = {part: track_table([r for r in results["ask"] if r["part"] == part]) for part in parts}
    if args.json:
        print(
            json.dumps(
                {
                    "summary": tables,
                    "track_record": tracks,
                    "baseline_thresholds": thresholds,
                    "rows": results,
                },
                indent=1,
            )
        )
        return
    for part in parts:
        print_table(part.upper(), tables[part])
    if args.set == "heldout":
        train = _train_parts()
        sealed = [p for p in parts if p not in train]
        for part in sealed:
            print_track(part.upper() + " (held out)", tracks[part])
    if thresholds:
        print(
            "baseline confidence thresholds (highest training-part negative top score): "
            + ", ".join(f"{m} {t:.3f}" for m, t in thresholds.items())
        )
    if args.misses:
        print(f"\nask on {args.misses}:")
        for r in results["ask"]:
            if r["part"] != args.misses:
                continue
            if r["expected"] and not r["hit1"]:
                print(f"  miss  {r['id']:<28} want {r['expected']} got {r['got'][:3]}")
            if not r["expected"] and r["confident"]:
                print(f"  conf- {r['id']:<28} negative answered confidently: {r['got'][:1]}")


if __name__ == "__main__":
    main()
