"""Log triage: the few lines of a server log that say what went wrong.

``triage`` streams over any iterable of lines (an open file, a generator, ``str.splitlines()``) in
bounded memory: a three-line ring buffer for context, one traceback state per process, and at most
``max_lines`` distinct signatures per importance level. It keeps

- CUDA kernel assertions (``Assertion `...` failed.``). When many GPU threads print at once the
  assertions arrive interleaved and split across lines; the repeated text is recovered from the
  fragments and reported once, clean;
- exception lines (the ``XxxError: message`` line that ends a traceback, or any line of that shape)
  and known error texts (CUDA errors, NCCL watchdog timeouts, out of memory, NaN) from
  ``data/triage.json``;
- warnings the knowledge base knows to be causal (``causal_warnings`` in ``data/triage.json``);
- per-process catch-all lines (``Scheduler hit an exception``) and the lines just before them or
  before a ``Traceback (most recent call last)``;
- in pasted API responses, ``"matched_stop": "NaN happened"`` and content made of one repeated
  character (``!!!!``).

Lines that differ only in volatile tokens (time, rank, pid, addresses, numbers, paths) share a
``signature`` and are reported once, with a count and the ranks (``TP5``, ``rank3``) they came
from. Output order: error lines before context lines; framework boilerplate (``agent.informative``)
behind the causal warnings; then importance (the ``IMPORTANCE`` of the line's reason), classified
lines first, the more informative line first, then first appearance.
A question with no error in it gives an empty ``Triage``: the caller then uses the raw text.
"""

from __future__ import annotations

import codecs
import json
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from kb.classify import classify_symptom, compile_classes
from kb.errors import DeployKBError, InputError
from kb.records import SYMPTOM_CLASSES, SalientLine, Triage
from kb.resources import data_file

# Why a line was kept -> its importance (lower is shown first).
IMPORTANCE: dict[str, int] = {
    "assertion": 0,  # a kernel assertion text, fragments re-joined
    "api-response": 0,  # a pasted response: matched_stop "NaN happened", content "!!!!"
    "model-output": 0,  # a pasted output line made of one repeated character
    "exception": 1,  # "XxxError: message", e.g. the last line of a traceback
    "error": 1,  # a known error text (data/triage.json "errors")
    "causal-warning": 2,  # a warning known to cause failures (data/triage.json "causal_warnings")
    "scheduler-exception": 3,  # "Scheduler hit an exception", "WorkerProc hit an exception"
    "error-log": 3,  # any other ERROR-level log line
    "before-scheduler-exception": 4,  # context: the lines just before a catch-all line
    "before-traceback": 4,  # context: the lines just before "Traceback (most recent call last)"
}

EMPTY_INPUT = "empty input: paste an error, a log, or a question"
_SNIFF = 8192  # bytes looked at to tell a text log from a binary file
_CHUNK = 1 << 16  # read size when streaming a file or stdin
_MAX_LINE = 1 << 16  # longer lines (no newline for 64 KiB) are cut into pieces
_MAX_CHARS = 4096  # characters of a line that triage looks at
_MAX_TEXT = 500  # characters of a line kept in SalientLine.text
_CONTEXT = 3  # lines kept before a catch-all line or a traceback
_CONTEXT_REACH = 8  # ... and only if they are at most this many lines before it
_MAX_PROCESSES = 512  # traceback states kept (one per rank / pid)
_MAX_ASSERT_TEXTS = 256  # distinct assertion fragments remembered
_MAX_RANKS = 256  # ranks remembered per line
_PUNCTUATION = " \t-=_*~^#.|+"  # a line made only of these is a separator

# --- text cleaning and log prefixes ---------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
# colour codes whose ESC was lost in a copy-paste: "[1;36m(VllmWorker rank=3 pid=229)[0;0m"
_BARE_ANSI = re.compile(r"(?<![\w\]])\[\d{1,3}(?:;\d{1,3})*m")
_RANK_TAG = r"(?:TP|DP|EP|PP|CP|PCP)\d+"
_RANK_LABEL = re.compile(r"(?<![A-Za-z])(TP|DP|EP|PP|CP|PCP)(\d+)\b")
_RANK_EQ = re.compile(r"rank=(\d+)")
_PID_EQ = re.compile(r"pid=(\d+)")
# journald short format: "Feb 19 00:13:33 host python3[1234]: "
_JOURNALD = re.compile(r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@/-]+(?:\[\d+\])?: ?")
# docker --timestamps, ISO-stamped lines: "2026-09-22T06:50:07.810057661Z "
# Rust's tracing pads the level after the stamp: "2025-06-12T01:21:13.123456Z  INFO "
_ISO = re.compile(
    r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"(?: +(?=(?:TRACE|DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b)| ?)"
)
# docker compose service column: "vllm-1  | "
_COMPOSE = re.compile(r"[\w.-]*[-_]\d+\s+\| ?")
# NCCL: "host:1180825:1180825 [4] "
_NCCL_HOST = re.compile(r"[\w.-]+:\d+:\d+ \[\d+\] ?")
# levels, vLLM's "MM-DD hh:mm:ss [file.py:123]": "ERROR 06-12 01:21:13 [multiproc_executor.py:527] "
_LEVEL = re.compile(
    r"(?P<level>TRACE|DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)(?::[\w.]*:|:?[ \t]+)"
    r"(?:\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? )?(?:\[[\w./-]+:\d+\] ?)?"
    # ... and then its target, a Rust module path, lower-case snake_case segments:
    # "dynamo_runtime::component: " (a C++ type such as "c10::DistBackendError: " is the message)
    r"(?:[a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)+: ?)?"
)
# process tags: "(VllmWorker rank=3 pid=229) ", "(EngineCore_DP0 pid=164) "
_PROC = re.compile(
    r"\((?P<proc>[A-Za-z][\w-]*)(?P<tags>(?:\s+(?:" + _RANK_TAG + r"|rank=\d+|pid=\d+))+)\) ?"
)
_BRACKETS = (
    # SGLang, logging: "[2026-02-19 00:13:33 TP5] ", "[21:30:47 TP0] ", "[2025-08-25 14:13:59,028] "
    re.compile(
        r"\[(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d(?:[.,]\d+)?(?P<tags>(?:\s+"
        + _RANK_TAG
        + r")*)\] ?"
    ),
    re.compile(r"\[(?P<tags>" + _RANK_TAG + r"(?:\s+" + _RANK_TAG + r")*)\] ?"),
    re.compile(r"\[(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\] ?"),
    re.compile(r"\[[\w.]+:\d+(?::\w+)?\] ?"),  # "[real_accelerator.py:260:get_accelerator] "
    # torch distributed: "[rank1]:", c10 "[E ProcessGroupNCCL.cpp:563] "
    re.compile(r"\[rank(?P<rank>\d+)\]: ?"),
    re.compile(r"\[(?P<glevel>[IWEF])(?:\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ | )?[\w.]+:\d+\] ?"),
)


