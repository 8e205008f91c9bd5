"""The matching policy's pure parts: line overlap, context agreement, class agreement, confidence.

Three retrievers propose findings: error-signature overlap (the user's salient log lines against each
finding's recorded symptom lines, volatile tokens masked, words weighted by how informative they are),
BM25 over the FTS5 index, and cosine similarity of embeddings. ``agent.search`` turns each candidate
into features (these functions) and ``agent.rank`` scores them with the model fitted on the
evaluation's training parts (``scripts/fit_ranking.py`` ``TRAIN_PARTS``; the sealed part is never
read). Whether the best match is presented as *the* answer is decided by the fitted probability
and by absolute evidence: a line of framework boilerplate never makes an answer confident by itself.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kb.records import ArchTraits, Finding, QueryContext

_STOP = frozenset(
    """a an and are as at be by for from has have in is it its of on or that the this to was were
    with not no but if then than so do does did can could will would should may might into out over
    under via per all any each i we you my our your me us""".split()
)
_MASK = re.compile(r"<[a-z_]+>")
_WORD = re.compile(r"[a-z][a-z0-9_]*(?:[.-][a-z0-9_]+)*")


def tokens(text: str) -> frozenset[str]:
    """Content words of a (signature) line: lower-case, masks and stop words dropped."""
    cleaned = _MASK.sub(" ", text.lower())
    return frozenset(w for w in _WORD.findall(cleaned) if len(w) > 1 and w not in _STOP)


_PLAIN = re.compile(r"[a-z][a-z0-9_]*")


def words(text: str | None) -> list[str]:
    """Every content word of a text in order, repeats kept (for term counts): lower-case runs of
    letters, digits and underscores, one-letter and stop words dropped."""
    return [w for w in _PLAIN.findall((text or "").lower()) if len(w) > 1 and w not in _STOP]


def is_question(text: str) -> bool:
    """One line ending with a question mark ("what works for Kimi K2 on RTX PRO 6000?"): it asks
    about a deployment and describes no failure, so nothing in it can agree with a case's symptoms."""
    s = text.strip()
    return bool(s) and "\n" not in s and s.endswith("?")


# Okapi BM25's textbook constants (Robertson and Zaragoza 2009), not tuned here.
_K1 = 1.2
_B = 0.75


