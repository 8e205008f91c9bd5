"""Hybrid retrieval over the index: the I/O edge around ``agent.match``.

A ``Searcher`` holds what a query needs from the index (findings, vectors, symptom signatures) after
the first query, so a long-lived process answers later queries without touching the disk again.
The embedder is loaded only when a query needs a vector.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent import match as M
from kb.records import ArchTraits, Finding, Match, QueryContext, Triage

POOL = 50  # candidates taken from each retriever before fusion
# The query embedding reads the most important salient lines only: a 256-token forward pass costs
# ~100 ms on one core, 60 words (~80 tokens) ~30 ms, and the first lines carry the error.
QUERY_WORDS = int(os.environ.get("DEPLOYKB_QUERY_WORDS", "60"))


def _head_words(text: str, n: int) -> str:
    words = text.split()
    return " ".join(words[:n]) if len(words) > n else text


@dataclass(frozen=True)
class Evidence:
    """Per-query absolute evidence about the best match, for the confidence decision."""

    best_line: float
    best_cosine: float
    best_context: float | None
    context_coverage: float = 0.0
    classes: float | None = None  # agreement of symptom classes, see match.class_agreement


class Searcher:
    def __init__(self, db, embedder_factory: Callable[[], object] | None = None) -> None:
        self.db = db
        self._embedder_factory = embedder_factory
        self._embedder = None
        self._findings: dict[str, Finding] | None = None
        self._doc: tuple[list[str], object] | None = None
        self._sym: tuple[list[str], object] | None = None
        self._sym_lines: dict[str, list[tuple[str, frozenset[str]]]] | None = None
        self._postings: dict[str, set[str]] = {}
        self._vocabulary = None
        self._traits: dict[str, ArchTraits] = {}

    # -- lazily loaded state -----------------------------------------------------------------

    @property
    def findings(self) -> dict[str, Finding]:
        if self._findings is None:
            from kb.store import load_findings

            self._findings = {f.id: f for f in load_findings(self.db)}
        return self._findings

    @property
    def embedder(self):
        if self._embedder is None:
            if self._embedder_factory is None:
                from kb.embed import load_embedder

                self._embedder = load_embedder("auto")
            else:
                self._embedder = self._embedder_factory()
        return self._embedder

    def _vectors(self):
        if self._doc is None:
            from kb.store import load_vectors

            self._doc = load_vectors(self.db, "doc")
            self._sym = load_vectors(self.db, "symptom")
        return self._doc, self._sym

    def _symptom_lines(self) -> dict[str, list[tuple[str, frozenset[str]]]]:
        if self._sym_lines is None:
            from agent.triage import signature

            self._sym_lines = {
                fid: [(s.text, M.tokens(signature(s.text))) for s in f.symptoms]
                for fid, f in self.findings.items()
            }
            postings: dict[str, set[str]] = {}
            for fid, lines in self._sym_lines.items():
                for _, toks in lines:
                    for tok in toks:
                        postings.setdefault(tok, set()).add(fid)
            self._postings = postings
        return self._sym_lines

    def _line_candidates(self, user_tokens: Sequence[frozenset[str]]) -> set[str]:
        """Findings with a symptom line sharing at least three words with one user line: the
        only ones ``line_overlap`` can score, found through an inverted index instead of a scan."""
        self._symptom_lines()
        found: set[str] = set()
        for toks in user_tokens:
            counts: dict[str, int] = {}
            for tok in toks:
                for fid in self._postings.get(tok, ()):
                    counts[fid] = counts.get(fid, 0) + 1
            found.update(fid for fid, n in counts.items() if n >= 3)
        return found

    def traits_of(self, finding: Finding) -> ArchTraits:
        key = finding.architecture or ""
        if key not in self._traits:
            from agent.context import traits_for_model_type

            self._traits[key] = traits_for_model_type(finding.architecture)
        return self._traits[key]

    # -- retrievers ------------------------------------------------------------------------

    def by_lines(self, triage: Triage) -> dict[str, M.LineHit]:
        user = [(ln.text, M.tokens(ln.signature)) for ln in triage.lines]
        hits: dict[str, M.LineHit] = {}
        if not user:
            return hits
        lines_of = self._symptom_lines()
        for fid in self._line_candidates([toks for _, toks in user]):
            hit = M.line_overlap(user, lines_of[fid])
            if hit is not None and hit.score >= 0.3:
                hits[fid] = hit
        return hits

    def by_bm25(self, text: str) -> list[str]:
        from kb.store import fts_search, fts_vocabulary

        if self._vocabulary is None:
            self._vocabulary = fts_vocabulary(self.db)
        return [fid for fid, _ in fts_search(self.db, text, limit=POOL, vocabulary=self._vocabulary)]

    def by_embedding(self, text: str) -> dict[str, float]:
        import numpy as np

        (doc_ids, doc_m), (sym_ids, sym_m) = self._vectors()
        if not doc_ids:
            return {}
        q = self.embedder.embed([text])[0]
        best: dict[str, float] = {}
        for ids, matrix in ((doc_ids, doc_m), (sym_ids, sym_m)):
            if not ids:
                continue
            sims = matrix @ q
            k = min(POOL * 2, len(ids))
            best_idx = np.argpartition(-sims, k - 1)[:k]
            for idx in best_idx[np.argsort(-sims[best_idx])]:
                fid = ids[idx]
                best[fid] = max(best.get(fid, -1.0), float(sims[idx]))
        return best

    # -- the query -------------------------------------------------------------------------

    def search(
        self,
        text: str,
        triage: Triage,
        ctx: QueryContext,
        *,
        top: int = 3,
        use: Sequence[str] = ("lines", "bm25", "embedding"),
        context_funcs: tuple[Callable, Callable, Callable] | None = None,
    ) -> tuple[list[Match], Evidence]:
        """Rank findings for a query. ``use`` selects retrievers (the evaluation compares them)."""
        errors = [ln for ln in triage.lines if ln.cls] or list(triage.lines)
        query_text = "\n".join(ln.text for ln in errors) or text
        user_classes = frozenset(ln.cls for ln in errors if ln.cls)
        triage = Triage(tuple(errors), triage.total_lines)
        lines = self.by_lines(triage) if "lines" in use else {}
        bm25 = self.by_bm25(query_text) if "bm25" in use else []
        cos = self.by_embedding(_head_words(query_text, QUERY_WORDS)) if "embedding" in use else {}

        rankings = [
            sorted(lines, key=lambda f: (-lines[f].score, f)),
            bm25,
            M.rank_order(cos)[:POOL],
        ]
        fused = M.rrf(rankings)
        if not fused:
            return [], Evidence(0.0, 0.0, None)

        if context_funcs is None:
            from agent.context import quantization_similarity, sm_similarity, trait_similarity

            context_funcs = (trait_similarity, sm_similarity, quantization_similarity)

        scored: list[tuple[float, str, M.ContextScore, float | None]] = []
        for fid, rel in fused.items():
            finding = self.findings.get(fid)
            if finding is None:
                continue
            cs = M.context_score(ctx, finding, self.traits_of(finding), *context_funcs)
            agree = M.class_agreement(user_classes, frozenset(s.cls for s in finding.symptoms))
            scored.append((M.combine(rel, cs.score, agree, cs.coverage), fid, cs, agree))
        scored.sort(key=lambda t: (-t[0], t[1]))
        if not scored:  # every candidate vanished from the index since it was loaded
            return [], Evidence(0.0, 0.0, None)

        matches = []
        for score, fid, cs, _agree in scored[:top]:
            reasons: list[str] = []
            hit = lines.get(fid)
            if hit is not None and hit.score >= M.LINE_SHARED:
                reasons.append(f"shares the error line: {hit.finding_line.strip()[:160]}")
            elif hit is not None:
                reasons.append(f"partly shares the error line: {hit.finding_line.strip()[:160]}")
            if fid in cos:
                reasons.append(f"symptom similarity {cos[fid]:.2f}")
            if fid in bm25[:10]:
                reasons.append(f"keyword rank {bm25.index(fid) + 1}")
            reasons.extend(cs.reasons)
            signals = (
                ("lines", hit.score if hit else 0.0),
                ("bm25_rank", float(bm25.index(fid) + 1) if fid in bm25 else 0.0),
                ("cosine", cos.get(fid, 0.0)),
                ("context", cs.score if cs.score is not None else -1.0),
            )
            matches.append(Match(self.findings[fid], round(score, 4), tuple(reasons), signals))

        _, top_fid, top_cs, top_agree = scored[0]
        evidence = Evidence(
            best_line=lines[top_fid].score if top_fid in lines else 0.0,
            best_cosine=cos.get(top_fid, 0.0),
            best_context=top_cs.score,
            context_coverage=top_cs.coverage,
            classes=top_agree,
        )
        return matches, evidence