def _prefix_candidates(ch: str) -> tuple[re.Pattern[str], ...]:
    """The prefix shapes that can start with character ``ch``."""
    if ch == "[":
        return _BRACKETS
    if ch == "(":
        return (_PROC,)
    if ch.isdigit():
        return (_ISO, _COMPOSE, _NCCL_HOST)
    if ch.isalpha() or ch == "_":
        return (_JOURNALD, _LEVEL, _COMPOSE, _NCCL_HOST) if ch.isupper() else (_COMPOSE, _NCCL_HOST)
    return ()


_ERROR_LEVELS = frozenset({"ERROR", "CRITICAL", "FATAL", "E", "F"})


@dataclass(frozen=True)
class _Prefix:
    end: int  # where the message starts
    rank: str | None  # "TP5", "rank3", "DP0 TP0"
    key: str  # process identity: rank, else pid, else process name, else ""
    level: str | None


def _clean(raw: str) -> str:
    """One physical line: no newline, no ANSI colour, only the last redraw of a progress bar."""
    s = raw.rstrip("\r\n")
    if "\r" in s:
        parts = [p for p in s.split("\r") if p.strip()]
        s = parts[-1] if parts else ""
    if len(s) > _MAX_CHARS:
        s = s[:_MAX_CHARS]
    if "\x1b" in s:
        s = _ANSI.sub("", s)
    if "m" in s and "[" in s:
        s = _BARE_ANSI.sub("", s)
    if "\x00" in s:
        s = s.replace("\x00", "")
    return s.rstrip()


def _split_prefix(line: str) -> _Prefix:
    """Peel log prefixes (journald, docker, process tags, timestamps, levels, ranks) off a line."""
    pos, labels, pid, proc, level = 0, [], None, None, None
    for _ in range(10):
        if pos >= len(line):
            break
        for rx in _prefix_candidates(line[pos]):
            m = rx.match(line, pos)
            if m is not None and m.end() > pos:
                break
        else:
            break
        groups = m.groupdict()
        tags = groups.get("tags")
        if tags:
            labels += [f"{k}{n}" for k, n in _RANK_LABEL.findall(tags)]
            labels += [f"rank{n}" for n in _RANK_EQ.findall(tags)]
            pid = next(iter(_PID_EQ.findall(tags)), pid)
        if groups.get("proc"):
            proc = groups["proc"]
            labels += [f"{k}{n}" for k, n in _RANK_LABEL.findall(proc.replace("_", " "))]
        if groups.get("rank"):
            labels.append(f"rank{groups['rank']}")
        level = groups.get("level") or groups.get("glevel") or level
        pos = m.end()
    rank = " ".join(dict.fromkeys(labels)) or None
    key = rank or (f"pid{pid}" if pid else proc or "")
    return _Prefix(pos, rank, key, level)


# --- signatures -----------------------------------------------------------------------------

_MASKS = (
    (re.compile(r"\b(?:https?|tcp|grpc|wss?|ipc)://[^\s'\")\]>]+"), "<url>"),
    (re.compile(r"(?<![\w.:/-])(?:~|\.{1,2})?/(?:[\w.+@-]+/)*[\w.+@-]+"), "<path>"),
    (re.compile(r"(?<![\w./-])(?:[\w.-]+/){2,}[\w.-]+\.\w+"), "<path>"),
    (
        re.compile(
            r"\b\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d)?(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)?\b"
        ),
        "<ts>",
    ),
    (re.compile(r"\b\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\b"), "<ts>"),
    (re.compile(r"\b\d{1,2}:\d\d:\d\d(?:[.,]\d+)?\b"), "<ts>"),
    (
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        "<id>",
    ),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b"), "<hex>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (
        re.compile(
            r"\b(host(?:name)?|node|master_addr|addr(?:ess)?)(\s*[=:]\s*)['\"]?[\w.-]+['\"]?"
        ),
        r"\1\2<host>",
    ),
    (re.compile(r"\[\s*\d+\s*(?:,\s*\d+\s*)+\]"), "<coord>"),
    (re.compile(r"(?<![A-Za-z])(TP|DP|EP|PP|CP|PCP)\d+\b"), r"\1<n>"),
    (re.compile(r"\b(rank|Rank|RANK|pid|tid|worker|Worker)\d+\b"), r"\1<n>"),
    (
        re.compile(
            r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
            r"(?:%|x\b|(?:[KMGT]i?B|ms|us|ns|s|it/s|tok/s|tokens/s)\b)?(?!\w|\.\d)"
        ),
        "<n>",
    ),
    (re.compile(r"([^\w\s<>])\1{4,}"), r"\1\1\1\1"),  # "!!!!!!!!" -> "!!!!"
)


