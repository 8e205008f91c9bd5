"""The fitted ranking: evidence signals of one (query, finding) pair -> a probability that it is the answer.

Each candidate finding gets a small feature vector (``FEATURES``): how much of an informative error
line it shares, its BM25 score against the whole report and that of its symptoms and root cause
(each relative to the best candidate's), its cosine, the failure components it shares (both ways,
and those its fix changes),
whether it is a working deployment, whether the symptom classes agree, and how its deployment
context agrees, counted in proportion to the symptoms' agreement. A conditional-logit model (a
softmax over the query's candidates plus a "none of them" option) fitted on the evaluation's
training parts (``scripts/fit_ranking.py`` ``TRAIN_PARTS``; the sealed part is never read) scores
them; a feature outside the fitted set (``_provenance.features``) has weight 0: the candidates are
ranked by ``w . x``, and the top one's probability against the others and against "none" is its
confidence. The weights, the logit of "none", the confidence threshold and the boilerplate cut-off
live in ``data/ranking.json`` with the data, date and command that produced them. Nothing here is tuned by hand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

# Context agreement is centred: +0.5 agrees, -0.5 disagrees, 0 when either side does not say.
# Context enters only multiplied by the symptoms' BM25 (a context match counts when the failure
# evidence agrees): alone it would lift a case of the same model or GPU over a case of the same
# failure. Which features are here was decided by out-of-fold figures on the DEV part
# (data/ranking.json _provenance.feature_selection); which of them the model uses, by nested
# out-of-fold figures on the training parts (_provenance.feature_set).
FEATURES = (
    "line",  # best shared error line: weighted containment x informativeness (0..1)
    "bm25_report",  # BM25 of the whole report over the findings' documents, / the best (0..1)
    "symptoms_bm25",  # BM25 of the report over the candidates' symptoms + root cause, / the best
    "cosine",  # embedding similarity of the symptoms (0..1)
    "components",  # share of the query's failure components the finding names (idf-weighted, 0..1)
    "finding_components",  # share of the finding's failure components the query names (0..1)
    "fix_components",  # share of the components the finding's fix changes that the query names
    "works",  # the finding is a working deployment (status works), not a failure with a fix
    "classes",  # symptom classes agree (+0.5) or contradict (-0.5)
    "arch_x_symptoms",  # architecture-trait agreement (centred) x symptoms_bm25
    "gpu_x_symptoms",  # GPU generation agreement (centred) x symptoms_bm25
    "quant_x_symptoms",  # quantization agreement (centred) x symptoms_bm25
    "framework_x_symptoms",  # same framework (centred) x symptoms_bm25
    "model_x_symptoms",  # same model (centred) x symptoms_bm25
    "hub",  # how generic the finding is: its standardised hub value (kb.hubs), -1..3
    "report_rank",  # 1 / rank by the whole report's BM25 among the query's candidates (0: no match)
)


def in_band(probability: float, low: float, high: float) -> bool:
    """Whether ``probability`` falls in the track-record band [low, high); the last band (up to 1)
    also holds 1 itself. The fit counts reports into bands and ``ask`` reads them by this one rule."""
    return low <= probability < high or (high >= 1.0 and probability >= high)


@dataclass(frozen=True)
class Ranker:
    weights: tuple[float, ...]  # one per FEATURES entry
    none_logit: float  # the score of "no candidate is the answer"
    confident_at: float  # probability at or above which the top answer is called confident
    boilerplate_below: float  # a shared line less informative than this is not evidence alone
    line_shared: float  # containment at or above which a line counts as shared
    provenance: Mapping[str, object]
    # The confidence model: the same features fitted with the L2 that best separates right answers
    # from negatives (strong shrinkage ranks best but flattens the probabilities). None: the
    # ranking weights give the probabilities too.
    conf_weights: tuple[float, ...] | None = None
    conf_none_logit: float | None = None
    # (low, high, right, reports) per probability band: out-of-fold on the training parts, how many
    # top answers fell in the band and how many were right (``scripts/fit_ranking.py``)
    track_record: tuple[tuple[float, float, int, int], ...] = ()

    def record_at(self, probability: float):
        """The track record (``kb.records.TrackRecord``) of the band ``probability`` falls in, or
        None when the model carries none."""
        from kb.records import TrackRecord

        for low, high, right, reports in self.track_record:
            if in_band(probability, low, high):
                return TrackRecord(low, high, right, reports)
        return None

    def logit(self, features: Sequence[float]) -> float:
        return sum(w * x for w, x in zip(self.weights, features, strict=True))

    def probabilities(
        self, logits: Sequence[float], none_logit: float | None = None
    ) -> list[float]:
        """Softmax of the candidates' logits against each other and against "none"."""
        none = self.none_logit if none_logit is None else none_logit
        top = max([none, *logits])
        exps = [math.exp(z - top) for z in logits]
        total = sum(exps) + math.exp(none - top)
        return [e / total for e in exps]

    def confidences(self, rows: Sequence[Sequence[float]]) -> list[float]:
        """Each candidate's probability of being the answer under the confidence model."""
        if self.conf_weights is None:
            return self.probabilities([self.logit(x) for x in rows])
        logits = [sum(w * v for w, v in zip(self.conf_weights, x, strict=True)) for x in rows]
        return self.probabilities(logits, self.conf_none_logit)


