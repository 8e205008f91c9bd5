"""The records that cross module boundaries: small frozen dataclasses, one model family.

Everything that leaves a parser, the store, the matcher or the flag differ is one of these.
Sequences are tuples so that records stay hashable and immutable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

STATUSES = ("works", "works-with-flags", "broken", "partial")

SYMPTOM_CLASSES = (
    "nan",
    "garbage-output",
    "empty-output",
    "accuracy",
    "device-assert",
    "illegal-memory-access",
    "crash",
    "hang",
    "oom",
    "slow",
    "warning",
)


@dataclass(frozen=True)
class Symptom:
    """One verbatim error line (or a short description for silent failures) and its class."""

    cls: str
    text: str
    line: int | None = None  # line in the source file, when known


@dataclass(frozen=True)
class Hardware:
    gpu: str | None = None  # e.g. "NVIDIA RTX PRO 6000 Blackwell"
    count: int | None = None  # GPUs used by the deployment
    sm: str | None = None  # normalised "sm120"
    interconnect: str | None = None  # "PCIe", "NVLink", ...


@dataclass(frozen=True)
class Framework:
    name: str | None = None  # "sglang", "vllm", "tensorrt-llm", or a fork's name
    version: str | None = None  # version, commit, image tag or free text


@dataclass(frozen=True)
class Fix:
    """What changed to make it work. Strings are kept exactly as the source wrote them."""

    add: tuple[str, ...] = ()  # flags to add (or set), with their value
    # a setting whose value changed, old value first: "--mem-fraction-static 0.9 -> 0.82",
    # "NCCL_ALGO=Ring -> Tree" (see ``change_sides``)
    change: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()  # flags to drop
    env: tuple[str, ...] = ()  # "NAME=value"
    pins: tuple[str, ...] = ()  # "pkg==1.2", "pkg>=1.2", "org/image:tag"
    note: str | None = None  # for alternatives: what this alternative is
    confirmed: bool | None = None  # False: the source proposes it but nobody reported it working

    def is_empty(self) -> bool:
        return not (self.add or self.change or self.remove or self.env or self.pins)

    @property
    def changed_to(self) -> tuple[str, ...]:
        """Each ``change`` entry as the setting it ends with: ``--mem-fraction-static 0.82``."""
        return tuple(change_sides(c)[1] for c in self.change)


_CHANGE_ARROW = re.compile(r"\s+(?:->|→)\s+")


def change_sides(entry: str) -> tuple[str, str]:
    """A ``fix.change`` entry -> the setting before and after, each as a fix item is written:
    ``"--mem-fraction-static 0.9 -> 0.82"`` -> ``("--mem-fraction-static 0.9",
    "--mem-fraction-static 0.82")``; ``"--dtype=half -> bfloat16"`` keeps the ``=``;
    ``"NCCL_ALGO=Ring -> Tree"`` -> ``("NCCL_ALGO=Ring", "NCCL_ALGO=Tree")``. Raises
    ``ValueError`` for an entry of another shape."""
    parts = _CHANGE_ARROW.split(entry.strip())
    if len(parts) != 2 or not parts[1].strip():
        raise ValueError(entry)
    before, new = parts[0].strip(), parts[1].strip()
    m = _FLAG_BEFORE.match(before) or _ENV_BEFORE.match(before)
    if m is None:
        raise ValueError(entry)
    return before, f"{m.group('name')}{m.group('sep')}{new}"


def shown_change(entry: str) -> str:
    """A ``fix.change`` entry as people read it: ``--mem-fraction-static 0.9 → 0.82``."""
    return _CHANGE_ARROW.sub(" → ", entry.strip(), count=1)


# "--flag OLD" or "--flag=OLD", and "NAME=OLD": the setting's name and how its value is joined
_FLAG_BEFORE = re.compile(r"^(?P<name>--?[A-Za-z0-9][\w.-]*)(?P<sep>=|\s+)\S")
_ENV_BEFORE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<sep>=)\S")


@dataclass(frozen=True)
class Performance:
    throughput_tok_s: float | None = None
    concurrency: int | None = None
    baseline: str | None = None
    notes: str | None = None

    def is_empty(self) -> bool:
        return all(
            v is None for v in (self.throughput_tok_s, self.concurrency, self.baseline, self.notes)
        )


COMMAND_PROVENANCES = ("quoted", "reconstructed")


@dataclass(frozen=True)
class Check:
    """The record of a second reader's check of a finding against its sources."""

    date: str  # YYYY-MM-DD
    against: tuple[str, ...] = ()  # the sources compared (URLs, citations)
    note: str | None = None  # what was compared, what was corrected, what could not be verified