def signature(text: str) -> str:
    """``text`` without its log prefix, volatile tokens masked: equal across runs, ranks and hosts.

    Masks timestamps, TP/DP/EP/PP ranks, ``rank=3``, ``pid=229``, hex addresses, block/thread
    coordinates, numbers, file paths, URLs, IPs and host names, and ANSI colours.

    >>> signature("[2026-02-19 00:13:33 TP5] Scheduler hit an exception: Traceback (most recent")
    'Scheduler hit an exception: Traceback (most recent'
    """
    s = _clean(text)
    s = s[_split_prefix(s).end :]
    for rx, repl in _MASKS:
        s = rx.sub(repl, s)
    return " ".join(s.split())


# --- rules (data/triage.json) ---------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One pattern of data/triage.json, tried only when the lower-cased line holds a keyword."""

    rx: re.Pattern[str]
    keywords: tuple[str, ...]
    reason: str
    cls: str | None = None
    id: str = ""

    def search(self, text: str, lowered: str) -> bool:
        return any(k in lowered for k in self.keywords) and self.rx.search(text) is not None


@dataclass(frozen=True)
class Rules:
    """The compiled contents of data/triage.json."""

    warnings: tuple[Rule, ...]
    errors: tuple[Rule, ...]
    noise: tuple[str, ...]
    classes: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]
    keyword_any: re.Pattern[str]  # any keyword of any warning or error rule: most lines have none

    def is_noise(self, text: str) -> bool:
        return any(n in text for n in self.noise) or not text.strip(_PUNCTUATION)


def compile_rules(raw: dict[str, Any], origin: str = "data/triage.json") -> Rules:
    """Validate and compile triage rules; any defect raises ``DeployKBError`` naming the entry."""

    def fail(where: str, what: str) -> DeployKBError:
        return DeployKBError(f"{origin}: {where}: {what}")

    def rx(pattern: Any, where: str) -> re.Pattern[str]:
        if not isinstance(pattern, str) or not pattern:
            raise fail(where, "'pattern' must be a non-empty string")
        try:
            return re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise fail(where, f"bad regular expression {pattern!r}: {exc}") from None

    def cls_of(value: Any, where: str) -> str:
        if value not in SYMPTOM_CLASSES:
            raise fail(where, f"unknown class {value!r}; use one of {', '.join(SYMPTOM_CLASSES)}")
        return value

    def keywords(value: Any, where: str) -> tuple[str, ...]:
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(k, str) and k and k == k.lower() for k in value)
        ):
            raise fail(where, "'keywords' must be a non-empty list of lower-case strings")
        return tuple(value)

    def entries(name: str) -> list[dict[str, Any]]:
        value = raw.get(name)
        if not isinstance(value, list) or not value:
            raise DeployKBError(f"{origin}: '{name}' must be a non-empty list")
        for i, item in enumerate(value):
            if not isinstance(item, (dict, str)):
                raise fail(f"{name}[{i}]", "must be an object or a string")
        return value

    warnings = tuple(
        Rule(
            rx(w.get("pattern"), f"causal_warnings[{i}]"),
            keywords(w.get("keywords"), f"causal_warnings[{i}]"),
            "causal-warning",
            cls_of(w.get("cls"), f"causal_warnings[{i}]"),
            str(w.get("id", i)),
        )
        for i, w in enumerate(entries("causal_warnings"))
    )
    errors = []
    for i, e in enumerate(entries("errors")):
        where = f"errors[{i}]"
        if e.get("reason") not in IMPORTANCE:
            raise fail(
                where, f"unknown reason {e.get('reason')!r}; use one of {', '.join(IMPORTANCE)}"
            )
        errors.append(
            Rule(rx(e.get("pattern"), where), keywords(e.get("keywords"), where), e["reason"])
        )
    noise = []
    for i, n in enumerate(entries("noise")):
        if not isinstance(n, str) or not n:
            raise fail(f"noise[{i}]", "must be a non-empty string")
        noise.append(n)
    classes = compile_classes(raw.get("classes"), origin)
    every = sorted(
        {k for rule in (*warnings, *errors) for k in rule.keywords}, key=len, reverse=True
    )
    keyword_any = re.compile("|".join(re.escape(k) for k in every))
    return Rules(tuple(warnings), tuple(errors), tuple(noise), tuple(classes), keyword_any)


@lru_cache(maxsize=1)
def rules() -> Rules:
    """The shipped rules, read once."""
    from kb.dataload import load_json_data

    path = data_file("triage.json")
    raw = load_json_data("triage.json")
    if not isinstance(raw, dict):
        raise DeployKBError(f"{path}: must hold a JSON object")
    return compile_rules(raw, str(path))


