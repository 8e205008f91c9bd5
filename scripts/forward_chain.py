#!/usr/bin/env python3
"""Replay the sealed-part protocol over the training parts: for each FRESH part in collection order,
fit the ranking on the parts collected before it and score it, then sum the parts.

This answers "would this change have helped at the time?" without a new sealed part: no part is
scored by a model that read it. It is not a substitute for a sealed part: the candidates and their
features are collected once, with ``data/line_stats.json`` as fitted on all training parts, so the
line statistics have seen every part.

``--precedents`` adds one feature, tried on 2026-12-02 and not adopted: how close the report is to
earlier labelled reports of each candidate finding (the finding's "precedents"), as BM25 over the
reports' words (``bm25``), over their triaged error lines only (``lines``), or as the cosine of
their embeddings (``embedding``). Each report is compared with the reports of the parts before its
own (training reports: with the other training reports), never with itself.

    .venv/bin/python scripts/forward_chain.py --cache /tmp/entries.json
    .venv/bin/python scripts/forward_chain.py --cache /tmp/entries.json --precedents embedding

``--cache`` is the file ``scripts/fit_ranking.py --cache`` writes (collected when missing).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

FIRST_SCORED = 2  # DEV and TEST were collected together: the first part scored is FRESH


def _report_words(queries: dict[str, dict], mode: str) -> dict[str, list[str]]:
    from agent import match as M
    from agent.logs import plain_text, triage

    out = {}
    for qid, q in queries.items():
        text = q["text"]
        if mode == "lines":
            tri = triage(text.splitlines(keepends=True))
            lines = [ln.text for ln in tri.lines if ln.cls] or [ln.text for ln in tri.lines]
            text = "\n".join(lines) or text
        out[qid] = M.words(plain_text(text) or text)
    return out


def _report_vectors(queries: dict[str, dict]) -> dict[str, object]:
    from agent.logs import plain_text
    from agent.search import QUERY_WORDS, _head_words
    from kb.embed import load_embedder

    ids = sorted(queries)
    texts = [
        _head_words(plain_text(queries[i]["text"]) or queries[i]["text"], QUERY_WORDS) for i in ids
    ]
    vectors = load_embedder().embed(texts)
    return dict(zip(ids, vectors, strict=True))


class Precedents:
    """Per report and finding: the closeness of the report to the finding's precedent reports."""

    def __init__(self, queries: dict[str, dict], mode: str) -> None:
        self.queries = queries
        self.mode = mode
        if mode == "embedding":
            self.vectors = _report_vectors(queries)
        else:
            self.query_words = _report_words(queries, "plain")
            # a report is searched with all its words; its precedents are indexed by them too, or
            # by their triaged lines only
            self.words = _report_words(queries, "lines") if mode == "lines" else self.query_words

    def feature(self, qid: str, pool: list[str]) -> dict[str, float]:
        from agent import match as M

        others = [p for p in pool if p != qid]
        if not others:
            return {}
        if self.mode == "embedding":
            q = self.vectors[qid]
            scores = {p: float(self.vectors[p] @ q) for p in others}
        else:
            scores = M.bm25_scores(set(self.query_words[qid]), {p: self.words[p] for p in others})
        best: dict[str, float] = defaultdict(float)
        for p, s in scores.items():
            for fid in self.queries[p]["expected"]:
                best[fid] = max(best[fid], s)
        if self.mode != "embedding":  # BM25 relative to the best precedent, as the other BM25s
            top = max(best.values(), default=0.0) or 1.0
            return {f: v / top for f, v in best.items()}
        return dict(best)


def _with_feature(entries: list[dict], values: dict[str, dict[str, float]]) -> list[dict]:
    return [
        {
            **e,
            "cands": [
                {**c, "x": [*c["x"], values[e["id"]].get(c["fid"], 0.0)]} for c in e["cands"]
            ],
        }
        for e in entries
    ]


def main() -> int:
    from agent.rank import FEATURES
    from scripts import fit_ranking as fr
    from scripts.eval import heldout_queries

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, help="the features scripts/fit_ranking.py --cache wrote")
    ap.add_argument("--db", type=Path, help="use this index instead of building a fresh one")
    ap.add_argument("--l2", type=float, default=1.0, help="the ranking's L2 (default 1.0)")
    ap.add_argument("--precedents", choices=("bm25", "lines", "embedding"))
    args = ap.parse_args()

    entries = fr._training_entries(args)
    queries = {q["id"]: q for q in heldout_queries() if q["part"] in fr.TRAIN_PARTS}
    part_of = {qid: q["part"] for qid, q in queries.items()}
    entries = fr._subset(entries, [FEATURES.index(n) for n in fr.SELECTED])
    precedents = Precedents(queries, args.precedents) if args.precedents else None
    order = fr.TRAIN_PARTS
    totals: dict[str, list[int]] = {}
    for k in range(FIRST_SCORED, len(order)):
        before = set(order[:k])
        train = [e for e in entries if part_of[e["id"]] in before]
        scored = [e for e in entries if part_of[e["id"]] == order[k]]
        variants = {"shipped features": (train, scored)}
        if precedents is not None:
            pool = [q for q in queries if part_of[q] in before and queries[q]["expected"]]
            values = {e["id"]: precedents.feature(e["id"], pool) for e in train + scored}
            variants[f"+ precedents ({args.precedents})"] = (
                _with_feature(train, values),
                _with_feature(scored, values),
            )
        line = [f"{order[k].upper():<7}"]
        for label, (tr, sc) in variants.items():
            w, b = fr._fit(tr, args.l2)
            ranked = [fr._ranked(e, w, b) for e in sc if e["positive"]]
            first = sum(any(ys[:1]) for ys in ranked)
            top3 = sum(any(ys[:3]) for ys in ranked)
            t = totals.setdefault(label, [0, 0, 0])
            t[0] += first
            t[1] += top3
            t[2] += len(ranked)
            line.append(f"{label}: {first}/{len(ranked)} first, {top3} in top 3")
        print("   ".join(line))
    for label, (h1, h3, n) in totals.items():
        print(
            f"{label:<28} recall@1 {h1}/{n} = {h1 / max(1, n):.3f}   recall@3 {h3 / max(1, n):.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