@dataclass(frozen=True)
class Finding:
    """One deployment case: what ran where, what broke, why, and what fixed it."""

    id: str
    title: str
    status: str
    date: str | None = None  # ISO "YYYY-MM-DD" or "YYYY-MM"
    model: str | None = None  # Hugging Face id (or the name the source used)
    architecture: str | None = None  # config.json model_type
    quantization: str | None = None
    hardware: Hardware = field(default_factory=Hardware)
    framework: Framework = field(default_factory=Framework)
    symptoms: tuple[Symptom, ...] = ()
    root_cause: str | None = None
    fix: Fix = field(default_factory=Fix)
    alternatives: tuple[Fix, ...] = ()
    failing_command: str | None = None
    working_command: str | None = None
    tried_without_effect: tuple[str, ...] = ()
    performance: Performance = field(default_factory=Performance)
    sources: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    components: tuple[str, ...] = ()  # failure mechanism: ids from data/components.json
    command_provenance: str | None = None  # "quoted" or "reconstructed" (the launch commands)
    checked: Check | None = None  # the second reader's check against the sources
    body: str = ""  # the Markdown story (everything after the front matter)
    path: str | None = None  # file it came from
    line: int | None = None  # line of its start in that file (1 for front-matter files)


@dataclass(frozen=True)
class ParseWarning:
    path: str
    line: int | None
    message: str
    code: str  # what kind: "id-mismatch", "yaml-comment", "free-form-missing"

    def __str__(self) -> str:
        from kb.errors import located

        return located(self.path, self.line, self.message)


@dataclass(frozen=True)
class ParseResult:
    findings: tuple[Finding, ...]
    warnings: tuple[ParseWarning, ...] = ()


# --- launch commands and flag diffs (agent side, but they cross into kb export and add) ---


@dataclass(frozen=True)
class Flag:
    """One parsed launch option. ``name`` is canonical (registry) when known, else as written."""

    name: str  # canonical, e.g. "--moe-runner-backend"
    value: str | None  # None for a boolean switch
    written: str  # as the user wrote it, e.g. "--moe_runner_backend=flashinfer_cutlass"


@dataclass(frozen=True)
class LaunchConfig:
    """A parsed launch command: its flags canonical, read once through the flag registry."""

    framework: str | None  # "sglang", "vllm", "tensorrt-llm" or None when unknown
    program: str | None  # e.g. "python3 -m sglang.launch_server", "vllm serve"
    model: str | None  # --model-path / positional model
    flags: tuple[Flag, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # (NAME, value) as written
    raw: str = ""
    image: str | None = None  # the image of a ``docker run ... image:tag CMD`` command
    # where each flag and variable stands in ``raw`` (an ``agent.flags.layout.Layout``), set by the
    # parser; a config built otherwise, or rebuilt with ``dataclasses.replace``, has none
    layout: object | None = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True)
class FlagChange:
    kind: str  # "flag" | "env" | "pin"
    action: str  # "add" | "change" | "remove"
    name: str
    value: str | None = None  # the new value (add/change) or the removed one
    old: str | None = None  # the previous value for "change"
    text: str = ""  # human text, e.g. "--fp8-gemm-backend cutlass"
    note: str | None = None  # e.g. "translated from sglang --disable-cuda-graph"


@dataclass(frozen=True)
class ArchTraits:
    """What a model's config.json says about its architecture."""

    model_type: str | None = None
    traits: tuple[str, ...] = ()  # e.g. ("moe", "mla", "dsa", "hybrid-linear-attention", "mtp")
    details: tuple[tuple[str, str], ...] = ()  # ("num_experts", "256"), ...
    quantization: str | None = None  # e.g. "nvfp4", "fp8"
    scale_format: str | None = None  # e.g. "ue8m0"


@dataclass(frozen=True)
class QueryContext:
    """What the user told us (or we detected) about the deployment in trouble."""

    model: str | None = None
    arch: ArchTraits | None = None
    quantization: str | None = None
    gpu: str | None = None
    sm: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    command: LaunchConfig | None = None
    tried: tuple[str, ...] = ()  # what the user already tried without effect (--tried), as written
    gpu_count: int | None = None  # GPUs in use, when the options say (``--gpu "8x B200"``)


@dataclass(frozen=True)
class Match:
    finding: Finding
    score: float
    reasons: tuple[str, ...] = ()
    signals: tuple[tuple[str, float], ...] = ()  # per-retriever scores, for the evaluation


# --- log triage ---


@dataclass(frozen=True)
class SalientLine:
    """One line worth a human's attention, extracted from a (possibly huge) server log."""

    text: str  # cleaned text (fragments re-joined, rank prefix kept as first seen)
    signature: str  # volatile tokens masked: stable across runs, ranks and machines
    cls: str | None = None  # a SYMPTOM_CLASSES value when recognisable
    reason: str = ""  # why it was kept: "assertion", "exception", "before-scheduler-exception", "causal-warning", ...
    count: int = 1  # how many times it appeared (across ranks)
    ranks: tuple[str, ...] = ()  # e.g. ("TP0", "TP5")
    line: int | None = None  # first line number in the input