def classify(text: str) -> str | None:
    """The SYMPTOM_CLASSES value a line's keywords point to, or None.

    A known causal warning is ``"warning"`` whatever it mentions; otherwise the class rules of
    data/triage.json are tried in order (illegal memory access before device assert before nan ...).
    """
    r = rules()
    s = _clean(text)
    lowered = s.lower()
    for w in r.warnings:
        if w.search(s, lowered):
            return w.cls
    return classify_symptom(s, r.classes)


# --- line shapes ----------------------------------------------------------------------------

_EXC_NAME = r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*"
# after a traceback: "KeyError: 'glm_moe_dsa'", "zmq.error.ZMQError: ...", bare "KeyboardInterrupt"
_EXC_TB_END = re.compile(
    rf"(?:{_EXC_NAME}:(?:\s.*)?|{_EXC_NAME}(?:Error|Exception|Interrupt|Exit))\s*$"
)
# anywhere else: "RuntimeError: ...", "torch.AcceleratorError: ...", "Exception: ...", or the bare
# name alone on its line ("asyncio.CancelledError")
_EXC_ANY = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception):\s")
_EXC_BARE = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)")
_TRACEBACK = "Traceback (most recent call last)"
_FRAGMENT_START = re.compile(r"[\]),:;]|['\"][,)]")  # the tail of a line split elsewhere
_ASSERT_OPEN = "Assertion `"
# another thread's kernel location spliced into an assertion text
_SPLICE = re.compile(
    r"(?:\.\.)?/[\w./-]*\.(?:cu|cuh|cpp|cc|h|hpp|py):\d+: |: block: \[|, thread: \[|\bblock: \[\d"
)
_ASSERT_CLOSE = "` failed"
_API_NAN = re.compile(r'"matched_stop"\s*:\s*"NaN happened"')
_API_FIELD = re.compile(
    r'"(content|reasoning_content|text|output|generated_text|response|completion)"\s*:\s*"((?:[^"\\]|\\.)*)"'
)
_BARE_GARBAGE = re.compile(r"([!?\ufffd])\1{3,}")


_SHELL_PROMPT = re.compile(r"^(?:\$|[\w.-]+@[\w.<>-]+:\S*[$#]|>>>)\s+\S")


def _assert_candidates(body: str) -> list[tuple[str, str]]:
    """Assertion texts in one line: (text, kind).

    "complete": closed by the backtick of "` failed";
    "interrupted": another thread's ``...thread: [0,0,0] Assertion `` cut in right after the text;
    "spliced": another thread's kernel location cut in, so the text is only known to be a prefix;
    "truncated": the line ends inside the text (it may go on at the start of the next line).
    """
    out: list[tuple[str, str]] = []
    starts = [m.end() for m in re.finditer(re.escape(_ASSERT_OPEN), body)]
    for i, start in enumerate(starts):
        stop = starts[i + 1] - len(_ASSERT_OPEN) if i + 1 < len(starts) else len(body)
        seg = body[start:stop]
        close = seg.find(_ASSERT_CLOSE)
        if close >= 0:
            seg, kind = seg[:close], "complete"
        elif i + 1 < len(starts):
            seg = seg.rstrip()
            seg, kind = (seg[:-1] if seg.endswith("]") else seg), "interrupted"
        else:
            kind = "truncated"
        spliced = _SPLICE.search(seg)
        if spliced:
            seg, kind = seg[: spliced.start()], "spliced"
        out.append((seg, kind))
    return out


def _api_hits(body: str) -> list[tuple[str, str | None, str]]:
    """(text, cls, reason) for pasted responses: NaN stop reason, one-character content."""
    hits: list[tuple[str, str | None, str]] = []
    if '"' in body:
        if _API_NAN.search(body):
            hits.append(('"matched_stop": "NaN happened"', "nan", "api-response"))
        for m in _API_FIELD.finditer(body):
            try:
                value = json.loads(f'"{m.group(2)}"').strip()
            except ValueError:
                continue
            if len(value) >= 4 and len(set(value)) == 1:
                shown = json.dumps(value[0] * 4)[1:-1]
                hits.append((f'"{m.group(1)}": "{shown}..."', "garbage-output", "api-response"))
    else:
        stripped = body.strip()
        if _BARE_GARBAGE.fullmatch(stripped):
            hits.append((stripped[0] * 4 + "...", "garbage-output", "model-output"))
    return hits


def _rank_key(rank: str) -> tuple[tuple[str, int], ...]:
    return tuple((m.group(1), int(m.group(2))) for m in re.finditer(r"([A-Za-z]+)(\d+)", rank))


# --- the streaming triager ------------------------------------------------------------------


@dataclass
class _Entry:
    text: str
    signature: str
    cls: str | None
    reason: str
    importance: int
    line: int
    count: int = 0
    ranks: dict[str, None] = field(default_factory=dict)

    def add_rank(self, rank: str | None) -> None:
        if rank and len(self.ranks) < _MAX_RANKS:
            self.ranks[rank] = None


@dataclass
class _AssertText:
    line: int
    exact: int = 0
    terminated: bool = False
    ranks: dict[str, None] = field(default_factory=dict)


