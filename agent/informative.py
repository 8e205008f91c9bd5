"""How much a log line says: learned from how often its words occur across real logs and findings.

Framework boilerplate (``Scheduler hit an exception: Traceback (most recent call last):``,
``WorkerProc hit an exception.``, ``warnings.warn(``, generic ``RuntimeError: CUDA error:`` prefixes)
appears in failures of every kind; a line made of such words cannot tell one failure from another.
``data/line_stats.json`` holds the document frequency of every word over a corpus of real logs,
findings and development reports (built by ``scripts/build_line_stats.py``, provenance inside); a
word's weight is its inverse document frequency, a line's informativeness is the mean weight of its
words relative to the weight of a word never seen twice.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache


@dataclass(frozen=True)
class LineStats:
    n_docs: int
    df: Mapping[str, int]
    # each word's weight, worked out once (a query weighs the same words for every candidate)
    _weights: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    @property
    def max_idf(self) -> float:
        return math.log((self.n_docs + 1) / 0.5)

    def idf(self, token: str) -> float:
        return math.log((self.n_docs + 1) / (self.df.get(token, 0) + 0.5))

    def weight(self, token: str) -> float:
        """0..1: 1 for a word seen in at most one document."""
        found = self._weights.get(token)
        if found is None:
            if len(self._weights) >= 200_000:  # a long-lived process stays bounded
                self._weights.clear()
            found = self._weights[token] = self.idf(token) / self.max_idf if self.n_docs else 1.0
        return found

    def mass(self, tokens: Iterable[str]) -> float:
        return sum(self.weight(t) for t in tokens)

    def informativeness(self, tokens: Iterable[str]) -> float:
        """Mean word weight of a line (0..1); 0 for a line with no words."""
        toks = list(tokens)
        if not toks:
            return 0.0
        return self.mass(toks) / len(toks)


EMPTY = LineStats(0, {})


@lru_cache(maxsize=1)
def line_stats() -> LineStats:
    from kb.dataload import load_json_data

    raw = load_json_data("line_stats.json")
    return LineStats(int(raw.get("n_docs", 0)), dict(raw.get("df", {})))


def line_informativeness(signature: str) -> float:
    """Informativeness of one (masked) log line under the shipped statistics."""
    from agent.match import tokens

    return line_stats().informativeness(tokens(signature))


def is_boilerplate(signature: str, info: float | None = None) -> bool:
    """A line whose words occur in failures of every kind: less informative than the cut-off
    fitted on the evaluation's training parts and never below the framework banners
    (data/ranking.json ``boilerplate_below``). ``info`` is the
    line's informativeness when the caller has it already."""
    from agent.rank import load_ranker

    if info is None:
        info = line_informativeness(signature)
    return info < load_ranker().boilerplate_below


def build_stats(
    documents: Iterable[tuple[str, Iterable[Iterable[str]]]], *, min_df: int = 2
) -> dict:
    """In how many distinct failures each word occurs. ``documents`` are ``(failure key, lines'
    token sets)``; documents with the same key are one failure.

    Words seen in fewer than ``min_df`` failures are left out: they weigh the maximum anyway.
    """
    words: dict[str, set[str]] = {}
    for key, doc in documents:
        seen = words.setdefault(key, set())
        for toks in doc:
            seen.update(toks)
    df: dict[str, int] = {}
    for seen in words.values():
        for tok in seen:
            df[tok] = df.get(tok, 0) + 1
    return {"n_docs": len(words), "df": {t: c for t, c in sorted(df.items()) if c >= min_df}}
