"""Property-based tests (hypothesis): whatever the input, only documented errors escape.

The finding parser raises ``FindingError`` and nothing else; ``lint`` reports problems and never
raises; the command parser raises ``CommandParseError`` (an ``InputError``) and nothing else;
triage and redaction never raise; a secret put anywhere in a line never survives redaction;
what any output shows holds no control character but newline and tab.

``DEPLOYKB_FUZZ_EXAMPLES`` is the number of examples in all, shared equally by the properties
(default 480: 80 each). The soak, the same line in the README:

    DEPLOYKB_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest -q tests/test_properties.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.errors import CommandParseError, FindingError

REPO = Path(__file__).resolve().parent.parent
PROPERTIES = 6  # the tests below decorated with @FUZZ (test_the_soak_is_the_documented_total)
TOTAL = int(os.environ.get("DEPLOYKB_FUZZ_EXAMPLES", str(80 * PROPERTIES)))
EXAMPLES = -(-TOTAL // PROPERTIES)  # each property's share, rounded up: the total is at least met
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="DEPLOYKB_FUZZ_EXAMPLES" not in os.environ,  # the default run is repeatable
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

SHIPPED = sorted(p.read_text() for p in (REPO / "findings").glob("*.md") if p.name != "README.md")
# what breaks parsers: YAML syntax, aliases and tags, control characters, deep nesting, quotes
TOKENS = [
    "[", "]", "{", "}", "&a ", "*a", "!!python/object:os.system ", "!!binary ", "!!int ",
    "!!float ", "<<: ", "\x1b", "\x00", "\t", ":", ": ", " - ", "---\n", '"', "'", "|", ">", "#",
    "%YAML 1.1\n", "? ", "\n  ", "\x85", "\u2028", "\ufeff", "~", "null", "@", "`", "1e999",
    "0x1F", "\\", "\r", "\r\n", "```", "~~~", "## ", "### ", "> ", "[" * 200, "{" * 200,
    "- " * 200, "id: x\n", "status: works\n", "symptoms:\n  - class: crash\n    text: x\n",
    "fix:\n  add: [--x]\n", "2026-13-45", "9" * 400,
]  # fmt: skip


@st.composite
def mutated_finding(draw) -> str:
    text = draw(st.sampled_from(SHIPPED))
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, len(text)))
        op = draw(st.integers(0, 3))
        if op == 0:
            text = text[:pos] + draw(st.sampled_from(TOKENS)) + text[pos:]
        elif op == 1:
            text = text[:pos] + text[pos + draw(st.integers(1, 40)) :]
        elif op == 2:
            text = text[:pos] + draw(st.text(max_size=20)) + text[pos:]
        else:
            start = draw(st.integers(0, len(text)))
            text = text[:pos] + text[start : start + 60] + text[pos:]
    return text


yaml_scalar = st.one_of(
    st.text(max_size=30), st.integers(), st.floats(), st.booleans(), st.none(),
    st.sampled_from(["works", "broken", "2026-02-19", "sm120", "--tp 8", "crash"]),
)  # fmt: skip
yaml_value = st.recursive(
    yaml_scalar,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KEYS = ["id", "title", "status", "date", "model", "hardware", "framework", "symptoms", "fix",
        "sources", "alternatives", "tried_without_effect", "failing_command", "tags", "related",
        "root_cause", "quantization", "architecture", "results"]  # fmt: skip


@st.composite
def structured_finding(draw) -> str:
    data = draw(st.dictionaries(st.sampled_from(KEYS), yaml_value, max_size=10))
    front = json.dumps(data, ensure_ascii=draw(st.booleans()))  # JSON is YAML
    return f"---\n{front}\n---\n\n{draw(st.text(max_size=40))}\n"


@FUZZ
@given(st.one_of(mutated_finding(), structured_finding(), st.text(max_size=300)))
def test_finding_parser_raises_only_finding_error(text):
    from agent.checks import lint_text
    from kb.parse import parse_text

    try:
        parse_text(text, "findings/x.md")
    except FindingError:
        pass
    lint_text(text, "findings/x.md")  # problems are returned, never raised


COMMAND_WORDS = [
    "python", "-m", "sglang.launch_server", "vllm", "serve", "trtllm-serve", "docker", "run",
    "--gpus", "all", "--model-path", "--model", "nvidia/GLM-5-NVFP4", "--tp", "8", "--tp-size",
    "--quantization", "fp8", "--kv-cache-dtype", "--attention-backend", "triton", "=", "--x=y",
    "-O3", "-O.cudagraph_mode=PIECEWISE", "--compilation-config", '{"level": 3}', "'", '"',
    "\\\n", "\n", "A=1", "export", "&&", "|", ";", "$(cat x)", "--", "-", "--no-", "true",
    "--speculative-algorithm", "EAGLE3", "--json-model-override-args", "{", "}", "\\",
]  # fmt: skip


@FUZZ
@given(
    st.one_of(
        st.lists(st.sampled_from(COMMAND_WORDS), max_size=25).map(" ".join),
        st.text(max_size=200),
    ),
    st.sampled_from([None, "sglang", "vllm", "tensorrt-llm"]),
)
def test_command_parser_raises_only_command_parse_error(text, framework):
    from agent.flags import parse_command

    try:
        parse_command(text, framework)
    except CommandParseError:
        pass


LOG_LINES = [
    line
    for p in sorted((REPO / "tests" / "fixtures" / "logs").glob("*.log"))
    for line in p.read_text(errors="replace").splitlines()[:200]
]


@FUZZ
@given(st.lists(st.one_of(st.sampled_from(LOG_LINES), st.text(max_size=120)), max_size=60))
def test_triage_never_raises_and_keeps_its_bounds(lines):
    from agent.logs import triage

    result = triage(lines, max_lines=10)
    assert len(result.lines) <= 10
    assert result.total_lines == len(lines)
    assert all(line.count >= 1 for line in result.lines)


CORPUS = [
    json.loads(x)
    for x in (REPO / "eval" / "redaction" / "secrets.jsonl").read_text().splitlines()
    if x
]


@FUZZ
@given(
    st.sampled_from(CORPUS),
    st.text(max_size=60),
    st.text(max_size=60),
    st.sampled_from([" ", "\n", "\t", " | ", "; ", "'", '"', "(", "= "]),
)
def test_a_secret_anywhere_in_a_line_is_redacted(case, before, after, sep):
    from kb.redact import find_secrets, redact

    out, _ = redact(before + sep + case["line"] + sep + after)
    for secret in case["secrets"]:
        assert secret not in out
    assert find_secrets(out) == ()  # what was written passes lint


@FUZZ
@given(st.text(max_size=400))
def test_redaction_never_raises_and_is_stable(text):
    from kb.redact import redact

    out, found = redact(text)
    assert redact(out)[0] == out
    assert all(r.line is not None and r.line >= 1 for r in found)


@FUZZ
@given(
    st.one_of(
        st.text(max_size=200),
        st.lists(
            st.sampled_from(["\x1b", "\x07", "\x9b", "\x00", "\r", "\r\n", "\n", "\t", "]0;x", "[2J",
                             "\u2028", "\x85", "10.1.1.1", "hf_abcdef12345", "a"]),
            max_size=40,
        ).map("".join),
    )
)  # fmt: skip
def test_shown_text_holds_no_control_character_and_is_stable(text):
    import re

    from kb.redact import neutralise, safe_text

    shown = safe_text(text)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", shown)
    # written out once for good (a second redaction pass may mask more: a '\r' written out no
    # longer separates a version cue from its number; redacting first keeps every secret found)
    assert neutralise(shown) == shown


def test_the_soak_is_the_documented_total():
    """One soak command, in this docstring and the README, runs the total it says across every
    property: PROPERTIES counts them."""
    import inspect
    import sys

    module = sys.modules[__name__]
    fuzzed = [f for name, f in inspect.getmembers(module) if name.startswith("test_")
              and getattr(f, "hypothesis", None) is not None]  # fmt: skip
    assert len(fuzzed) == PROPERTIES
    command = "DEPLOYKB_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest -q tests/test_properties.py"
    assert command in (__doc__ or "")
    assert command in (REPO / "README.md").read_text()
    assert PROPERTIES * -(-100_000 // PROPERTIES) >= 100_000