class _Triager:
    def __init__(self, max_lines: int, rules: Rules) -> None:
        self.max_lines = max_lines
        self.rules = rules
        self.entries: dict[str, _Entry] = {}
        self.per_level: dict[int, int] = {}
        self.asserts: dict[str, _AssertText] = {}
        self.ring: deque[tuple[int, str, str | None]] = deque(maxlen=_CONTEXT)
        self.tracebacks: dict[str, int] = {}  # process key -> consecutive non-frame lines
        self.last_key = ""
        self.last_rank: str | None = None
        self.pending: dict[tuple[str, str], None] = {}  # unranked items waiting for a rank
        self.open_assert: tuple[str, int, str | None, bool] | None = None
        self.n = 0

    # -- recording --

    def record(
        self,
        text: str,
        reason: str,
        cls: str | None,
        rank: str | None,
        pending: bool,
        line: int | None = None,
    ) -> int:
        imp = IMPORTANCE[reason]
        sig = signature(text)
        entry = self.entries.get(sig)
        if entry is None:
            if self.per_level.get(imp, 0) >= self.max_lines:
                return imp
            shown = text.strip()
            if len(shown) > _MAX_TEXT:
                shown = shown[:_MAX_TEXT] + "..."
            entry = _Entry(shown, sig, cls, reason, imp, line or self.n)
            self.entries[sig] = entry
            self.per_level[imp] = self.per_level.get(imp, 0) + 1
        elif imp < entry.importance:
            if self.per_level.get(imp, 0) < self.max_lines:
                self.per_level[entry.importance] -= 1
                self.per_level[imp] = self.per_level.get(imp, 0) + 1
                entry.importance, entry.reason, entry.cls = imp, reason, cls or entry.cls
        elif imp > entry.importance and reason.startswith("before-"):
            return imp  # already kept for a better reason: context does not count it again
        entry.count += 1
        if rank:
            entry.add_rank(rank)
        elif pending:
            self.pending[("line", sig)] = None
        return imp

    def record_assert(
        self, text: str, kind: str, line: int, rank: str | None, pending: bool
    ) -> None:
        text = text.strip()
        if len(text) < 3:
            return
        item = self.asserts.get(text)
        if item is None:
            if len(self.asserts) >= _MAX_ASSERT_TEXTS:
                return
            item = self.asserts[text] = _AssertText(line)
        item.exact += 1
        item.terminated = item.terminated or kind in ("complete", "interrupted")
        if rank:
            if len(item.ranks) < _MAX_RANKS:
                item.ranks[rank] = None
        elif pending:
            self.pending[("assert", text)] = None

    def attribute_pending(self, rank: str) -> None:
        for kind, key in self.pending:
            if kind == "line" and key in self.entries:
                self.entries[key].add_rank(rank)
            elif (
                kind == "assert"
                and key in self.asserts
                and len(self.asserts[key].ranks) < _MAX_RANKS
            ):
                self.asserts[key].ranks[rank] = None

    # -- one line --

    def feed(self, raw: str) -> None:
        self.n += 1
        line = _clean(raw)
        prefix = _split_prefix(line)
        body = line[prefix.end :]
        text = body.strip()
        own = prefix.end > 0
        key = prefix.key if own else self.last_key
        in_tb = key in self.tracebacks
        rank = prefix.rank if own else (self.last_rank if in_tb else None)
        pending = not own and not in_tb
        best = 99

        if self.open_assert is not None:
            best = min(best, self._close_assert(body, own))
            if best == 0:
                body = body[body.find(_ASSERT_CLOSE) :]
        if not text:
            self._after(own, prefix, best)
            return
        if _SHELL_PROMPT.match(text):
            # a command pasted with its prompt ("$ ssh host 'grep ... Scheduler hit an exception'")
            # names the error it searches for; it is not the error
            self._after(own, prefix, best)
            return

        hits = _api_hits(body)
        for hit_text, cls, reason in hits:
            best = min(best, self.record(hit_text, reason, cls, rank, pending))
        fragment = _ASSERT_CLOSE in body or bool(_FRAGMENT_START.match(text))
        if _ASSERT_OPEN in body:
            for cand, kind in _assert_candidates(body):
                if kind == "truncated":
                    self.open_assert = (cand, self.n, rank, pending)
                else:
                    self.record_assert(cand, kind, self.n, rank, pending)
            best = 0
        elif hits or fragment:
            pass
        elif in_tb and (body[:1].isspace() or text.startswith(('File "', 'File"'))):
            self._after(own, prefix, best)  # a traceback frame
            return
        else:
            best = min(best, self._classify_line(line, text, key, in_tb, rank, pending, prefix))

        traceback = _TRACEBACK in text
        if traceback:
            self.tracebacks.pop(key, None)
            if len(self.tracebacks) >= _MAX_PROCESSES:
                self.tracebacks.pop(next(iter(self.tracebacks)))
            self.tracebacks[key] = 0
        catch_all = "hit an exception" in text
        if catch_all or traceback:
            why = "before-scheduler-exception" if catch_all else "before-traceback"
            for n, ctx_text, ctx_rank in self.ring:
                if self.n - n <= _CONTEXT_REACH:
                    self.record(ctx_text, why, classify(ctx_text), ctx_rank, False, n)
            self.ring.clear()
        elif best == 99 and not fragment and len(text) > 2 and not self.rules.is_noise(text):
            self.ring.append((self.n, line, prefix.rank if own else None))
        self._after(own, prefix, best)

    def _classify_line(
        self,
        line: str,
        text: str,
        key: str,
        in_tb: bool,
        rank: str | None,
        pending: bool,
        prefix: _Prefix,
    ) -> int:
        """Exception, causal warning, known error, ERROR-level line: record the first that fits."""
        r = self.rules
        indented = line[prefix.end : prefix.end + 1].isspace()
        if in_tb:
            if _TRACEBACK not in text and _EXC_TB_END.match(text):
                del self.tracebacks[key]
                return self.record(line, "exception", classify(text), rank, pending)
            if "hit an exception" not in text:
                self.tracebacks[key] += 1
                if self.tracebacks[key] >= 2:  # two non-frame lines: that traceback has ended
                    del self.tracebacks[key]
        if (
            ("Error" in text or "Exception" in text)
            and not indented
            and (_EXC_ANY.search(text) or _EXC_BARE.fullmatch(text))
            and not r.is_noise(text)
        ):
            return self.record(line, "exception", classify(text), rank, pending)
        lowered = text.lower()
        if r.keyword_any.search(lowered):
            for rule in r.warnings:
                if rule.search(text, lowered):
                    return self.record(line, rule.reason, rule.cls, rank, pending)
            for rule in r.errors:
                if rule.search(text, lowered):
                    return self.record(line, rule.reason, classify(text), rank, pending)
        if (
            prefix.level in _ERROR_LEVELS
            and not indented
            and _TRACEBACK not in text
            and not r.is_noise(text)
        ):
            return self.record(line, "error-log", classify(text), rank, pending)
        return 99

    def _close_assert(self, body: str, own: bool) -> int:
        """A truncated assertion continues on the next line when that line closes it."""
        assert self.open_assert is not None
        text, line, rank, pending = self.open_assert
        self.open_assert = None
        close, reopen = body.find(_ASSERT_CLOSE), body.find(_ASSERT_OPEN)
        if not own and close >= 0 and (reopen < 0 or close < reopen):
            self.record_assert(text + body[:close], "complete", line, rank, pending)
            return 0
        self.record_assert(text, "truncated", line, rank, pending)
        return 99

    def _after(self, own: bool, prefix: _Prefix, best: int) -> None:
        if own:
            if self.pending and prefix.rank and best <= IMPORTANCE["scheduler-exception"]:
                self.attribute_pending(prefix.rank)
            self.pending.clear()
            self.last_key, self.last_rank = prefix.key, prefix.rank

    # -- result --

    def result(self) -> Triage:
        if self.open_assert is not None:
            text, line, rank, pending = self.open_assert
            self.record_assert(text, "truncated", line, rank, pending)
        lines = [
            SalientLine(
                e.text, e.signature, e.cls, e.reason, e.count, _sorted_ranks(e.ranks), e.line
            )
            for e in self.entries.values()
        ]
        lines += self._assert_lines()
        lines.sort(key=_decisive_first)
        return Triage(tuple(lines[: self.max_lines]), self.n)

    def _assert_lines(self) -> list[SalientLine]:
        """Group fragments by prefix relation; each group's clean text is its most repeated one."""
        left = dict(self.asserts)
        out = []
        while True:
            terminated = [t for t, a in left.items() if a.terminated]
            if not terminated:
                break

            def related(a: str, b: str) -> bool:
                return a.startswith(b) or b.startswith(a)

            def score(t: str) -> tuple[int, int, int, int]:
                support = sum(a.exact for u, a in left.items() if related(t, u))
                return (left[t].exact, support, -len(t), -left[t].line)

            canon = max(terminated, key=score)
            group = [u for u in left if related(canon, u)]
            ranks: dict[str, None] = {}
            for u in group:
                ranks.update(left[u].ranks)
            text = f"{_ASSERT_OPEN}{canon}{_ASSERT_CLOSE}."
            out.append(
                SalientLine(
                    text=text,
                    signature=signature(text),
                    cls=classify(text),
                    reason="assertion",
                    count=sum(left[u].exact for u in group),
                    ranks=_sorted_ranks(ranks),
                    line=min(left[u].line for u in group),
                )
            )
            for u in group:
                del left[u]
        return out