def ranker_from_dict(raw: Mapping[str, object], origin: str = "data/ranking.json") -> Ranker:
    from kb.errors import DeployKBError

    try:
        w = raw["weights"]
        weights = tuple(float(w[name]) for name in FEATURES)  # type: ignore[index]
        conf = raw.get("confidence")
        conf_weights = conf_none = None
        if conf is not None:
            cw = conf["weights"]  # type: ignore[index]
            conf_weights = tuple(float(cw[name]) for name in FEATURES)
            conf_none = float(conf["none_logit"])  # type: ignore[index]
        bands = raw.get("track_record", {}).get("bands", [])  # type: ignore[union-attr]
        record = tuple(
            (float(b["from"]), float(b["to"]), int(b["right"]), int(b["reports"])) for b in bands
        )
        if any(r > n or lo >= hi for lo, hi, r, n in record):
            raise ValueError("a track_record band with more right answers than reports or no width")
        return Ranker(
            weights=weights,
            none_logit=float(raw["none_logit"]),  # type: ignore[arg-type]
            confident_at=float(raw["confident_at"]),  # type: ignore[arg-type]
            boilerplate_below=float(raw["boilerplate_below"]),  # type: ignore[arg-type]
            line_shared=float(raw["line_shared"]),  # type: ignore[arg-type]
            provenance=dict(raw.get("_provenance", {})),  # type: ignore[arg-type]
            conf_weights=conf_weights,
            conf_none_logit=conf_none,
            track_record=record,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DeployKBError(f"{origin}: not a ranking model ({exc})") from None


@lru_cache(maxsize=1)
def load_ranker() -> Ranker:
    from kb.dataload import load_json_data

    return ranker_from_dict(load_json_data("ranking.json"))


def centred(similarity: float | None) -> float:
    return 0.0 if similarity is None else similarity - 0.5


def fit_softmax(
    groups: Sequence[tuple[Sequence[Sequence[float]], int | None]],
    *,
    l2: float = 1.0,
    iterations: int = 100,
) -> tuple[list[float], float]:
    """Conditional logit with a "none" option, by Newton's method (NumPy).

    ``groups``: per query, the candidates' feature rows and the index of the right one, or None when
    no candidate is right (a negative). Returns (weights, none_logit). The weights are L2-shrunk,
    the "none" logit is not.
    """
    import numpy as np

    d = len(groups[0][0][0]) if groups and groups[0][0] else len(FEATURES)
    theta = np.zeros(d + 1)
    reg = np.eye(d + 1) * l2
    reg[d, d] = 0.0
    mats = []
    for rows, label in groups:
        X = np.zeros((len(rows) + 1, d + 1))
        if rows:
            X[:-1, :d] = np.asarray(rows, dtype=float)
        X[-1, d] = 1.0  # the "none" option: its logit is theta[d]
        mats.append((X, len(rows) if label is None else label))

    def loss(t):  # negative log-likelihood plus the L2 penalty
        total = 0.5 * t @ reg @ t
        for X, y in mats:
            z = X @ t
            top = z.max()
            total -= z[y] - top - np.log(np.exp(z - top).sum())
        return total

    current = loss(theta)
    for _ in range(iterations):
        grad = reg @ theta
        hess = reg.copy()
        for X, y in mats:
            z = X @ theta
            p = np.exp(z - z.max())
            p /= p.sum()
            mu = p @ X
            grad += mu - X[y]
            hess += (X * p[:, None]).T @ X - np.outer(mu, mu)
        step = np.linalg.solve(hess + np.eye(d + 1) * 1e-6, grad)
        rate = 1.0  # backtracking: Newton steps can overshoot on nearly separable data
        while rate > 1e-4 and loss(theta - rate * step) > current:
            rate /= 2
        theta = theta - rate * step
        new = loss(theta)
        if current - new < 1e-9:
            break
        current = new
    return [float(t) for t in theta[:d]], float(theta[d])
