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

    best_line: float  # containment of the best shared line (0..1)
    best_cosine: float
    best_context: float | None = None
    context_coverage: float = 0.0
    classes: float | None = None  # agreement of symptom classes, see match.class_agreement
    probability: float = 0.0  # the ranker's probability for the top match
    line_informative: bool = False  # the shared line carries information of its own
    mode: str = "ask"  # "ask" (fitted ranking); "bm25", "bm25-report", "embedding" (baselines)


@dataclass(frozen=True)
class Candidate:
    """One finding considered for a query, with the evidence the ranker scores."""

    fid: str
    features: tuple[float, ...]  # in the order of agent.rank.FEATURES
    hit: M.LineHit | None
    line_info: float  # informativeness of the words the best line shares (0..1)
    bm25_rank: int | None
    bm25_score: float
    cosine: float
    components: tuple[str, ...]  # failure components shared with the query
    context: M.ContextScore
    classes: float | None
    report_score: float = 0.0  # BM25 of the whole report (the ``bm25-report`` baseline's score)


@dataclass(frozen=True)
class QueryEvidence:
    """What the retrievers saw of the query as a whole."""

    components: frozenset[str]
    classes: frozenset[str]


@dataclass(frozen=True)
class _Retrieved:
    """What the retrievers proposed for one query."""

    text: str  # the report as the whole-report searches read it
    triaged: bool  # triage found error lines
    classes: frozenset[str]  # symptom classes of those lines
    lines: dict  # finding id -> (best shared line, its informativeness)
    bm25: list[str]  # ids by BM25 over the triaged lines, best first
    bm25_score: dict[str, float]
    report: list[str]  # ids by BM25 over the whole report, best first
    report_score: dict[str, float]
    cosine: dict[str, float]
    components: frozenset[str]  # failure components the query names


@dataclass(frozen=True)
class _Scoring:
    """One query's retrievals with the statistics its candidates' features are relative to."""

    query: _Retrieved
    ctx: QueryContext
    context_funcs: tuple
    weights: dict[str, float]  # component idf
    mass: float  # idf mass of the query's components
    symptom_score: dict[str, float]
    symptom_best: float
    report_best: float
    question: bool
    # the reciprocal rank of each candidate by the whole report's BM25 among this query's
    # candidates (0 without a BM25 match), and each candidate's standardised hub value (kb.hubs)
    report_rank: dict[str, float]
    hub: dict[str, float]


def _reciprocal_ranks(scores: dict[str, float]) -> dict[str, float]:
    """``1 / rank`` of each id by its score, best first (ties share the better rank, then ids in
    order); 0 for a score of 0 (no match)."""
    out: dict[str, float] = {}
    rank, last = 0, None
    for i, (fid, score) in enumerate(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))):
        if score <= 0:
            break
        if score != last:
            rank, last = i + 1, score
        out[fid] = 1.0 / rank
    return out


def line_keys_version() -> str:
    """Changes whenever the code that derives what ``precompute`` stores changes (the signature
    masks, ``signature``, ``match.tokens``, the failure components and their vocabulary): stored
    keys of another version are redone."""
    import hashlib

    from agent import components as C
    from agent import logs as T
    from kb.resources import data_file

    h = hashlib.sha256()
    for rx, repl in T._MASKS:
        h.update(f"{rx.pattern}\0{repl}\0".encode())
    for fn in (T.signature, T._clean, T._split_prefix, M.tokens, C.of_finding, C.from_text,
               C.from_flags):  # fmt: skip
        _digest_code(h, fn.__code__)
    try:
        h.update(data_file("components.json").read_bytes())
    except OSError:
        pass
    return h.hexdigest()[:16]