# a kernel assertion, a pasted response and a known causal warning are kept for what they say
_NEVER_BOILERPLATE = frozenset({"assertion", "api-response", "model-output", "causal-warning"})


def _decisive_first(line: SalientLine) -> tuple[bool, float, bool, float, int]:
    """Order of the salient lines: error lines before context lines; framework boilerplate (lines
    whose words occur in failures of every kind, ``agent.informative``) moves behind the causal
    warnings (a kernel assertion, a pasted response or a causal warning is never boilerplate);
    then importance (``IMPORTANCE``), classified lines first, the more informative line first,
    then first appearance."""
    from agent.informative import is_boilerplate, line_informativeness

    info = line_informativeness(line.signature)
    importance = float(IMPORTANCE[line.reason])
    if line.reason not in _NEVER_BOILERPLATE and is_boilerplate(line.signature, info):
        importance = max(importance, IMPORTANCE["causal-warning"] + 0.5)
    context = line.reason.startswith("before-")
    return (context, importance, line.cls is None, -round(info, 1), line.line or 0)


def _sorted_ranks(ranks: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(ranks, key=_rank_key))


def triage(lines: Iterable[str], *, max_lines: int = 40) -> Triage:
    """The salient lines of a log, de-duplicated by signature, most important first.

    Streams: memory stays bounded whatever the length of ``lines``. When ``lines`` is a
    ``LogStream`` (``read_input`` of a file or stdin), a cheap keyword scan over each chunk picks the
    lines the full parse needs (``LogStream.segments``) and the rest are only counted.
    """
    if max_lines < 1:
        raise ValueError("max_lines must be at least 1")
    r = rules()
    t = _Triager(max_lines, r)
    segments = getattr(lines, "segments", None)
    if callable(segments):
        # a log file or stdin: boring stretches arrive as a count of lines, not as lines
        for item in segments(r):
            if isinstance(item, int):
                t.n += item
            else:
                t.feed(item)
        return t.result()
    for raw in lines:
        t.feed(raw)
    return t.result()