@dataclass(frozen=True)
class Triage:
    lines: tuple[SalientLine, ...]
    total_lines: int = 0


# --- the answer to `ask` ---


@dataclass(frozen=True)
class Proposal:
    """A matched past case and what to change in the user's deployment because of it."""

    match: Match
    changes: tuple[FlagChange, ...] = ()
    command: str | None = None  # the corrected full command, when the user gave one
    translated_from: str | None = None  # the finding's framework, when changes were translated
    alternatives: tuple[tuple[FlagChange, ...], ...] = ()
    dead_ends_in_command: tuple[str, ...] = ()  # tried without effect last time, yet in yours
    not_carried: tuple[
        str, ...
    ] = ()  # parts of the case's fix with no equivalent in your framework
    already_tried: tuple[FlagChange, ...] = ()  # its changes you passed with --tried (no effect)


@dataclass(frozen=True)
class WorkingDeployment:
    """A recorded deployment that works, as the reference a failing one is compared against."""

    finding: Finding
    command: str  # the working command as recorded (or reconstructed, see ``provenance``)
    provenance: str  # "quoted", "reconstructed", or "flags" (only the flags its record lists)
    reasons: tuple[str, ...] = ()  # why it is near: same GPU generation, shared traits, ...


@dataclass(frozen=True)
class Candidate:
    """One behavioural difference between the user's command and a working one."""

    change: FlagChange  # what to do to the user's command to match the working one
    tried_by: tuple[str, ...] = ()  # "you" and/or ids of matched cases that tried it without effect
    trait: str | None = None  # the architecture-trait difference that explains it, as a sentence
    fixed: tuple[str, ...] = ()  # ids of cases of the same kind of failure this change fixed
    failed: tuple[str, ...] = ()  # ids of cases of the same kind where it was tried without effect
    origin: str = "diff"  # "diff" (a difference from the working command) or "evidence" (see why)
    why: str | None = None  # for "evidence": what ties it to the working deployment


@dataclass(frozen=True)
class PlanStep:
    step: int
    changes: tuple[FlagChange, ...]
    why: str
    expect: str
    command: str | None = None  # the user's command with this step and the ones before applied


@dataclass(frozen=True)
class Differential:
    """The user's deployment against the nearest working one, and what to try in which order."""

    against: WorkingDeployment
    leads: bool  # shown before the best match: its fix is in place, tried, or unresolved
    lead_reason: str | None
    descriptive: tuple[FlagChange, ...] = ()  # model, layout, endpoint, parsers: shown apart
    candidates: tuple[Candidate, ...] = ()
    plan: tuple[PlanStep, ...] = ()
    tried: tuple[str, ...] = ()  # the user's and the matched cases' dead ends, merged
    notes: tuple[str, ...] = ()  # what could not be compared
    others: tuple[WorkingDeployment, ...] = ()  # the next nearest working deployments
    # your flags and variables a record of flags (not a command) does not list: unknown, not tried
    unlisted: tuple[FlagChange, ...] = ()


@dataclass(frozen=True)
class Answer:
    confident: bool
    proposals: tuple[Proposal, ...]
    triage: Triage
    context: QueryContext
    warnings: tuple[str, ...] = ()
    verdict: str = ""  # one sentence: why confident, or why not
    differential: Differential | None = None  # with a current command and a working deployment
    notices: tuple[str, ...] = ()  # what was read from the text rather than given as options
    track: TrackRecord | None = None  # how often a top answer this probable was right, out-of-fold


@dataclass(frozen=True)
class TrackRecord:
    """Of the training reports whose out-of-fold top answer had a probability in [low, high), how
    many there were and how many of those top answers were a right case (a negative's never is)."""

    low: float
    high: float
    right: int
    reports: int


@dataclass(frozen=True)
class Redaction:
    kind: str  # "ipv4", "ipv6", "email", "ssh-user-host", "hostname", "hf-token", "openai-key", ...
    original: str
    replacement: str
    line: int | None = None

    def preview(self) -> str:
        """What to show a person of what was replaced: its length, nothing of it. Addresses too:
        a report goes into CI logs and pasted issues as readily as a token does."""
        return f"…({len(self.original)} chars)"

    @property
    def placeholder(self) -> str:
        """The placeholder(s) the value became (``<redacted>``, ``<user>@<host>``,
        ``<host>:30000``), without the words kept around it (``docker login -u bob -p`` keeps
        the user name in ``replacement`` until a later rule takes it)."""
        if _PLACEHOLDERS_ONLY.fullmatch(self.replacement):
            return self.replacement
        return " ".join(_PLACEHOLDER.findall(self.replacement)) or "<redacted>"


_PLACEHOLDER = re.compile(r"<[a-z0-9-]+>")
_PLACEHOLDERS_ONLY = re.compile(r"(?:<[a-z0-9-]+>|[@:~]|\d{1,5}|/home/|/Users/|C:\\Users\\)+")
