"""Shell launch commands in, canonical records out: each flag is named through the registry here.

The forms read (a program and its flags, a bare list of flags, the variables set around them)
are listed in :mod:`agent.flags.launch`. The record keeps where every part stands
(:class:`agent.flags.layout.Layout`), so that applying a change edits the user's own text
without reading it again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.flags.layout import EnvSpan, FlagSpan, Layout, ModelArgs, launch_config
from agent.flags.programs import Program, docker_envs, docker_run, find_program
from agent.flags.tokens import (
    ASSIGN,
    REDIRECT,
    Token,
    flag_like,
    line_indent,
    snippet,
    statements,
    tokenize,
)
from agent.registry import Registry, bool_literal
from kb.errors import CommandParseError
from kb.frameworks import normalise_framework
from kb.records import Flag, LaunchConfig

# ``--model_args`` keys that lm-evaluation-harness's vLLM wrapper keeps for itself instead of
# passing to the engine (lm_eval/models/vllm_causallms.py).
_LM_EVAL_OWN_ARGS = frozenset(
    {
        "add_bos_token",
        "prefix_token_id",
        "max_gen_toks",
        "max_batch_size",
        "max_length",
        "lora_local_path",
    }
)

Statements = list[tuple[list[Token], "str | None"]]


def is_model_flag(canon: str, fw: str | None) -> bool:
    return (fw == "sglang" and canon == "--model-path") or (fw == "vllm" and canon == "--model")


# --- flags -----------------------------------------------------------------------------------


def flag_spans(
    text: str, args: list[Token], fw: str | None, reg: Registry, prev_end: int
) -> tuple[list[FlagSpan], list[Token]]:
    """Flags (with their values) and leftover positional tokens, in order."""
    items: list[FlagSpan] = []
    positionals: list[Token] = []
    i = 0
    while i < len(args):
        w = args[i].text
        if REDIRECT.match(w):
            i += 1 if (w.endswith(tuple("0123456789")) or len(w) > 2 and ">" in w[:-1]) else 2
        elif not flag_like(w):
            positionals.append(args[i])
            prev_end = args[i].end
            i += 1
        else:
            item, used = _flag_span(text, args, i, fw, reg, prev_end)
            items.append(item)
            prev_end = item.end
            i += used
    return items, positionals


@dataclass(frozen=True)
class _Name:
    written: str
    canonical: str
    value: str | None  # given in the same token (--x=1), or implied (--no-x: "false")
    whole: bool  # nothing more to consume: written --x=1, -O3 or --no-x
    takes_value: bool | None
    nargs: str | None


def _read_name(word: str, fw: str | None, reg: Registry) -> _Name:
    if fw == "vllm" and re.fullmatch(r"-O\d", word):
        return _Name(word, "--optimization-level", word[2:], True, True, None)
    name, value, whole = word, None, False
    if "=" in word and (word.startswith("--") or len(word.split("=", 1)[0]) > 1):
        name, value = word.split("=", 1)
        whole = True
    negated = reg.negation(name, fw) if fw else None
    if negated:
        return _Name(name, negated, "false", True, False, None)
    return _Name(
        name,
        reg.canonical(name, fw),
        value,
        whole,
        reg.takes_value(name, fw) if fw else None,
        reg.nargs(name, fw) if fw else None,
    )


def _flag_span(
    text: str, args: list[Token], i: int, fw: str | None, reg: Registry, prev_end: int
) -> tuple[FlagSpan, int]:
    """The flag at ``args[i]`` and how many tokens it takes (its values included)."""
    name = _read_name(args[i].text, fw, reg)
    consumed = [args[i]]
    value = name.value
    if not name.whole:
        value = _take_values(args, i, name, consumed)
    elif name.takes_value is False and value is not None:
        b = bool_literal(value)
        value = None if b is True else ("false" if b is False else value)
    written = " ".join(text[x.start : x.end] for x in consumed)
    span = FlagSpan(
        flag=Flag(name=name.canonical, value=value, written=written),
        start=args[i].start,
        end=consumed[-1].end,
        name_written=name.written,
        prev_end=prev_end,
        value_start=consumed[1].start if len(consumed) > 1 else None,
        value_end=consumed[-1].end if len(consumed) > 1 else None,
        eq=name.whole and value is not None and not name.written.startswith("--no-"),
        is_model=is_model_flag(name.canonical, fw),
    )
    return span, len(consumed)


def _take_values(args: list[Token], i: int, name: _Name, consumed: list[Token]) -> str | None:
    """The value(s) after the flag at ``args[i]``, appended to ``consumed``."""
    nxt = args[i + 1] if i + 1 < len(args) else None
    if name.takes_value is False:
        if nxt is not None and bool_literal(nxt.text) is not None:
            consumed.append(nxt)
            return None if bool_literal(nxt.text) else "false"
        return None
    if name.takes_value is True and name.nargs == "+":
        j = i + 1
        while j < len(args) and not flag_like(args[j].text) and not REDIRECT.match(args[j].text):
            consumed.append(args[j])
            j += 1
        return " ".join(x.text for x in consumed[1:]) or None
    if nxt is not None and not flag_like(nxt.text) and not REDIRECT.match(nxt.text):
        consumed.append(nxt)
        return nxt.text
    return None


def flag_separator(text: str, items: list[FlagSpan]) -> str:
    """How the user separates flags: one per continued line, one per line, or spaces."""
    if not items:
        return " "
    gaps = [text[it.prev_end : it.start] for it in items]
    indent = line_indent(text, items[-1].start)
    if any("\\\n" in g or "\\\r\n" in g for g in gaps):
        return " \\\n" + indent
    if len(items) > 1 and all("\n" in g for g in gaps[1:]):
        return "\n" + indent
    return " "


# --- shell text ------------------------------------------------------------------------------


@dataclass
class _Prelude:
    """What the lines before (and around) the launch say: variables and the launch itself."""

    envs: list[EnvSpan]
    shell_vars: dict[str, str]
    launch: int | None = None  # index of the statement that launches
    program: Program | None = None


def _prelude(text: str, stmts: Statements) -> _Prelude:
    out = _Prelude(envs=[], shell_vars={})
    for si, (words, _sep) in enumerate(stmts):
        head = words[0].text
        if head.startswith("Environment="):  # systemd: wherever it sits in the unit
            first = Token(head.split("=", 1)[1], words[0].start, words[0].end)
            for w in [first, *words[1:]]:
                m = ASSIGN.match(w.text)
                if m:
                    out.envs.append(
                        EnvSpan(m.group(1), m.group(2), w.start, w.end, "systemd", w.start, w.end)
                    )
            continue
        if out.launch is not None:  # later shell lines do not affect the launch
            continue
        if head.startswith("ExecStart="):
            words[0] = Token(head.split("=", 1)[1].lstrip("-@+!:"), words[0].start, words[0].end)
        out.program = find_program(words)
        if out.program is not None:
            out.launch = si
        elif head == "export":
            stmt_end = stmts[si + 1][0][0].start if si + 1 < len(stmts) else len(text)
            assigns = [w for w in words[1:] if ASSIGN.match(w.text)]
            whole = len(assigns) == 1
            for w in assigns:
                name, value = ASSIGN.match(w.text).groups()  # type: ignore[union-attr]
                out.envs.append(
                    EnvSpan(
                        name,
                        value,
                        w.start,
                        w.end,
                        "export",
                        words[0].start if whole else w.start,
                        stmt_end if whole else w.end,
                    )
                )
        elif all(ASSIGN.match(w.text) for w in words):
            for w in words:
                name, value = ASSIGN.match(w.text).groups()  # type: ignore[union-attr]
                out.shell_vars[name] = value
    return out


def scan_shell(text: str, framework: str | None, reg: Registry, source: str) -> LaunchConfig:
    stmts = statements(tokenize(text, source))
    pre = _prelude(text, stmts)
    if pre.launch is None or pre.program is None:
        return _scan_flag_list(text, stmts, framework, reg, source, pre.envs)
    prog = pre.program
    words = list(stmts[pre.launch][0])
    fw = prog.framework
    if prog.kind == "image":
        fw = reg.framework_of_image(words[prog.start].text) or normalise_framework(framework)
    for more, _ in stmts[pre.launch + 1 :]:  # flags continued on following lines without "\"
        if not flag_like(more[0].text):
            break
        words.extend(more)
    envs = list(pre.envs)
    docker = docker_run(words, prog.start)
    image: Token | None = None
    run_end: int | None = None
    if docker is not None:
        run, img, denvs = docker
        run_end = words[run].end
        image = words[img] if img <= prog.start else None
        envs += docker_envs(denvs)
        before = words[img + 1 : prog.start] if img < prog.start else []
    else:
        before = words[: prog.start]
    for w in before:
        m = ASSIGN.match(w.text)
        if m:
            envs.append(EnvSpan(m.group(1), m.group(2), w.start, w.end, "prefix", w.start, w.end))
    frame = Layout(
        style="shell",
        envs=tuple(envs),
        program_start=words[prog.start].start,
        docker_run_end=run_end,
        image=image,
    )
    if prog.kind == "lm_eval":
        return _scan_lm_eval(text, frame, words, prog, fw, reg, pre.shell_vars)
    prev_end = words[prog.after - 1].end
    items, positionals = flag_spans(text, words[prog.after :], fw, reg, prev_end)
    model = next((it.flag.value for it in items if it.is_model), None)
    if model is None and positionals and fw in ("vllm", "tensorrt-llm", "sglang"):
        model = positionals[0].text
    last_end = max([it.end for it in items] + [p.end for p in positionals[:1]] + [prev_end])
    layout = _with(
        frame, items=tuple(items), insert_at=last_end, flag_sep=flag_separator(text, items)
    )
    return launch_config(text, fw, prog.text, _expand(model, pre.shell_vars), layout, reg)


def _with(layout: Layout, **changes: object) -> Layout:
    from dataclasses import replace

    return replace(layout, **changes)  # type: ignore[arg-type]


def _expand(value: str | None, shell_vars: dict[str, str]) -> str | None:
    if value is None:
        return None

    def sub(m: re.Match[str]) -> str:
        return shell_vars.get(m.group(1) or m.group(2), m.group(0))

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", sub, value)


def _scan_flag_list(
    text: str,
    stmts: Statements,
    framework: str | None,
    reg: Registry,
    source: str,
    envs: list[EnvSpan],
) -> LaunchConfig:
    words = [w for ws, _ in stmts if flag_like(ws[0].text) for w in ws]
    if not words:
        raise CommandParseError(
            f'{source}: no launch command or flags recognised in "{snippet(text)}"'
        )
    fw = normalise_framework(framework) if framework else None
    if fw is None:
        fw = reg.guess_framework(w.text.split("=", 1)[0] for w in words)
    items, _ = flag_spans(text, words, fw, reg, words[0].start)
    layout = Layout(
        style="flags",
        items=tuple(items),
        envs=tuple(envs),
        insert_at=items[-1].end if items else len(text.rstrip()),
        flag_sep=flag_separator(text, items),
    )
    model = next((it.flag.value for it in items if it.is_model), None)
    return launch_config(text, fw, None, model, layout, reg)


def _split_model_args(value: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for part in value.split(","):
        if not part.strip():
            continue
        k, _, v = part.partition("=")
        pairs.append((k.strip(), v.strip()))
    return tuple(pairs)


def _scan_lm_eval(
    text: str,
    frame: Layout,
    words: list[Token],
    prog: Program,
    fw: str | None,
    reg: Registry,
    shell_vars: dict[str, str],
) -> LaunchConfig:
    model: str | None = None
    items: list[FlagSpan] = []
    model_args = None
    for j in range(prog.after, len(words)):
        w = words[j]
        if w.text in ("--model_args", "--model-args") and j + 1 < len(words):
            tok, raw_value = words[j + 1], words[j + 1].text
        elif w.text.startswith(("--model_args=", "--model-args=")):
            tok, raw_value = w, w.text.split("=", 1)[1]
        else:
            continue
        pairs = tuple((k, v, reg.canonical("--" + k, fw)) for k, v in _split_model_args(raw_value))
        vstart = tok.start if tok is not w else tok.start + len(w.text.split("=", 1)[0]) + 1
        model_args = ModelArgs(tok, vstart, tok.end, pairs)
        for k, v, canon in pairs:
            if k in _LM_EVAL_OWN_ARGS:
                continue  # the harness's own wrapper argument, not an engine flag
            b = bool_literal(v)
            switch = b is not None and reg.takes_value(canon, fw) is False
            value = (None if b else "false") if switch else v
            is_model = k == "pretrained" or is_model_flag(canon, fw)
            if is_model:
                model = _expand(v, shell_vars)
            items.append(
                FlagSpan(
                    flag=Flag(name=canon, value=value, written=f"{k}={v}"),
                    start=tok.start,
                    end=tok.end,
                    name_written=k,
                    prev_end=tok.start,
                    style="model_args",
                    is_model=is_model,
                )
            )
        break
    layout = _with(
        frame, style="lm_eval", items=tuple(items), insert_at=words[-1].end, model_args=model_args
    )
    return launch_config(text, fw, prog.text, model, layout, reg)