def _digest_code(h, code) -> None:
    """Bytecode and constants, nested code objects included, without anything that differs
    between two processes running the same code (addresses in a code object's repr, the order of
    a frozenset of strings)."""
    import types

    h.update(code.co_code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _digest_code(h, const)
        elif isinstance(const, frozenset):
            h.update(repr(sorted(map(repr, const))).encode())
        else:
            h.update(repr(const).encode())


def line_keys(text: str) -> frozenset[str]:
    """The match keys of a line: the content words of its signature."""
    from agent.logs import signature

    return M.tokens(signature(text))


def precompute(db) -> int:
    """Bring ``line_keys``/``line_postings``/``finding_components`` in step with the findings:
    computed for the findings that are new or changed since the last run (all of them when the
    code that derives them changed). Returns how many symptom lines were keyed. Run after every
    ingest that changed something."""
    from agent.components import of_finding
    from kb.store import get_findings, get_meta, set_meta, write_transaction

    version = line_keys_version()
    with write_transaction(db):
        if get_meta(db, "line_keys") != version:
            db.execute("DELETE FROM line_keys")
            db.execute("DELETE FROM line_postings")
            db.execute("DELETE FROM finding_components")
        stale = _stale(db)
        keyed = 0
        for start in range(0, len(stale), 500):
            chunk = stale[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for table in ("line_keys", "line_postings", "finding_components"):
                db.execute(f"DELETE FROM {table} WHERE finding_id IN ({marks})", chunk)
            rows = db.execute(
                f"SELECT finding_id, idx, text FROM symptoms WHERE finding_id IN ({marks})", chunk
            ).fetchall()
            keys = [(fid, idx, text, line_keys(text)) for fid, idx, text in rows]
            db.conn.executemany(
                "INSERT INTO line_keys (finding_id, idx, text, keys) VALUES (?, ?, ?, ?)",
                [(fid, idx, text, " ".join(sorted(k))) for fid, idx, text, k in keys],
            )
            db.conn.executemany(
                "INSERT OR IGNORE INTO line_postings (key, finding_id) VALUES (?, ?)",
                [(key, fid) for fid, _, _, k in keys for key in k],
            )
            # one row per component, and a '' row so that a finding with none counts as done
            db.conn.executemany(
                "INSERT OR IGNORE INTO finding_components (finding_id, component) VALUES (?, ?)",
                [
                    (fid, comp)
                    for fid, finding in get_findings(db, chunk).items()
                    for comp in ("", *of_finding(finding))
                ],
            )
            keyed += len(rows)
        set_meta(db, line_keys=version)
    return keyed


def _stale(db) -> list[str]:
    """Findings whose keys or components are missing or out of step with their symptoms."""
    return [
        fid
        for (fid,) in db.execute(
            """SELECT DISTINCT s.finding_id FROM symptoms s LEFT JOIN line_keys k
            ON k.finding_id = s.finding_id AND k.idx = s.idx AND k.text = s.text
            WHERE k.finding_id IS NULL
            UNION SELECT DISTINCT k.finding_id FROM line_keys k LEFT JOIN symptoms s
            ON k.finding_id = s.finding_id AND k.idx = s.idx AND k.text = s.text
            WHERE s.finding_id IS NULL
            UNION SELECT f.id FROM findings f WHERE NOT EXISTS
            (SELECT 1 FROM finding_components c WHERE c.finding_id = f.id)"""
        ).fetchall()
    ]


def precomputed(db) -> bool:
    """``precompute`` would change nothing (``db`` may be a ``kb.store.PlainReader``)."""
    from kb.store import get_meta

    return get_meta(db, "line_keys") == line_keys_version() and not _stale(db)


class Searcher:
    """``findings`` are read when a query needs them (the candidates it scores); line keys,
    postings and failure components come from the tables ``precompute`` keeps, the vocabulary for
    the words of the query. An index without current keys (built by ``kb.ingest`` alone) is keyed
    in memory."""

    def __init__(self, db, embedder_factory: Callable[[], object] | None = None) -> None:
        self.db = db
        self._embedder_factory = embedder_factory
        self._embedder = None
        self._findings: dict[str, Finding] = {}
        self._all_loaded = False
        self._keyed: bool | None = None
        self._df: dict[str, int] = {}
        self._documents: int | None = None
        self._doc: tuple[list[str], object] | None = None
        self._sym: tuple[list[str], object] | None = None
        self._sym_lines: dict[str, list[tuple[str, frozenset[str]]]] | None = None
        self._postings: dict[str, set[str]] = {}
        self._traits: dict[str, ArchTraits] = {}
        self._last_bm25: tuple[str, list[tuple[str, float]]] | None = None
        self._symptom_words: dict[str, list[str]] = {}
        self._component_idf: dict[str, float] | None = None
        self._components: dict[str, frozenset[str]] = {}
        self._fix_components: dict[str, frozenset[str]] = {}
        self._hubs: dict[str, float] = {}
        self._hubs_read: set[str] = set()

    # -- lazily loaded state -----------------------------------------------------------------

    @property
    def findings(self) -> dict[str, Finding]:
        """Every finding (a long-lived process; one query reads only what it scores: ``get``)."""
        if not self._all_loaded:
            from kb.store import load_findings

            self._findings = {f.id: f for f in load_findings(self.db)}
            self._all_loaded = True
        return self._findings

    def get(self, ids) -> dict[str, Finding]:
        """The findings with these ids, read once each."""
        missing = [fid for fid in ids if fid not in self._findings]
        if missing and not self._all_loaded:
            from kb.store import get_findings

            self._findings.update(get_findings(self.db, missing))
        return {fid: self._findings[fid] for fid in ids if fid in self._findings}

    def _has_keys(self) -> bool:
        if self._keyed is None:
            from kb.store import get_meta

            self._keyed = get_meta(self.db, "line_keys") == line_keys_version()
        return self._keyed

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
            from agent.logs import signature

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
        if self._has_keys():
            postings = self._read_postings(set().union(*user_tokens))
        else:
            self._symptom_lines()
            postings = self._postings
        found: set[str] = set()
        for toks in user_tokens:
            counts: dict[str, int] = {}
            for tok in toks:
                for fid in postings.get(tok, ()):
                    counts[fid] = counts.get(fid, 0) + 1
            found.update(fid for fid, n in counts.items() if n >= 3)
        return found

    def _read_postings(self, keys: set[str]) -> dict[str, set[str]]:
        wanted = sorted(keys - self._postings.keys())
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            for key in chunk:
                self._postings[key] = set()
            marks = ", ".join("?" * len(chunk))
            for key, fid in self.db.execute(
                f"SELECT key, finding_id FROM line_postings WHERE key IN ({marks})", chunk
            ):
                self._postings[key].add(fid)
        return self._postings

    def _lines_of(self, ids: set[str]) -> dict[str, list[tuple[str, frozenset[str]]]]:
        if not self._has_keys():
            lines = self._symptom_lines()
            return {fid: lines[fid] for fid in ids if fid in lines}
        if self._sym_lines is None:
            self._sym_lines = {}
        wanted = sorted(ids - self._sym_lines.keys())
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            for fid in chunk:
                self._sym_lines[fid] = []
            marks = ", ".join("?" * len(chunk))
            for fid, text, keys in self.db.execute(
                f"SELECT finding_id, text, keys FROM line_keys WHERE finding_id IN ({marks})"
                " ORDER BY finding_id, idx",
                chunk,
            ):
                self._sym_lines[fid].append((text, frozenset(keys.split())))
        return {fid: self._sym_lines[fid] for fid in ids}

    def symptom_words(self, finding: Finding) -> list[str]:
        """The words of a finding's symptoms and root cause (what the symptoms' BM25 counts),
        worked out once per finding."""
        words = self._symptom_words.get(finding.id)
        if words is None:
            text = " ".join(s.text for s in finding.symptoms) + " " + (finding.root_cause or "")
            words = self._symptom_words[finding.id] = M.words(text)
        return words

    def traits_of(self, finding: Finding) -> ArchTraits:
        key = finding.architecture or ""
        if key not in self._traits:
            from agent.context import traits_for_model_type

            self._traits[key] = traits_for_model_type(finding.architecture)
        return self._traits[key]

    # -- retrievers ------------------------------------------------------------------------

    def by_lines(self, triage: Triage) -> dict[str, tuple[M.LineHit, float]]:
        """Findings sharing an error line: (best hit, informativeness of the shared words)."""
        from agent.informative import line_stats

        stats = line_stats()
        user = [(ln.text, M.tokens(ln.signature)) for ln in triage.lines]
        hits: dict[str, tuple[M.LineHit, float]] = {}
        if not user:
            return hits
        candidates = self._line_candidates([toks for _, toks in user])
        lines_of = self._lines_of(candidates)
        for fid in candidates:
            found = M.weighted_line_overlap(user, lines_of.get(fid, []), stats)
            if found is not None and found[0].score >= 0.3:
                hits[fid] = found
        return hits

    def by_bm25(self, text: str) -> list[tuple[str, float]]:
        """``(finding id, BM25 score)``, best first."""
        from kb.store import Vocabulary, fts_match, fts_query, fts_vocabulary, query_words

        # the counts of this query's words only, remembered for later queries of the process
        words = query_words(text)
        missing = [w for w in words if w not in self._df]
        if missing or self._documents is None:
            vocabulary = fts_vocabulary(self.db, missing)
            self._documents = vocabulary.documents
            self._df.update(dict.fromkeys(missing, 0))
            self._df.update(vocabulary.doc_freq)
        vocabulary = Vocabulary(self._df, self._documents)
        query = fts_query(text, vocabulary)
        if query is None:
            return []
        # a query's two searches (its error lines, the whole report) are often the same
        # expression: the last one is remembered
        if self._last_bm25 is None or self._last_bm25[0] != query:
            self._last_bm25 = (query, fts_match(self.db, query, limit=POOL))
        return list(self._last_bm25[1])

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

    def component_weights(self) -> dict[str, float]:
        """Inverse document frequency of each failure component over the findings."""
        if self._component_idf is None and self._has_keys():
            import math

            (n,) = self.db.execute("SELECT count(*) FROM findings").fetchone()
            df = dict(
                self.db.execute(
                    "SELECT component, count(*) FROM finding_components WHERE component != ''"
                    " GROUP BY component"
                ).fetchall()
            )
            self._component_idf = {c: math.log((n + 1) / (d + 0.5)) for c, d in df.items()}
        if self._component_idf is None:
            import math

            from agent.components import of_finding

            df: dict[str, int] = {}
            self._components = {}
            for fid, f in self.findings.items():
                comps = of_finding(f)
                self._components[fid] = comps
                for c in comps:
                    df[c] = df.get(c, 0) + 1
            n = len(self.findings)
            self._component_idf = {c: math.log((n + 1) / (d + 0.5)) for c, d in df.items()}
        return self._component_idf

    def fix_components_of(self, finding: Finding) -> frozenset[str]:
        """The failure components the finding's fix and alternatives change (through their flags
        and environment variables)."""
        if finding.id not in self._fix_components:
            from agent import components as C

            self._fix_components[finding.id] = C.from_flags(C._fix_items(finding))
        return self._fix_components[finding.id]

    def components_of(self, fid: str) -> frozenset[str]:
        self.component_weights()
        if fid not in self._components and self._has_keys():
            self._read_components([fid])
        return self._components.get(fid, frozenset())

    def _read_components(self, ids: Sequence[str]) -> None:
        """The stored failure components of these findings, in one query per 500."""
        wanted = [fid for fid in ids if fid not in self._components]
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            found: dict[str, set[str]] = {fid: set() for fid in chunk}
            marks = ", ".join("?" * len(chunk))
            for fid, comp in self.db.execute(
                "SELECT finding_id, component FROM finding_components"
                f" WHERE finding_id IN ({marks}) AND component != ''",
                chunk,
            ):
                found[fid].add(comp)
            self._components.update((fid, frozenset(c)) for fid, c in found.items())

    # -- the query -------------------------------------------------------------------------

    def candidates(
        self,
        text: str,
        triage: Triage,
        ctx: QueryContext,
        *,
        use: Sequence[str] = ("lines", "bm25", "embedding"),
        context_funcs: tuple[Callable, Callable, Callable] | None = None,
    ) -> tuple[list[Candidate], QueryEvidence]:
        """Every finding a retriever proposes, with the features the ranker scores."""
        q = self._retrieve(text, triage, ctx, use)
        info = QueryEvidence(q.components, q.classes)
        pool = set(q.lines) | set(q.bm25[:POOL]) | set(M.rank_order(q.cosine)[:POOL])
        if "bm25-report" in use:
            pool |= set(q.report[:POOL])
        if not pool:
            return [], info
        if context_funcs is None:
            from agent.context import quantization_similarity, sm_similarity, trait_similarity

            context_funcs = (trait_similarity, sm_similarity, quantization_similarity)
        ids = sorted(pool)
        found = self.get(ids)
        self.component_weights()
        if self._has_keys():
            self._read_components(ids)
        scoring = self._scoring(q, found, ctx, context_funcs, self.hubs_of(sorted(found)))
        return [self._candidate(fid, found[fid], scoring) for fid in ids if fid in found], info

    def _retrieve(
        self, text: str, triage: Triage, ctx: QueryContext, use: Sequence[str]
    ) -> _Retrieved:
        """What each retriever the mode uses proposes for the query."""
        from agent import components as C

        errors = [ln for ln in triage.lines if ln.cls] or list(triage.lines)
        query_text = "\n".join(ln.text for ln in errors) or text
        triage = Triage(tuple(errors), triage.total_lines)
        bm25_scored = self.by_bm25(query_text) if "bm25" in use else []
        # the whole report (the triaged lines leave out words that tell cases apart)
        if "bm25" in use:  # the fitted ranking reads the report without its log wrapping
            from agent.logs import plain_text

            text = plain_text(text) or text
        report_scored = self.by_bm25(text) if {"bm25", "bm25-report"} & set(use) else []
        embed = "embedding" in use
        return _Retrieved(
            text=text,
            triaged=bool(triage.lines),
            classes=frozenset(ln.cls for ln in errors if ln.cls),
            lines=self.by_lines(triage) if "lines" in use else {},
            bm25=[fid for fid, _ in bm25_scored],
            bm25_score=dict(bm25_scored),
            report=[fid for fid, _ in report_scored],
            report_score=dict(report_scored),
            cosine=self.by_embedding(_head_words(query_text, QUERY_WORDS)) if embed else {},
            components=C.from_text(text) | C.from_text(query_text) | C.from_command(ctx.command),
        )

    def hubs_of(self, ids: Sequence[str]) -> dict[str, float]:
        """The standardised hub values (``kb.hubs``) of ``ids``, read once per finding."""
        from kb.hubs import standardised

        new = [fid for fid in ids if fid not in self._hubs_read]
        if new:
            self._hubs.update(standardised(self.db, new))
            self._hubs_read.update(new)
        return {fid: self._hubs[fid] for fid in ids if fid in self._hubs}

    def _scoring(
        self,
        q: _Retrieved,
        found: dict[str, Finding],
        ctx: QueryContext,
        context_funcs,
        hub: dict[str, float],
    ) -> _Scoring:
        """The per-query statistics every candidate's features are relative to."""
        weights = self.component_weights() if q.components else {}
        # BM25 of the report over the symptoms and root cause of the candidates (their statistics)
        symptom_docs = {fid: self.symptom_words(f) for fid, f in found.items()}
        symptom_score = M.bm25_scores(M.words(q.text), symptom_docs)
        # A one-line question names no failure: the features of failure evidence (the symptoms'
        # BM25, the components its fix changes, the working-deployment flag) do not apply, and its
        # context counts by the agreement of the text as a whole. The DEV reports hold no such
        # question; this path is checked by the seed questions and `scripts/eval.py --set paraphrase`.
        head = [
            ln for ln in q.text.splitlines() if ln.strip()
        ]  # `ask` adds a line of context words
        question = not q.triaged and len(head) <= 2 and M.is_question(head[0] if head else "")
        return _Scoring(
            query=q,
            ctx=ctx,
            context_funcs=context_funcs,
            weights=weights,
            mass=sum(weights.get(c, 0.0) for c in q.components),
            symptom_score=symptom_score,
            symptom_best=max(symptom_score.values(), default=0.0) or 1.0,
            report_best=max(q.report_score.values(), default=0.0) or 1.0,
            question=question,
            report_rank=_reciprocal_ranks({fid: q.report_score.get(fid, 0.0) for fid in found}),
            hub=hub,
        )

    def _candidate(self, fid: str, finding: Finding, s: _Scoring) -> Candidate:
        """One finding's features, in the order of ``agent.rank.FEATURES``."""
        from agent.rank import centred

        q = s.query
        hit, line_info = q.lines.get(fid, (None, 0.0))
        own = self.components_of(fid)
        fixed = self.fix_components_of(finding)
        shared = q.components & own
        cs = M.context_score(s.ctx, finding, self.traits_of(finding), *s.context_funcs)
        agree = M.class_agreement(q.classes, frozenset(x.cls for x in finding.symptoms))
        parts = dict(cs.parts)
        sym = 0.0 if s.question else s.symptom_score.get(fid, 0.0) / s.symptom_best
        rel = q.report_score.get(fid, 0.0) / s.report_best
        weigh = rel if s.question else sym  # what a context match is multiplied by
        features = (
            (hit.score * line_info) if hit else 0.0,
            rel,
            sym,
            q.cosine.get(fid, 0.0),
            sum(s.weights.get(c, 0.0) for c in shared) / s.mass if s.mass else 0.0,
            len(shared) / len(own) if own else 0.0,
            len(q.components & fixed) / len(fixed) if fixed and not s.question else 0.0,
            1.0 if finding.status == "works" and not s.question else 0.0,
            centred(agree),
            *(
                centred(parts.get(k)) * weigh
                for k in ("arch", "gpu", "quant", "framework", "model")
            ),
            s.hub.get(fid, 0.0),
            s.report_rank.get(fid, 0.0),
        )
        return Candidate(
            fid,
            features,
            hit,
            line_info,
            q.bm25.index(fid) + 1 if fid in q.bm25 else None,
            q.bm25_score.get(fid, 0.0),
            q.cosine.get(fid, 0.0),
            tuple(sorted(shared)),
            cs,
            agree,
            q.report_score.get(fid, 0.0),
        )

    def search(
        self,
        text: str,
        triage: Triage,
        ctx: QueryContext,
        *,
        top: int = 3,
        use: Sequence[str] = ("lines", "bm25", "embedding"),
        context_funcs: tuple[Callable, Callable, Callable] | None = None,
        ranker=None,
    ) -> tuple[list[Match], Evidence]:
        """Rank findings for a query. ``use`` selects retrievers: all three are the fitted ranking
        ("ask"); ``("bm25",)`` (over the triaged lines), ``("bm25-report",)`` (over the whole
        report) or ``("embedding",)`` alone rank by that retriever (the baselines)."""
        from agent.rank import load_ranker

        ranker = ranker or load_ranker()
        cands, _ = self.candidates(text, triage, ctx, use=use, context_funcs=context_funcs)
        mode = "ask" if len(use) > 1 else use[0]
        scored = _scored(cands, mode, ranker)
        if not scored:
            return [], Evidence(0.0, 0.0)
        matches = []
        for score, prob, conf, c in scored[:top]:
            signals = _signals(c, prob)
            if mode == "ask":  # what the confident decision reads (for the top match)
                signals += (("confidence", conf),)
            value = prob if mode == "ask" else score
            reasons = _reasons(c, ranker)
            matches.append(Match(self._findings[c.fid], round(value, 4), reasons, signals))
        _, top_prob, top_conf, best = scored[0]
        evidence = Evidence(
            best_line=best.hit.score if best.hit else 0.0,
            best_cosine=best.cosine,
            best_context=best.context.score,
            context_coverage=best.context.coverage,
            classes=best.classes,
            probability=top_conf if mode == "ask" else top_prob,
            line_informative=best.line_info >= ranker.boilerplate_below,
            mode=mode,
        )
        return matches, evidence


def _scored(
    cands: list[Candidate], mode: str, ranker
) -> list[tuple[float, float, float, Candidate]]:
    """``(score, probability, confidence, candidate)``, best first. A baseline ranks by its own
    score; the fitted ranking orders by the ranking model's logit, shows its softmax probability
    (monotonic in rank), and gives the confidence model's probability, which decides whether the
    top answer is called confident."""
    if mode == "bm25":
        scored = [(c.bm25_score, 0.0, 0.0, c) for c in cands if c.bm25_rank]
    elif mode == "bm25-report":
        scored = [(c.report_score, 0.0, 0.0, c) for c in cands if c.report_score]
    elif mode == "embedding":
        scored = [(c.cosine, 0.0, 0.0, c) for c in cands]
    else:
        logits = [ranker.logit(c.features) for c in cands]
        probs = ranker.probabilities(logits)
        confs = ranker.confidences([c.features for c in cands]) if cands else []
        scored = list(zip(logits, probs, confs, cands, strict=True))
    scored.sort(key=lambda t: (-t[0], t[3].fid))
    return scored


def _reasons(c: Candidate, ranker) -> tuple[str, ...]:
    """Why a candidate matches, in the words the answer shows."""
    from agent.components import label

    reasons: list[str] = []
    hit = c.hit
    informative = c.line_info >= ranker.boilerplate_below
    if hit is not None and hit.score >= ranker.line_shared and informative:
        reasons.append(f"shares the error line: {hit.finding_line.strip()[:160]}")
    elif hit is not None and informative:
        reasons.append(f"partly shares the error line: {hit.finding_line.strip()[:160]}")
    elif hit is not None:
        reasons.append(
            "shares only a generic line (framework boilerplate, not evidence by itself): "
            f"{hit.finding_line.strip()[:120]}"
        )
    if c.components:
        reasons.append("same failure component: " + ", ".join(label(x) for x in c.components))
    if c.cosine:
        reasons.append(f"symptom similarity {c.cosine:.2f}")
    if c.bm25_rank and c.bm25_rank <= 10:
        reasons.append(f"keyword rank {c.bm25_rank}")
    reasons.extend(c.context.reasons)
    return tuple(reasons)


def _signals(c: Candidate, probability: float) -> tuple[tuple[str, float], ...]:
    """The evidence of a match in numbers (``--json`` ``signals``)."""
    from agent.rank import FEATURES

    return (
        ("lines", c.hit.score if c.hit else 0.0),
        ("line_info", c.line_info),
        ("bm25_rank", float(c.bm25_rank or 0)),
        ("cosine", c.cosine),
        ("components", c.features[FEATURES.index("components")]),
        ("context", c.context.score if c.context.score is not None else -1.0),
        ("probability", probability),
    )