# --- input --------------------------------------------------------------------------------


def read_input(text_or_dash: str | None, log: Path | None, stdin: IO[Any]) -> Iterable[str]:
    """The lines to triage: the argument text, the ``--log`` file, or stdin for ``-`` (streamed).

    Raises ``InputError`` for a missing file, empty input, or a binary file. Bytes that are not
    UTF-8 in an otherwise text log are replaced, not fatal.
    """
    if log is not None and text_or_dash is not None:
        raise InputError("give the log either as TEXT (or - for stdin) or with --log, not both")
    if log is not None:
        if not log.exists():
            raise InputError(f"--log {log}: no such file")
        if not log.is_file():
            raise InputError(f"--log {log}: not a file")
        try:
            fh = log.open("rb")
        except OSError as exc:
            raise InputError(f"--log {log}: cannot read ({exc.strerror})") from None
        try:
            head = fh.read(_SNIFF)
        except OSError as exc:
            fh.close()
            raise InputError(f"--log {log}: cannot read ({exc.strerror})") from None
        try:
            _check_head(head, str(log))
        except InputError:
            fh.close()
            raise
        return LogStream(head, fh, close=True)
    if text_or_dash is None:
        raise InputError("no input: pass TEXT, - to read stdin, or --log FILE")
    if text_or_dash == "-":
        buffer = getattr(stdin, "buffer", None)
        if buffer is None:  # a text stream without bytes underneath (tests, notebooks)
            head_text = stdin.read(_SNIFF)
            _check_head(head_text.encode("utf-8", "replace"), "stdin")
            return _split_lines(_text_chunks(head_text, stdin))
        head = buffer.read(_SNIFF)
        _check_head(head, "stdin")
        return LogStream(head, buffer, close=False)
    if not text_or_dash.strip():
        raise InputError(EMPTY_INPUT)
    return text_or_dash.splitlines()


def _check_head(head: bytes, name: str) -> None:
    if not head.strip():
        raise InputError(EMPTY_INPUT)
    if _looks_binary(head):
        raise InputError(f"input looks binary ({name}); pass a text log")


def _looks_binary(head: bytes) -> bool:
    """NUL bytes, or more than 30% control characters and undecodable bytes."""
    if b"\x00" in head:
        return True
    text = head.decode("utf-8", errors="replace")
    bad = sum(
        1 for c in text if c == "\ufffd" or c == "\x7f" or (c < " " and c not in "\t\n\r\f\b\x1b")
    )
    return bad > 0.3 * len(text)


_AFTER = 2  # lines parsed after a candidate line (a split assertion, the end of a traceback)
# generic markers of a line the full parse may keep (case-insensitive); the keywords of
# data/triage.json are added to them (see ``prefilter_markers``). A new kind of salient line
# that none of these finds needs its marker here: tests/test_triage.py checks that the
# prefiltered triage equals the full parse on every fixture log.
_MARKERS = (
    "error", "exception", "assert", "traceback", "critical", "fatal",
    "!!!!", "????", "\ufffd\ufffd\ufffd\ufffd",
    *(f'"{name}"' for name in (
        "content", "reasoning_content", "text", "output", "generated_text", "response", "completion"
    )),
    # glog levels E and F: "[E1219 10:00:00.1 123 file.cc:1] ", "[E ProcessGroupNCCL.cpp:563] "
    *(f"[{level}{after}" for level in "ef" for after in " 0123456789"),
)  # fmt: skip


@lru_cache(maxsize=4)
def prefilter_markers(r: Rules) -> tuple[str, ...]:
    """Lower-case strings of which a line must hold one for the full parse to keep it (a line
    without any can only be context, which ``LogStream.segments`` passes around each match).

    A keyword of one word that log prefixes also hold (``enginecore`` in ``(EngineCore_DP0
    pid=1)``) is replaced by the literal its rule's pattern starts with (``enginecore ``)."""
    out: set[str] = set(_MARKERS)
    for rule in (*r.warnings, *r.errors):
        for keyword in rule.keywords:
            lead = re.match(r"(?:\\b)?([\w ]+)", rule.rx.pattern)
            literal = lead.group(1).lower() if lead else ""
            if re.fullmatch(r"[a-z0-9]+", keyword) and literal.startswith(keyword):
                out.add(literal)
            else:
                out.add(keyword)
    return tuple(sorted(out))


