"""Which step of a deployment a server log failed at: loading the weights, CUDA-graph capture,
the first request, under load... (the markers: ``data/stages.json``).

Pure: the log's lines in, the stage's name out. ``deploykb add`` says it in the finding's
"What happened" and its default title; a log that shows none is asked about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from kb.errors import DeployKBError
from kb.records import Triage


@dataclass(frozen=True)
class _Phase:
    name: str
    begin: re.Pattern[str]
    end: re.Pattern[str] | None


@dataclass(frozen=True)
class _Markers:
    phases: tuple[_Phase, ...]
    ready: re.Pattern[str]
    request: re.Pattern[str]
    running: tuple[re.Pattern[str], ...]
    phrases: dict[str, str]  # stage name -> how it reads after a symptom


def _any(patterns: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.I)


@lru_cache(maxsize=1)
def _markers() -> _Markers:
    from kb.dataload import load_json_data

    raw = load_json_data("stages.json")
    try:
        phases = tuple(
            _Phase(p["name"], _any(p["begin"]), _any(p["end"]) if p.get("end") else None)
            for p in raw["phases"]
        )
        return _Markers(
            phases=phases,
            ready=_any(raw["ready"]),
            request=_any(raw["request"]),
            running=tuple(re.compile(p, re.I) for p in raw["running"]),
            phrases={s["name"]: s["phrase"] for s in raw["stages"]},
        )
    except (KeyError, TypeError, re.error) as exc:
        raise DeployKBError(f"data/stages.json: malformed ({exc})") from None


def stage_names() -> tuple[str, ...]:
    """The stages a finding's "What happened" names, in the order a deployment goes through them."""
    return tuple(_markers().phrases)


def phrase(stage: str) -> str:
    """How a stage reads after the symptom: ``at CUDA-graph capture``, ``under load``; a stage in
    the user's own words reads ``at <words>``, or as written when it starts with a preposition."""
    stage = " ".join(stage.split())
    known = _markers().phrases.get(stage)
    if known:
        return known
    first = stage.split(" ", 1)[0].lower()
    return (
        stage if first in ("at", "while", "during", "under", "after", "on", "in") else f"at {stage}"
    )


def failed_stage(lines: Iterable[str], until: int | None = None) -> str | None:
    """The stage the log was at when it failed: read up to line ``until`` (1-based, the first
    error line; the whole log without it). None when the log shows no step at all."""
    reading = _Reading(_markers())
    for number, line in enumerate(lines, 1):
        if until is not None and number >= until:
            break
        reading.read(line)
    return reading.stage()


class _Reading:
    """What the log has said so far: the phase open, whether the server was ready, the requests
    since, the most running at once."""

    def __init__(self, markers: _Markers) -> None:
        self.m = markers
        self.open: _Phase | None = None
        self.seen = self.ready = False
        self.requests = self.running = 0

    def read(self, line: str) -> None:
        if self.open is not None and self.open.end is not None and self.open.end.search(line):
            self.open = None
            return
        for phase in self.m.phases:
            if phase.begin.search(line):
                self.open, self.seen = phase, True
        if self.m.ready.search(line):  # a later ready line (SGLang's "fired up") starts afresh
            self.ready, self.seen, self.open, self.requests = True, True, None, 0
        elif self.ready and self.m.request.search(line):
            self.requests += 1
        if self.ready:
            for rx in self.m.running:
                found = rx.search(line)
                if found:
                    self.running = max(self.running, int(found.group(1)))

    def stage(self) -> str | None:
        if self.open is not None:
            return self.open.name
        if self.ready:
            if self.running > 1:
                return "under load"
            return "serving requests" if self.requests > 1 else "the first request"
        return "start-up" if self.seen else None


# why triage kept a line, for the lines that are the failure itself (not context or warnings)
_ERROR_REASONS = frozenset({"assertion", "exception", "error", "scheduler-exception", "error-log"})


def first_error_line(tri: Triage) -> int | None:
    """The first line of the log that is an error (not a warning, not context before one)."""
    return min(
        (ln.line for ln in tri.lines if ln.line and ln.reason in _ERROR_REASONS), default=None
    )