def bm25_scores(query: Iterable[str], docs: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Okapi BM25 of every document (``docs``: id -> its words) for the distinct words of
    ``query``, with the collection statistics (document frequencies, mean length) taken from
    ``docs`` itself. Documents sharing no word are left out."""
    if not docs:
        return {}
    counts = {key: Counter(doc) for key, doc in docs.items()}
    lengths = {key: len(doc) for key, doc in docs.items()}
    mean = (sum(lengths.values()) / len(lengths)) or 1.0
    wanted = set(query)
    df: Counter[str] = Counter()
    for c in counts.values():
        df.update(w for w in c if w in wanted)
    n = len(docs)
    idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}
    out: dict[str, float] = {}
    for key, c in counts.items():
        norm = _K1 * (1 - _B + _B * lengths[key] / mean)
        score = sum(idf[w] * c[w] * (_K1 + 1) / (c[w] + norm) for w in idf if w in c)
        if score > 0:
            out[key] = score
    return out


@dataclass(frozen=True)
class LineHit:
    score: float  # containment of the recorded symptom's words in the user's line, 0..1
    user_line: str
    finding_line: str


def line_overlap(
    user_lines: Sequence[tuple[str, frozenset[str]]],
    symptom_lines: Sequence[tuple[str, frozenset[str]]],
) -> LineHit | None:
    """Best pairing of a user's salient line with one of a finding's symptom lines.

    Containment of the symptom's words in the user's line, so a long log line that carries the whole
    recorded assertion scores 1.0. At least three shared words: short lines match too easily.
    """
    from agent.informative import EMPTY  # every word weighs the same

    found = weighted_line_overlap(user_lines, symptom_lines, EMPTY)
    return found[0] if found else None


def weighted_line_overlap(
    user_lines: Sequence[tuple[str, frozenset[str]]],
    symptom_lines: Sequence[tuple[str, frozenset[str]]],
    stats,
) -> tuple[LineHit, float] | None:
    """Like ``line_overlap``, with every word weighted by how informative it is (``stats`` is an
    ``agent.informative.LineStats``): the share of a symptom's information that one user line
    carries, and how informative the shared words are (0..1, mean word weight).

    At least three shared words; the best pair is the one whose shared words carry the most
    information, so a decisive line wins over a line of framework boilerplate.
    """
    best: tuple[float, LineHit, float] | None = None
    for u_text, u_tok in user_lines:
        if not u_tok:
            continue
        for s_text, s_tok in symptom_lines:
            if len(s_tok) < 3:
                continue
            shared = u_tok & s_tok
            if len(shared) < 3:
                continue
            s_mass = stats.mass(s_tok)
            score = stats.mass(shared) / s_mass if s_mass else 0.0
            score *= min(1.0, len(shared) / min(len(u_tok), 6))
            info = stats.informativeness(shared)
            key = score * info
            if best is None or key > best[0]:
                best = (key, LineHit(score, u_text, s_text), info)
    return (best[1], best[2]) if best else None


# --- context ---------------------------------------------------------------------------------


# Tried in order: "mxfp4" before the catch-all "fp4" of NVFP4.
def model_key(model: str | None) -> str:
    """'nvidia/GLM-5-NVFP4' -> 'glm5nvfp4': org and punctuation do not distinguish models."""
    if not model:
        return ""
    name = model.strip().rstrip("/").split("/")[-1].lower()
    return re.sub(r"[^a-z0-9]", "", name)


def _model_words(model: str | None) -> frozenset[str]:
    if not model:
        return frozenset()
    name = model.split("/")[-1].lower()
    return frozenset(w for w in re.split(r"[^a-z0-9.]+", name) if w)


def model_similarity(a: str | None, b: str | None) -> float:
    ka, kb_ = model_key(a), model_key(b)
    if not ka or not kb_:
        return 0.0
    if ka == kb_:
        return 1.0
    wa, wb = _model_words(a), _model_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


@dataclass(frozen=True)
class ContextScore:
    score: float | None  # None when the user gave no context to compare
    reasons: tuple[str, ...]
    coverage: float = 0.0  # share of the context weight the comparison could use (0..1)
    parts: tuple[tuple[str, float], ...] = ()  # per dimension compared: (name, similarity 0..1)


def context_score(
    ctx: QueryContext,
    finding: Finding,
    finding_traits: ArchTraits,
    trait_similarity,
    sm_similarity,
    quant_similarity,
) -> ContextScore:
    """Weighted agreement over the context dimensions the user supplied.

    ``trait_similarity(a, b) -> (0..1, reasons)``, ``sm_similarity(a, b) -> 0..1`` and
    ``quant_similarity(a, b) -> 0..1`` come from ``agent.context``; they are parameters so that
    this stays a pure function.
    """
    parts: list[tuple[float, float]] = []  # (weight, similarity)
    named: list[tuple[str, float]] = []
    reasons: list[str] = []

    if ctx.model:
        sim = model_similarity(ctx.model, finding.model)
        parts.append((0.20, sim))
        if finding.model:
            named.append(("model", sim))
        if sim == 1.0:
            reasons.append(f"same model ({finding.model})")
    if ctx.arch and (ctx.arch.model_type or ctx.arch.traits):
        sim, shared = trait_similarity(ctx.arch, finding_traits)
        parts.append((0.30, sim))
        if finding.architecture:
            named.append(("arch", sim))
        reasons.extend(shared)
    if ctx.sm:
        sim = sm_similarity(ctx.sm, finding.hardware.sm) if finding.hardware.sm else 0.0
        parts.append((0.25, sim))
        if finding.hardware.sm:
            named.append(("gpu", sim))
        if sim == 1.0:
            reasons.append(f"same GPU generation ({finding.hardware.sm}, {finding.hardware.gpu})")
        elif sim > 0:
            reasons.append(f"related GPU ({finding.hardware.sm} vs {ctx.sm})")
    q_user = ctx.quantization or (ctx.arch.quantization if ctx.arch else None)
    if q_user:
        sim = quant_similarity(q_user, finding.quantization)
        parts.append((0.15, sim))
        if finding.quantization:
            named.append(("quant", sim))
        if sim == 1.0:
            reasons.append(f"same quantization ({finding.quantization})")
        elif sim > 0:
            reasons.append(f"related quantization ({finding.quantization} vs {q_user})")
    if ctx.framework:
        from kb.frameworks import normalise_framework

        def norm(name: str | None) -> str:
            return normalise_framework(name) or (name or "").lower()

        f_name = norm(finding.framework.name)
        sim = 1.0 if f_name and f_name == norm(ctx.framework) else 0.0
        parts.append((0.10, sim))
        if f_name:
            named.append(("framework", sim))
        if sim:
            reasons.append(f"same framework ({finding.framework.name})")
    if not parts:
        return ContextScore(None, ())
    total = sum(w for w, _ in parts)
    return ContextScore(sum(w * s for w, s in parts) / total, tuple(reasons), total, tuple(named))


# Symptom classes that one failure commonly shows together (NaN logits trip the sampler's device
# assert; a bad kernel faults or crashes). "crash" and "warning" say too little to disagree with.
_CLASS_GROUPS = (
    frozenset({"nan", "device-assert", "garbage-output", "empty-output", "accuracy"}),
    frozenset({"illegal-memory-access", "device-assert", "crash"}),
    frozenset({"hang", "slow"}),
    frozenset({"oom"}),
)
_VAGUE = frozenset({"crash", "warning"})


def class_agreement(user: frozenset[str], recorded: frozenset[str]) -> float | None:
    """1.0 when the user's error classes and the case's overlap or are related, 0.0 when they
    contradict (an OOM is not an illegal memory access), None when either side says too little."""
    u, r = user - _VAGUE, recorded - _VAGUE
    if not u or not r:
        return None
    if u & r:
        return 1.0
    for group in _CLASS_GROUPS:
        if u & group and r & group:
            return 1.0
    return 0.0


def is_confident(evidence, ranker) -> tuple[bool, str]:
    """Whether the best match is presented as the answer, and the sentence that says why (not).

    ``evidence`` is an ``agent.search.Evidence``, ``ranker`` an ``agent.rank.Ranker``: the fitted
    probability must reach the threshold calibrated on the training negatives, and a shared line counts
    only when its words carry information (framework boilerplate never decides alone).
    """
    if evidence.mode != "ask":
        return False, f"{evidence.mode} alone: a ranking, not a diagnosis"
    if evidence.classes == 0.0 and not evidence.line_informative:
        return False, (
            "the closest recorded case shows another kind of failure; "
            "the cases below are the nearest, not a diagnosis"
        )
    if evidence.probability >= ranker.confident_at:
        if evidence.line_informative and evidence.best_line >= ranker.line_shared:
            return True, "the log shares an informative error line with a recorded case"
        return True, (
            f"the evidence for the best case is strong (p={evidence.probability:.2f} "
            f">= {ranker.confident_at:.2f})"
        )
    if evidence.best_line >= ranker.line_shared and not evidence.line_informative:
        return False, (
            "the only shared line is framework boilerplate, which many failures print; "
            "the cases below are the nearest, not a diagnosis"
        )
    return False, (
        f"nothing in the knowledge base is close enough (p={evidence.probability:.2f} "
        f"< {ranker.confident_at:.2f}); the cases below are the nearest, not a diagnosis"
    )


def rank_order(scores: Mapping[str, float]) -> list[str]:
    return sorted(scores, key=lambda fid: (-scores[fid], fid))