class LogStream:
    """A log read from a file or a byte stream. Iterating gives every line (without its newline;
    a line longer than 64 KiB comes out in pieces, cut at a character boundary). ``segments`` gives only the lines the triage
    parse needs, and for the others how many there were: a keyword scan (``grep -F``, which reads
    at disk speed) picks each line holding a marker with the ``_CONTEXT_REACH`` lines before it
    and ``_AFTER`` after it. Memory stays bounded whatever the line lengths."""

    def __init__(self, head: bytes, stream: IO[bytes], *, close: bool) -> None:
        self._head = head
        self._stream = stream
        self._close = close

    def __iter__(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        rest = ""
        try:
            for data in _cut_chunks(self):
                *lines, rest = (rest + decoder.decode(data)).split("\n")
                yield from lines
            rest += decoder.decode(b"", final=True)
            if rest:
                yield rest
        finally:
            self.close()

    def close(self) -> None:
        if self._close:
            self._stream.close()

    def segments(self, r: Rules) -> Iterator[str | int]:
        """Lines to parse (``str``) and counts of lines passed over (``int``), in order. Without
        a ``grep`` on the PATH every line is parsed."""
        import shutil

        grep = shutil.which("grep")
        if grep is None:
            yield from self
            return
        yield from _grep_segments(grep, self, r)


def _grep_segments(grep: str, log: LogStream, r: Rules) -> Iterator[str | int]:
    import os
    import subprocess
    import threading

    args = [grep, "-a", "-n", "-i", "-F", "-B", str(_CONTEXT_REACH), "-A", str(_AFTER)]
    for marker in prefilter_markers(r):
        args += ["-e", marker]
    proc = subprocess.Popen(
        args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "LC_ALL": "C"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    fed = {"lines": 0, "error": None}

    def feed_grep() -> None:
        try:
            fed["lines"] = _copy_cutting_long_lines(log, proc.stdin)
        except (OSError, ValueError) as exc:  # a broken pipe, an unreadable stream
            fed["error"] = exc
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    writer = threading.Thread(target=feed_grep, daemon=True)
    writer.start()
    last = 0
    try:
        for raw in proc.stdout:
            digits = 0
            while digits < len(raw) and 48 <= raw[digits] <= 57:
                digits += 1
            if not digits:  # "--" between groups
                continue
            number = int(raw[:digits])
            if number > last + 1:
                yield number - last - 1
            last = number
            yield raw[digits + 1 :].rstrip(b"\n").decode("utf-8", errors="replace")
    finally:
        proc.stdout.close()
        writer.join()
        proc.wait()
        log.close()
    if fed["error"] is not None:
        raise InputError(f"cannot read the log ({fed['error']})")
    if proc.returncode not in (0, 1):
        raise DeployKBError(f"{grep} failed (exit {proc.returncode}) while scanning the log")
    if fed["lines"] > last:
        yield fed["lines"] - last


def _copy_cutting_long_lines(log: LogStream, out: IO[bytes]) -> int:
    """Copy the log into ``out`` (see ``_cut_chunks``); returns the number of lines (the last
    one may lack its newline)."""
    lines = 0
    ends_with_newline = True
    for data in _cut_chunks(log):
        lines += data.count(b"\n")
        ends_with_newline = data.endswith(b"\n")
        out.write(data)
    return lines + (0 if ends_with_newline else 1)


def _cut_chunks(log: LogStream) -> Iterator[bytes]:
    """The log's bytes with a newline added wherever none came for 64 KiB (at a UTF-8 character
    boundary): no line is longer, whichever way the log is read."""
    run = 0  # bytes since the last newline
    chunk = log._head
    while chunk:
        pieces = []
        pos = 0
        while pos < len(chunk):
            room = _MAX_LINE - run
            newline = chunk.rfind(b"\n", pos, pos + room)
            if newline >= 0:
                run, pos = 0, newline + 1
            elif len(chunk) - pos < room:
                run += len(chunk) - pos
                break
            else:
                cut = pos + room
                while cut > pos and chunk[cut] & 0xC0 == 0x80:
                    cut -= 1
                cut = cut if cut > pos else pos + room
                pieces.append(chunk[:cut] + b"\n")
                chunk, pos, run = chunk[cut:], 0, 0
        pieces.append(chunk)
        yield b"".join(pieces)
        chunk = log._stream.read(_CHUNK_SCAN)


_CHUNK_SCAN = 1 << 20  # bytes copied to the scanner at a time


def _text_chunks(head: str, stream: IO[str]) -> Iterator[str]:
    yield head
    while chunk := stream.read(_CHUNK):
        yield chunk


def _split_lines(chunks: Iterable[str]) -> Iterator[str]:
    """Lines without their newline; a line longer than 64 KiB comes out in pieces."""
    buf = ""
    for chunk in chunks:
        buf += chunk
        if "\n" in buf:
            *complete, buf = buf.split("\n")
            for line in complete:
                if len(line) <= _MAX_LINE:
                    yield line
                else:
                    yield from (line[i : i + _MAX_LINE] for i in range(0, len(line), _MAX_LINE))
        while len(buf) > _MAX_LINE:
            yield buf[:_MAX_LINE]
            buf = buf[_MAX_LINE:]
    if buf:
        yield buf


def plain_text(text: str) -> str:
    """The words of a pasted report without what a log wraps them in: log prefixes (timestamps,
    levels, process and rank tags), ANSI colours and the install prefix of file paths (up to
    ``site-packages/``; ``vllm/attention/layer.py`` stays: it names the code). For the keyword
    and vector searches, where repeated prefixes and install paths are words that tell no failure
    from another."""
    out = []
    for raw in text.splitlines():
        s = _clean(raw)
        s = s[_split_prefix(s).end :]
        s = _DIRS.sub("", s)
        if s.strip():
            out.append(s.strip())
    return "\n".join(out)


_DIRS = re.compile(r"[^\s\"'(]*?(?:site|dist)-packages/")
