"""Launch commands and flag diffs: parse what the user runs, say what a finding changes, apply it.

Pure functions over text and records. The flag registry (:mod:`agent.registry`) is the one source
of names: every flag is compared in its canonical spelling, so a finding's
``--fp4-gemm-runner-backend flashinfer_cudnn`` matches a user's ``--fp4-gemm-backend=...``.

Forms understood by :func:`parse_command`:

* ``python[3] -m sglang.launch_server ...``, ``sglang serve ...``, ``vllm serve MODEL ...``,
  ``python -m vllm.entrypoints.openai.api_server ...``, ``trtllm-serve [serve] MODEL ...``,
  ``lm_eval --model vllm --model_args k=v,...``;
* Python calls ``sgl.Engine(...)``, ``LLM(...)``, ``EngineArgs(...)`` (keyword arguments);
* a bare list of flags (``--tp 8 --quantization fp8``), one line or many;
* around them: ``NAME=value`` prefixes, ``env``, ``export X=1 &&``, systemd ``ExecStart=`` and
  ``Environment=`` lines, ``docker run -e X=1 ... image:tag CMD``, line continuations, comments.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from agent.registry import Registry, bool_literal, load_registry
from kb.errors import CommandParseError
from kb.frameworks import normalise_framework
from kb.records import Fix, Flag, FlagChange, LaunchConfig

__all__ = [
    "apply_changes",
    "diff",
    "diff_with_notes",
    "docker_image",
    "parse_command",
    "parse_fix_item",
    "render_flag",
]

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")
_REDIRECT = re.compile(r"^(\d*|&)(>>?|<)(&\d*)?$|^\d*>>?\S+$|^\d*>&\d+$")
_PY_CALL = re.compile(
    r"(?<![\w.])((?:[A-Za-z_]\w*\.)*(?:Engine|LLM|EngineArgs|AsyncEngineArgs|ServerArgs))\s*\("
)
_DOCKER = frozenset({"docker", "podman", "nvidia-docker"})
_DOCKER_SWITCHES = frozenset(
    "--rm --detach --interactive --tty --privileged --init --read-only --no-healthcheck "
    "--oom-kill-disable --publish-all --disable-content-trust --help --quiet".split()
)
_DOCKER_SHORT_SWITCHES = frozenset("dit" "P" "q")
_INSTALL = re.compile(
    r"^(?:sudo\s+)?(?:uv\s+pip|pip3?|python3?\s+-m\s+pip|conda|mamba|apt(?:-get)?)\s+install\b"
)
_INSTALL_OPTS_WITH_VALUE = frozenset(
    "-r --requirement -c --constraint -i --index-url --extra-index-url -f --find-links "
    "-t --target --python -p --prefix -n --name -e --editable".split()
)
_PIN = re.compile(
    r"^([A-Za-z0-9][A-Za-z0-9._\-]*(?:\[[^\]]*\])?)\s*(===|==|>=|<=|~=|!=|>|<)\s*(\S+)$"
)
_IMAGE = re.compile(
    r"^((?:[A-Za-z0-9.\-]+(?::\d+)?/)?[a-z0-9][a-z0-9._\-]*(?:/[a-z0-9][a-z0-9._\-]*)*)"
    r"(?::([\w][\w.\-]{0,127}))?(?:@(sha256:[0-9a-f]{16,}))?$"
)
_CONFIG_LINE = re.compile(r"^([A-Za-z_][\w.]*)\s*:\s+(\S.*)$")
_KWARG = re.compile(r"^([a-z_][a-z0-9_]*)\s*=\s*(.+)$", re.S)
_TRAILING_NOTE = re.compile(r"^(.*?\S)\s+\(([^()]*)\)$")


# ---------------------------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------------------------


@dataclass
class _Tok:
    text: str  # shell-unquoted
    start: int
    end: int
    sep: str | None = None  # "\n", "&&", "||", ";", "|", "&" for separators


def _snippet(text: str, limit: int = 40) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _tokenize(text: str, source: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "\\" and (i + 1 >= n or text[i + 1] == "\n"):
            i += 2
            continue
        if c == "\\" and text.startswith("\r\n", i + 1):
            i += 3
            continue
        if c == "\n":
            toks.append(_Tok("\n", i, i + 1, sep="\n"))
            i += 1
            continue
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("&&", i) or text.startswith("||", i):
            toks.append(_Tok(text[i : i + 2], i, i + 2, sep=text[i : i + 2]))
            i += 2
            continue
        if c in ";|" or (c == "&" and not text.startswith("&>", i)):
            toks.append(_Tok(c, i, i + 1, sep=c))
            i += 1
            continue
        start, buf = i, []
        while i < n:
            c = text[i]
            if c in " \t\r\n\f\v" or c in ";|":
                break
            if c == "&":
                if (buf and buf[-1] in "<>") or text.startswith("&>", i):
                    buf.append(c)
                    i += 1
                    continue
                break
            if c == "\\":
                if i + 1 < n and text[i + 1] == "\n":
                    i += 2
                elif i + 1 < n:
                    buf.append(text[i + 1])
                    i += 2
                else:
                    i += 1
                continue
            if c == "'":
                j = text.find("'", i + 1)
                if j < 0:
                    raise CommandParseError(
                        f'{source}: unbalanced quote in "{_snippet(text[start:])}"'
                    )
                buf.append(text[i + 1 : j])
                i = j + 1
                continue
            if c == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    if text[j] == "\\" and j + 1 < n:
                        nxt = text[j + 1]
                        if nxt == "\n":
                            j += 2
                            continue
                        if nxt in '"\\$`':
                            buf.append(nxt)
                            j += 2
                            continue
                    buf.append(text[j])
                    j += 1
                if j >= n:
                    raise CommandParseError(
                        f'{source}: unbalanced quote in "{_snippet(text[start:])}"'
                    )
                i = j + 1
                continue
            buf.append(c)
            i += 1
        toks.append(_Tok("".join(buf), start, i))
    return toks


def _statements(toks: list[_Tok]) -> list[tuple[list[_Tok], str | None]]:
    """Split on separators: [(words, separator that ended them)]."""
    out: list[tuple[list[_Tok], str | None]] = []
    cur: list[_Tok] = []
    for t in toks:
        if t.sep is not None:
            if cur:
                out.append((cur, t.sep))
            cur = []
        else:
            cur.append(t)
    if cur:
        out.append((cur, None))
    return out


def _flag_like(text: str) -> bool:
    return text.startswith("-") and text != "-" and not _NUMBER.match(text)


# ---------------------------------------------------------------------------------------------
# Scanning a command into records plus the positions apply_changes needs
# ---------------------------------------------------------------------------------------------


@dataclass
class _Item:
    flag: Flag
    start: int  # span of the whole flag (name and values)
    end: int
    name_written: str
    prev_end: int  # end of whatever precedes the flag (for clean removal)
    value_start: int | None = None  # span of separate value token(s)
    value_end: int | None = None
    eq: bool = False  # written --name=value in one token
    style: str = "shell"  # "shell" | "kwarg" | "model_args"
    is_model: bool = False


@dataclass
class _Env:
    name: str  # as written
    value: str
    start: int  # span of the NAME=value token
    end: int
    style: str  # "prefix" | "export" | "docker" | "systemd" | "python"
    remove_start: int = -1  # span to delete when the variable is dropped
    remove_end: int = -1


@dataclass
class _Scan:
    text: str
    framework: str | None
    program: str | None
    model: str | None
    items: list[_Item] = field(default_factory=list)
    envs: list[_Env] = field(default_factory=list)
    style: str = "shell"  # "shell" | "python" | "lm_eval" | "flags"
    insert_at: int = 0
    flag_sep: str = " "
    flag_suffix: str = ""
    py_quote: str = '"'  # quote style of the user's string keyword arguments
    program_start: int | None = None
    docker_run_end: int | None = None
    image: _Tok | None = None
    model_args: tuple[_Tok, int, int, list[list[str]]] | None = None  # lm_eval

    def config(self) -> LaunchConfig:
        env: dict[str, str] = {}
        for e in self.envs:
            env[e.name] = e.value
        return LaunchConfig(
            framework=self.framework,
            program=self.program,
            model=self.model,
            flags=tuple(it.flag for it in self.items if not it.is_model),
            env=tuple(env.items()),
            raw=self.text,
        )


def _is_model_flag(canon: str, fw: str | None) -> bool:
    return (fw == "sglang" and canon == "--model-path") or (fw == "vllm" and canon == "--model")


def _parse_flag_tokens(
    text: str, args: list[_Tok], fw: str | None, reg: Registry, prev_end: int
) -> tuple[list[_Item], list[_Tok]]:
    """Flags (with their values) and leftover positional tokens, in order."""
    items: list[_Item] = []
    positionals: list[_Tok] = []
    i = 0
    while i < len(args):
        t = args[i]
        w = t.text
        if _REDIRECT.match(w):
            i += 1 if (w.endswith(tuple("0123456789")) or len(w) > 2 and ">" in w[:-1]) else 2
            continue
        if not _flag_like(w):
            positionals.append(t)
            prev_end = t.end
            i += 1
            continue
        consumed = [t]
        eq = False
        value: str | None = None
        if fw == "vllm" and re.fullmatch(r"-O\d", w):
            name_w, value, eq = w, w[2:], True
            canon = "--optimization-level"
            tv: bool | None = True
            nargs = None
        else:
            if "=" in w and (w.startswith("--") or len(w.split("=", 1)[0]) > 1):
                name_w, value = w.split("=", 1)
                eq = True
            else:
                name_w = w
            negated = reg.negation(name_w, fw) if fw else None
            if negated:
                canon, value, tv, nargs = negated, "false", False, None
                eq = True  # nothing more to consume
            else:
                canon = reg.canonical(name_w, fw)
                tv = reg.takes_value(name_w, fw) if fw else None
                nargs = reg.nargs(name_w, fw) if fw else None
        if not eq:
            nxt = args[i + 1] if i + 1 < len(args) else None
            if tv is False:
                if nxt is not None and bool_literal(nxt.text) is not None:
                    consumed.append(nxt)
                    value = None if bool_literal(nxt.text) else "false"
            elif tv is True and nargs == "+":
                j = i + 1
                while j < len(args) and not _flag_like(args[j].text) and not _REDIRECT.match(
                    args[j].text
                ):
                    consumed.append(args[j])
                    j += 1
                value = " ".join(x.text for x in consumed[1:]) or None
            elif nxt is not None and not _flag_like(nxt.text) and not _REDIRECT.match(nxt.text):
                consumed.append(nxt)
                value = nxt.text
        elif tv is False and value is not None:
            b = bool_literal(value)
            value = None if b is True else ("false" if b is False else value)
        written = " ".join(text[x.start : x.end] for x in consumed)
        item = _Item(
            flag=Flag(name=canon, value=value, written=written),
            start=t.start,
            end=consumed[-1].end,
            name_written=name_w,
            prev_end=prev_end,
            value_start=consumed[1].start if len(consumed) > 1 else None,
            value_end=consumed[-1].end if len(consumed) > 1 else None,
            eq=eq and value is not None and not name_w.startswith("--no-"),
            is_model=_is_model_flag(canon, fw),
        )
        items.append(item)
        prev_end = item.end
        i += len(consumed)
    return items, positionals


def _find_program(toks: list[_Tok]) -> tuple[int, int, str, str | None, str] | None:
    """(start index, index after the program, program text, framework, kind)."""
    for i, t in enumerate(toks):
        base = t.text.rsplit("/", 1)[-1]
        nxt = toks[i + 1].text if i + 1 < len(toks) else ""
        if re.fullmatch(r"python[\d.]*", base):
            j = i + 1
            while j < len(toks) and j <= i + 4 and toks[j].text != "-m" and _flag_like(
                toks[j].text
            ):
                j += 1
            if j + 1 < len(toks) and toks[j].text == "-m":
                mod = toks[j + 1].text
                fw = (
                    "sglang" if mod.split(".")[0] == "sglang"
                    else "vllm" if mod.split(".")[0] == "vllm"
                    else "tensorrt-llm" if mod.split(".")[0] == "tensorrt_llm"
                    else None
                )
                if fw:
                    program = " ".join(x.text for x in toks[i : j + 2])
                    return i, j + 2, program, fw, "python"
        elif base == "sglang" and nxt == "serve":
            return i, i + 2, f"{t.text} serve", "sglang", "cli"
        elif base == "vllm" and nxt == "serve":
            return i, i + 2, f"{t.text} serve", "vllm", "cli"
        elif base == "trtllm-serve":
            k = i + 2 if nxt == "serve" else i + 1
            return i, k, " ".join(x.text for x in toks[i:k]), "tensorrt-llm", "cli"
        elif base in ("lm_eval", "lm-eval"):
            for j in range(i + 1, len(toks) - 1):
                if toks[j].text in ("--model", "--model_type"):
                    fw = normalise_framework(toks[j + 1].text)
                    if fw:
                        return i, i + 1, f"{t.text} --model {toks[j + 1].text}", fw, "lm_eval"
                elif toks[j].text.startswith("--model="):
                    fw = normalise_framework(toks[j].text.split("=", 1)[1])
                    if fw:
                        return i, i + 1, f"{t.text} {toks[j].text}", fw, "lm_eval"
    docker = _docker(toks, len(toks))
    if docker is not None and docker[1] < len(toks):
        img = docker[1]
        rest = toks[img + 1 :]
        if not rest or _flag_like(rest[0].text):  # arguments to the image's own entrypoint
            return img, img + 1, f"docker run {toks[img].text}", None, "image"
    return None


def _docker(toks: list[_Tok], upto: int) -> tuple[int, int, list[tuple[_Tok, _Tok]]] | None:
    """(index of 'run', index of the image, [(option token, NAME=value token)]) or None."""
    for d in range(upto):
        if toks[d].text.rsplit("/", 1)[-1] in _DOCKER and d + 1 < len(toks):
            run = d + 1
            if toks[run].text == "container" and run + 1 < len(toks):
                run += 1
            if toks[run].text != "run":
                continue
            envs: list[tuple[_Tok, _Tok]] = []
            k = run + 1
            while k < len(toks):
                w = toks[k].text
                if not w.startswith("-") or w == "-":
                    return run, k, envs
                if w.startswith("--"):
                    opt, eq, val = w.partition("=")
                    if opt == "--env":
                        if eq:
                            envs.append((toks[k], toks[k]))
                        elif k + 1 < len(toks):
                            envs.append((toks[k], toks[k + 1]))
                            k += 1
                    elif not eq and opt not in _DOCKER_SWITCHES:
                        k += 1
                elif len(w) > 2 and all(c in _DOCKER_SHORT_SWITCHES for c in w[1:]):
                    pass
                elif w[1] in _DOCKER_SHORT_SWITCHES and len(w) == 2:
                    pass
                elif w[1] == "e":
                    if len(w) > 2:
                        envs.append((toks[k], toks[k]))
                    elif k + 1 < len(toks):
                        envs.append((toks[k], toks[k + 1]))
                        k += 1
                elif len(w) == 2:
                    k += 1
                k += 1
            return run, len(toks), envs
    return None


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    m = re.match(r"[ \t]*", text[line_start:])
    return m.group(0) if m else ""


def _scan_shell(text: str, framework: str | None, reg: Registry, source: str) -> _Scan:
    toks = _tokenize(text, source)
    stmts = _statements(toks)
    shell_vars: dict[str, str] = {}
    envs: list[_Env] = []
    launch: int | None = None
    found = None
    for si, (words, _sep) in enumerate(stmts):
        head = words[0].text
        if head.startswith("Environment="):  # systemd: wherever it sits in the unit
            first = _Tok(head.split("=", 1)[1], words[0].start, words[0].end)
            for w in [first, *words[1:]]:
                m = _ASSIGN.match(w.text)
                if m:
                    envs.append(_Env(m.group(1), m.group(2), w.start, w.end, "systemd",
                                     w.start, w.end))
            continue
        if launch is not None:  # later shell lines do not affect the launch
            continue
        if head.startswith("ExecStart="):
            words[0] = _Tok(head.split("=", 1)[1].lstrip("-@+!:"), words[0].start, words[0].end)
        found = _find_program(words)
        if found is not None:
            launch = si
        elif head == "export":
            stmt_end = stmts[si + 1][0][0].start if si + 1 < len(stmts) else len(text)
            assigns = [w for w in words[1:] if _ASSIGN.match(w.text)]
            for w in assigns:
                name, value = _ASSIGN.match(w.text).groups()  # type: ignore[union-attr]
                whole = len(assigns) == 1
                envs.append(_Env(name, value, w.start, w.end, "export",
                                 words[0].start if whole else w.start,
                                 stmt_end if whole else w.end))
        elif all(_ASSIGN.match(w.text) for w in words):
            for w in words:
                name, value = _ASSIGN.match(w.text).groups()  # type: ignore[union-attr]
                shell_vars[name] = value

    scan = _Scan(text=text, framework=None, program=None, model=None)
    if found is None or launch is None:
        return _scan_flag_list(text, stmts, framework, reg, source, scan, envs)

    words = list(stmts[launch][0])
    start, after, program, fw, kind = found
    if kind == "image":
        fw = reg.framework_of_image(words[start].text) or normalise_framework(framework)
    for words2, _ in stmts[launch + 1 :]:  # flags continued on following lines without "\"
        if not _flag_like(words2[0].text):
            break
        words.extend(words2)
    scan.framework, scan.program, scan.style = fw, program, "shell"
    scan.program_start = words[start].start

    docker = _docker(words, start)
    if docker is not None:
        run, img, denvs = docker
        scan.docker_run_end = words[run].end
        if img <= start:
            scan.image = words[img]
        for opt, tok in denvs:
            payload = tok.text.split("=", 1)[1] if tok is opt else tok.text
            if opt.text.startswith("-e") and opt.text != "-e" and tok is opt:
                payload = tok.text[2:]
            m = _ASSIGN.match(payload)
            if m:
                envs.append(_Env(m.group(1), m.group(2), tok.start, tok.end, "docker",
                                 opt.start, tok.end))
        pre = words[img + 1 : start] if img < start else []
    else:
        pre = words[:start]
    for w in pre:
        m = _ASSIGN.match(w.text)
        if m:
            envs.append(_Env(m.group(1), m.group(2), w.start, w.end, "prefix", w.start, w.end))

    args = words[after:]
    prev_end = words[after - 1].end
    if kind == "lm_eval":
        return _scan_lm_eval(scan, words, after, fw, reg, envs, shell_vars)
    items, positionals = _parse_flag_tokens(text, args, fw, reg, prev_end)
    model = next((it.flag.value for it in items if it.is_model), None)
    if model is None and positionals and fw in ("vllm", "tensorrt-llm", "sglang"):
        model = positionals[0].text
    scan.model = _expand(model, shell_vars)
    scan.items = items
    scan.envs = envs
    last_end = max([it.end for it in items] + [p.end for p in positionals[:1]] + [prev_end])
    scan.insert_at = last_end
    scan.flag_sep = _flag_separator(text, items)
    return scan


def _flag_separator(text: str, items: list[_Item]) -> str:
    """How the user separates flags: one per continued line, one per line, or spaces."""
    if not items:
        return " "
    gaps = [text[it.prev_end : it.start] for it in items]
    last = items[-1]
    indent = _line_indent(text, last.start)
    if any("\\\n" in g or "\\\r\n" in g for g in gaps):
        return " \\\n" + indent
    if len(items) > 1 and all("\n" in g for g in gaps[1:]):
        return "\n" + indent
    return " "


def _expand(value: str | None, shell_vars: dict[str, str]) -> str | None:
    if value is None:
        return None

    def sub(m: re.Match[str]) -> str:
        return shell_vars.get(m.group(1) or m.group(2), m.group(0))

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", sub, value)


def _scan_flag_list(
    text: str,
    stmts: list[tuple[list[_Tok], str | None]],
    framework: str | None,
    reg: Registry,
    source: str,
    scan: _Scan,
    envs: list[_Env],
) -> _Scan:
    words = [w for ws, _ in stmts if _flag_like(ws[0].text) for w in ws]
    if not words:
        raise CommandParseError(
            f'{source}: no launch command or flags recognised in "{_snippet(text)}"'
        )
    fw = normalise_framework(framework) if framework else None
    if fw is None:
        fw = reg.guess_framework(w.text.split("=", 1)[0] for w in words)
    items, _ = _parse_flag_tokens(text, words, fw, reg, words[0].start)
    scan.framework, scan.style, scan.items, scan.envs = fw, "flags", items, envs
    scan.model = next((it.flag.value for it in items if it.is_model), None)
    scan.insert_at = items[-1].end if items else len(text.rstrip())
    scan.flag_sep = _flag_separator(text, items)
    return scan


def _split_model_args(value: str) -> list[list[str]]:
    pairs = []
    for part in value.split(","):
        if not part.strip():
            continue
        k, _, v = part.partition("=")
        pairs.append([k.strip(), v.strip()])
    return pairs


# ``--model_args`` keys that lm-evaluation-harness's vLLM wrapper keeps for itself instead of
# passing to the engine (lm_eval/models/vllm_causallms.py).
_LM_EVAL_OWN_ARGS = frozenset(
    {"add_bos_token", "prefix_token_id", "max_gen_toks", "max_batch_size", "max_length",
     "lora_local_path"}
)


def _scan_lm_eval(
    scan: _Scan,
    words: list[_Tok],
    after: int,
    fw: str | None,
    reg: Registry,
    envs: list[_Env],
    shell_vars: dict[str, str],
) -> _Scan:
    scan.style = "lm_eval"
    scan.envs = envs
    for j in range(after, len(words)):
        w = words[j]
        if w.text in ("--model_args", "--model-args") and j + 1 < len(words):
            tok, raw_value = words[j + 1], words[j + 1].text
        elif w.text.startswith(("--model_args=", "--model-args=")):
            tok, raw_value = w, w.text.split("=", 1)[1]
        else:
            continue
        pairs = _split_model_args(raw_value)
        vstart = tok.start if tok is not w else tok.start + len(w.text.split("=", 1)[0]) + 1
        scan.model_args = (tok, vstart, tok.end, pairs)
        for k, v in pairs:
            if k in _LM_EVAL_OWN_ARGS:
                continue  # the harness's own wrapper argument, not an engine flag
            canon = reg.canonical("--" + k, fw)
            b = bool_literal(v)
            value = v if b is None or reg.takes_value(canon, fw) is not False else (
                None if b else "false")
            is_model = k == "pretrained" or _is_model_flag(canon, fw)
            if is_model:
                scan.model = _expand(v, shell_vars)
            scan.items.append(_Item(
                flag=Flag(name=canon, value=value, written=f"{k}={v}"),
                start=tok.start, end=tok.end, name_written=k, prev_end=tok.start,
                style="model_args", is_model=is_model,
            ))
        break
    scan.insert_at = words[-1].end
    return scan


# --- Python engine calls ------------------------------------------------------------------------


def _match_paren(text: str, open_idx: int) -> int | None:
    depth, i, quote = 0, open_idx, None
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#":
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _py_env(text: str) -> list[_Env]:
    out = []
    pat = r"os\.environ(?:\[\s*['\"](\w+)['\"]\s*\]\s*=|\.setdefault\(\s*['\"](\w+)['\"]\s*,)\s*"
    for m in re.finditer(pat + r"['\"]([^'\"]*)['\"]\)?", text):
        out.append(_Env(m.group(1) or m.group(2), m.group(3), m.start(), m.end(), "python",
                        m.start(), m.end()))
    return out


def _scan_python(
    text: str, m: re.Match[str], framework: str | None, reg: Registry, source: str
) -> _Scan:
    func = m.group(1)
    short = func.rsplit(".", 1)[-1]
    if short in ("LLM", "EngineArgs", "AsyncEngineArgs"):
        fw: str | None = "vllm"
    elif short == "ServerArgs" or "sgl" in func.lower() or "sglang" in text:
        fw = "sglang"
    else:
        fw = normalise_framework(framework) or "sglang"
    open_idx = m.end() - 1
    close_idx = _match_paren(text, open_idx)
    if close_idx is None:
        raise CommandParseError(
            f'{source}: unbalanced parenthesis in "{_snippet(text[m.start():])}"'
        )
    scan = _Scan(text=text, framework=fw, program=func, model=None, style="python")
    scan.envs = _py_env(text)
    base = open_idx + 1
    args_text = text[base:close_idx]
    kwargs = _py_keywords(args_text, base)
    quotes = [src[0] for _, src, _, _, _, _ in kwargs if src[:1] in ("'", '"')]
    scan.py_quote = quotes[0] if quotes else '"'
    for name, _source, value, start, end, vstart in kwargs:
        canon = reg.canonical("--" + name, fw)
        is_model = name in ("model_path", "model") or _is_model_flag(canon, fw)
        item = _Item(
            flag=Flag(name=canon, value=value, written=text[start:end]),
            start=start, end=end, name_written=name, prev_end=start, value_start=vstart,
            value_end=end, style="kwarg", is_model=is_model,
        )
        if is_model:
            scan.model = value
        scan.items.append(item)
    for prev, it in zip(scan.items, scan.items[1:], strict=False):
        it.prev_end = prev.end
    if scan.items:
        scan.items[0].prev_end = scan.items[0].start
        last = scan.items[-1]
        scan.insert_at, scan.flag_sep = last.end, ", "
        if "\n" in args_text:
            indent = _line_indent(text, last.start)
            eol = text.find("\n", last.end)
            eol = close_idx if eol < 0 or eol > close_idx else eol
            if text[last.end:eol].lstrip().startswith(","):
                scan.insert_at, scan.flag_sep, scan.flag_suffix = eol, "\n" + indent, ","
            else:
                scan.flag_sep = ",\n" + indent
    else:
        scan.insert_at, scan.flag_sep = base, ""
    return scan


def _py_keywords(args_text: str, base: int) -> list[tuple[str, str, str | None, int, int, int]]:
    """(name, value source, value, start, end, value start) per keyword argument."""
    out = []
    try:
        call = ast.parse("f(\n" + args_text + "\n)", mode="eval").body
        assert isinstance(call, ast.Call)
        lines = ("f(\n" + args_text + "\n)").splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))

        def pos(lineno: int, col: int) -> int:
            line = lines[lineno - 1]
            chars = len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))
            return base + offsets[lineno - 1] + chars - 3  # drop the synthetic "f(\n"

        for kw in call.keywords:
            if kw.arg is None or kw.end_lineno is None or kw.value.end_lineno is None:
                continue
            start = pos(kw.lineno, kw.col_offset)
            end = pos(kw.end_lineno, kw.end_col_offset or 0)
            vstart = pos(kw.value.lineno, kw.value.col_offset)
            source = args_text[vstart - base : end - base]
            out.append((kw.arg, source, _py_value(kw.value, source), start, end, vstart))
        return out
    except (SyntaxError, AssertionError, ValueError):
        pass
    for km in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)\s*=\s*(\"[^\"]*\"|'[^']*'|[^,\n)#]+)",
                          args_text):
        source = km.group(2).strip()
        try:
            node = ast.parse(source, mode="eval").body
            value = _py_value(node, source)
        except SyntaxError:
            value = source
        start, end = base + km.start(), base + km.start(2) + len(source)
        out.append((km.group(1), source, value, start, end, base + km.start(2)))
    return out


def _py_value(node: ast.expr, source: str) -> str | None:
    if isinstance(node, ast.Constant):
        if node.value is True:
            return None
        if node.value is False:
            return "false"
        return str(node.value)
    return source


def _scan(text: str, framework: str | None, reg: Registry, source: str) -> _Scan:
    if not text or not text.strip():
        raise CommandParseError(f"{source}: empty launch command")
    m = _PY_CALL.search(text)
    if m and "=" in text[m.end():]:
        return _scan_python(text, m, framework, reg, source)
    return _scan_shell(text, framework, reg, source)


# ---------------------------------------------------------------------------------------------
# Public API: parsing
# ---------------------------------------------------------------------------------------------


def parse_command(
    text: str,
    framework: str | None = None,
    *,
    source: str = "--cmd",
    registry: Registry | None = None,
) -> LaunchConfig:
    """Parse a launch command (or a bare list of flags) into a :class:`LaunchConfig`.

    ``framework`` is a hint used when the text names no program (a bare flag list); a recognised
    program always decides. ``flags`` hold canonical names (see :meth:`Registry.canonical`) and
    exclude the flag that names the model, which goes to ``model``. A switch reads ``value=None``
    when on and ``"false"`` when turned off (``--no-x``, ``--x false``, ``x=False``).
    ``source`` prefixes error messages: ``--cmd: unbalanced quote in "..."``.
    """
    reg = registry or load_registry()
    return _scan(text, framework, reg, source).config()


def docker_image(text: str, *, registry: Registry | None = None) -> str | None:
    """The image of a ``docker run ... image:tag CMD`` launch command, else None."""
    reg = registry or load_registry()
    scan = _scan(text, None, reg, "--cmd")
    return scan.image.text if scan.image else None


def _pin_parts(token: str) -> tuple[str, str | None] | None:
    m = _PIN.match(token)
    if m:
        return m.group(1), m.group(2) + m.group(3)
    return None


def _env_change(text: str, action: str, note: str | None, reg: Registry,
                framework: str | None) -> list[FlagChange] | None:
    try:
        parts = shlex.split(text)
    except ValueError:
        return None
    if parts and parts[0] == "export":
        parts = parts[1:]
    out = []
    for p in parts:
        m = _ASSIGN.match(p)
        if not m or not _ENV_NAME.match(m.group(1)):
            return None
        name = reg.canonical_env(m.group(1), framework)
        out.append(FlagChange(kind="env", action=action, name=name, value=m.group(2),
                              text=f"{m.group(1)}={m.group(2)}", note=note))
    return out or None


def parse_fix_item(
    text: str,
    framework: str | None = None,
    *,
    action: str = "add",
    registry: Registry | None = None,
) -> tuple[FlagChange, ...]:
    """Classify one fix string as a finding writes it; one :class:`FlagChange` per setting.

    * ``--flag value`` (several flags allowed), ``-O.cudagraph_mode=PIECEWISE`` -> kind "flag",
      canonical name; ``note`` says when the written spelling is a renamed one;
    * ``NAME=value`` (``export`` allowed) -> kind "env";
    * ``pkg==1.2``, ``pkg>=1.2``, ``cuDNN>=9.23.1`` -> kind "pin", value ``"==1.2"``;
      ``org/image:tag`` -> kind "pin", value the tag, note "image";
      ``uv pip install ...`` -> kind "pin" per package, note "install command";
    * ``enforce_eager=True`` -> kind "flag" ``--enforce-eager`` (note "python kwarg");
    * ``enable_chunked_prefill: false`` -> kind "flag" named ``enable_chunked_prefill``,
      note "config" (a YAML config key, not a command-line flag).

    A trailing ``(...)`` is kept as the note. Anything else raises :class:`CommandParseError`.
    """
    reg = registry or load_registry()
    fw = normalise_framework(framework) or (framework if framework in reg.frameworks else None)
    s = text.strip()
    if not s:
        raise CommandParseError(
            "fix item is empty: write a flag, NAME=value, a pin or a config line"
        )
    note: str | None = None
    m = _TRAILING_NOTE.match(s)
    if m and not s.startswith("-"):
        s, note = m.group(1), m.group(2)

    if _INSTALL.match(s):
        try:
            parts = shlex.split(s)
        except ValueError:
            parts = s.split()
        k = parts.index("install") + 1
        out = []
        while k < len(parts):
            p = parts[k]
            if p in _INSTALL_OPTS_WITH_VALUE:
                k += 2
                continue
            if not p.startswith("-"):
                name, value = _pin_parts(p) or (p, None)
                out.append(FlagChange(kind="pin", action=action, name=name, value=value, text=s,
                                      note=note or "install command"))
            k += 1
        if out:
            return tuple(out)
        raise CommandParseError(f'fix item "{s}": install command names no package')

    if s.startswith("-"):
        words = [w for ws, _ in _statements(_tokenize(s, "fix item")) for w in ws]
        items, stray = _parse_flag_tokens(s, words, fw, reg, 0)
        if stray:
            raise CommandParseError(
                f'fix item "{s}": "{stray[0].text}" is neither a flag nor a flag value'
            )
        out = []
        for it in items:
            rename = reg.rename_note(it.name_written, fw) if fw else None
            item_note = f"written as {it.name_written}: {rename}" if rename else note
            out.append(FlagChange(kind="flag", action=action, name=it.flag.name,
                                  value=it.flag.value, text=it.flag.written, note=item_note))
        return tuple(out)

    if " " not in s:
        pin = _pin_parts(s)
        if pin is not None:
            return (FlagChange(kind="pin", action=action, name=pin[0], value=pin[1], text=s,
                               note=note),)

    env = _env_change(s, action, note, reg, fw)
    if env is not None:
        return tuple(env)

    im = _IMAGE.match(s)
    if im and (im.group(2) or im.group(3)) and ("/" in im.group(1) or im.group(2)):
        value = im.group(2) or im.group(3)
        return (FlagChange(kind="pin", action=action, name=im.group(1), value=value, text=s,
                           note=f"image ({note})" if note else "image"),)

    cm = _CONFIG_LINE.match(s)
    if cm:
        value = cm.group(2).strip().strip("'\"")
        return (FlagChange(kind="flag", action=action, name=cm.group(1), value=value, text=s,
                           note=f"config ({note})" if note else "config"),)

    out = []
    for part in _split_top_level(s):
        km = _KWARG.match(part.strip())
        if not km:
            out = []
            break
        source_value = km.group(2).strip()
        try:
            value = _py_value(ast.parse(source_value, mode="eval").body, source_value)
        except SyntaxError:
            value = source_value
        name = reg.canonical("--" + km.group(1), fw)
        out.append(FlagChange(kind="flag", action=action, name=name, value=value,
                              text=part.strip(), note=note or "python kwarg"))
    if out:
        return tuple(out)
    raise CommandParseError(
        f'fix item "{text.strip()}": not a flag, NAME=value, package pin, image or config line'
    )


def _split_top_level(s: str) -> list[str]:
    parts, depth, quote, cur = [], 0, None, []
    for c in s:
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(c)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


# ---------------------------------------------------------------------------------------------
# Public API: diff
# ---------------------------------------------------------------------------------------------


def _is_config(change: FlagChange) -> bool:
    return change.kind == "flag" and not change.name.startswith("-")


def render_flag(flag: Flag, framework: str | None = None, *,
                registry: Registry | None = None) -> str:
    """A flag as it would be typed: ``--tp-size 8``, ``--enforce-eager``, ``--no-x`` (a
    negatable switch turned off), ``--kv-transfer-config '{"a": 1}'``, ``key: value`` for a
    config key."""
    if not flag.name.startswith("-"):
        return f"{flag.name}: {flag.value}" if flag.value is not None else flag.name
    if flag.value is None:
        return flag.name
    reg = registry or load_registry()
    fw = normalise_framework(framework)
    if bool_literal(flag.value) is False and fw and reg.takes_value(flag.name, fw) is False:
        spec = reg.spec(flag.name, fw)
        if spec is not None and spec.negatable:
            return "--no-" + spec.name[2:]
    if fw and reg.nargs(flag.name, fw) == "+":
        return " ".join([flag.name, *(_shell_quote(v) for v in flag.value.split())])
    return f"{flag.name} {_shell_quote(flag.value)}"


def _shell_quote(value: str) -> str:
    if value and re.fullmatch(r"[\w@%+=:,./\-\[\]$]+", value):
        return value
    return shlex.quote(value)


def _retarget(
    ch: FlagChange, src: str | None, dst: str | None, reg: Registry, version: str | None = None
) -> tuple[FlagChange | None, str | None]:
    """The change in the target framework's terms, or (None, why it was dropped)."""
    if src is None or dst is None or src == dst:
        return ch, None
    if ch.kind == "pin":
        owner = (reg.framework_of_image(ch.name) if ch.note and ch.note.startswith("image")
                 else reg.framework_of_package(ch.name))
        if owner is not None and owner != dst:
            return None, f"dropped: {ch.text} is a {owner} pin, not for {dst}"
        return ch, None
    if ch.kind == "env":
        owner = reg.env_framework(ch.name)
        if owner is None or owner == dst:
            return ch, None
        eq = (reg.equivalent(ch.name, ch.value, src, dst, kind="env", target_version=version)
              if owner == src else None)
    else:
        eq = reg.equivalent(ch.name, ch.value, src, dst,
                            kind="config" if _is_config(ch) else "flag", target_version=version)
    if eq is None:
        return None, f"no {dst} equivalent known for {src} {ch.text}"
    if eq.kind == "env":
        text = f"{eq.name}={eq.value}"
        return FlagChange(kind="env", action=ch.action, name=eq.name, value=eq.value, text=text,
                          note=eq.note), None
    flag = Flag(eq.name, eq.value, "")
    note = eq.note + ("; config key" if eq.kind == "config" else "")
    return FlagChange(kind="flag", action=ch.action, name=eq.name, value=eq.value,
                      text=render_flag(flag, dst, registry=reg), note=note), None


def _key_of(ch: FlagChange) -> tuple[str, str]:
    if ch.kind == "pin":
        return "pin", ch.name.lower().replace("_", "-")
    return ch.kind, ch.name


def diff_with_notes(
    current: LaunchConfig | None,
    fix: Fix,
    *,
    finding_framework: str | None = None,
    target_framework: str | None = None,
    registry: Registry | None = None,
    target_version: str | None = None,
) -> tuple[tuple[FlagChange, ...], tuple[str, ...]]:
    """:func:`diff` plus one line per item left out (already set, nothing to remove, no
    equivalent in the target framework)."""
    reg = registry or load_registry()
    src = normalise_framework(finding_framework)
    dst = normalise_framework(target_framework) or (current.framework if current else None) or src
    src = src or dst
    notes: list[str] = []
    release = reg.release(dst, target_version) if target_version else None
    version = release.version if release is not None else None

    def collect(items: Iterable[str], action: str) -> list[FlagChange]:
        out = []
        for item in items:
            for ch in parse_fix_item(item, src, action=action, registry=reg):
                moved, why = _retarget(ch, src, dst, reg, version)
                if moved is None:
                    notes.append(why or f"dropped: {ch.text}")
                else:
                    out.append(moved)
        return out

    adds = collect([*fix.add, *fix.env, *fix.pins], "add")
    removes = collect(fix.remove, "remove")

    cur_flags: dict[str, Flag] = {}
    cur_env: dict[str, str] = {}
    cur_image = None
    if current is not None:
        for f in current.flags:
            cur_flags[reg.canonical(f.name, dst)] = f
        for name, value in current.env:
            cur_env[reg.canonical_env(name, dst)] = value
        if current.raw:
            try:
                cur_image = docker_image(current.raw, registry=reg)
            except CommandParseError:
                cur_image = None

    paired: dict[tuple[str, str], FlagChange] = {}
    add_keys = {_key_of(a) for a in adds}
    leftover_removes = []
    for rem in removes:
        key = _key_of(rem)
        if key in add_keys and key not in paired:
            paired[key] = rem
        else:
            leftover_removes.append(rem)

    adds = [_canonical_text(a, dst, reg) for a in adds]
    changes: list[FlagChange] = []
    for add in adds:
        key = _key_of(add)
        if current is None:
            rem = paired.get(key)
            if rem is not None:
                changes.append(_replace(add, action="change", old=rem.value))
            else:
                changes.append(add)
            continue
        if add.kind == "flag":
            cur = cur_flags.get(add.name)
            switch = reg.takes_value(add.name, dst) is False
            if cur is None:
                if switch and bool_literal(add.value) is False:
                    notes.append(f"already off: {add.text}")
                else:
                    changes.append(add)
            elif reg.same_value(add.name, cur.value, add.value, dst):
                written_name = cur.written.split(None, 1)[0].split("=", 1)[0]
                issues = reg.version_issues(written_name, None, dst, version) if version else ()
                if dst and (issues or not reg.is_registered_spelling(written_name, dst)):
                    why = issues[0].message if issues else reg.rename_note(written_name, dst)
                    changes.append(_replace(add, action="change", old=cur.value,
                                            note=f"your command spells it {written_name}: {why}"))
                else:
                    notes.append(f"already set: {cur.written}")
            elif switch and bool_literal(add.value) is False and not _negatable(add, dst, reg):
                changes.append(_replace(add, action="remove", value=None, text=cur.written))
            else:
                old = cur.value if cur.value is not None else "true"
                changes.append(_replace(add, action="change", old=old))
        elif add.kind == "env":
            have = cur_env.get(add.name)
            if have is None:
                changes.append(add)
            elif have == add.value:
                notes.append(f"already set: {add.name}={have}")
            else:
                changes.append(_replace(add, action="change", old=have))
        else:
            if cur_image and add.note and add.note.startswith("image"):
                if cur_image == f"{add.name}:{add.value}" or cur_image == add.text:
                    notes.append(f"already set: image {cur_image}")
                    continue
            changes.append(add)

    for rem in leftover_removes:
        if current is None or rem.kind == "pin":
            changes.append(rem)
            continue
        if rem.kind == "flag":
            cur = cur_flags.get(rem.name)
            if cur is None:
                notes.append(f"not in your command: {rem.text} (nothing to remove)")
            elif rem.value is not None and not reg.same_value(rem.name, cur.value, rem.value, dst):
                notes.append(f"your command has {cur.written}, not {rem.text}: left as is")
            else:
                changes.append(_replace(rem, value=cur.value, text=cur.written))
        else:
            have = cur_env.get(rem.name)
            if have is None:
                notes.append(f"not in your command: {rem.text} (nothing to remove)")
            elif rem.value is not None and have != rem.value:
                notes.append(f"your command has {rem.name}={have}, not {rem.text}: left as is")
            else:
                changes.append(_replace(rem, value=have, text=f"{rem.name}={have}"))
    if version is not None:
        changes = [_for_release(ch, dst, version, reg) for ch in changes]
    return tuple(changes), tuple(notes)


def _for_release(ch: FlagChange, fw: str | None, version: str, reg: Registry) -> FlagChange:
    """A flag change spelled as release ``version`` accepts it (its name for the setting there,
    a value alias it knows), with a warning in ``note`` when that release lacks the flag or
    the value."""
    if ch.kind != "flag" or _is_config(ch) or ch.action == "remove":
        return ch
    warnings: list[str] = []
    name, value = ch.name, ch.value
    for issue in reg.version_issues(ch.name, ch.value, fw, version):
        if issue.kind == "renamed" and issue.spelling:
            name = issue.spelling
            warnings.append(f"{issue.message}")
        else:
            warnings.append(f"warning: {issue.message}")
    if reg.spelling_in(ch.name, fw, version) is not None:
        fixed = reg.value_in(ch.name, ch.value, fw, version)
        if fixed != value:
            warnings.append(f"{ch.value} is {fixed} in {fw} {version}")
            value = fixed
    if name == ch.name and value == ch.value and not warnings:
        return ch
    text = render_flag(Flag(name, value, ""), fw, registry=reg)
    note = "; ".join([n for n in (ch.note, *warnings) if n])
    return _replace(ch, name=name, value=value, text=text, note=note or None)


def _canonical_text(ch: FlagChange, fw: str | None, reg: Registry) -> FlagChange:
    """``text`` in the target framework's canonical spelling (the written form stays in the
    note when it differs)."""
    if ch.kind == "env":
        return _replace(ch, text=f"{ch.name}={ch.value}")
    if ch.kind != "flag" or _is_config(ch):
        return ch
    return _replace(ch, text=render_flag(Flag(ch.name, ch.value, ""), fw, registry=reg))


def _negatable(ch: FlagChange, fw: str | None, reg: Registry) -> bool:
    spec = reg.spec(ch.name, fw)
    return bool(spec and spec.negatable)


def _replace(ch: FlagChange, **kw: object) -> FlagChange:
    return replace(ch, **kw)  # type: ignore[arg-type]


def diff(
    current: LaunchConfig | None,
    fix: Fix,
    *,
    finding_framework: str | None = None,
    target_framework: str | None = None,
    registry: Registry | None = None,
    target_version: str | None = None,
) -> tuple[FlagChange, ...]:
    """What to change in ``current`` to apply a finding's ``fix``.

    Flags absent from ``current`` are "add", present with another value "change" (``old`` holds
    the user's value), ``fix.remove`` items present in ``current`` "remove"; items already in
    place are left out. With ``current=None`` every item is listed (a removal paired with an add
    of the same flag becomes one "change"). Both sides are compared through the registry, and
    ``text`` uses the target framework's canonical spelling; when ``finding_framework`` differs
    from the target (``target_framework``, else the command's framework) the fix is translated
    and ``note`` says so; items with no equivalent are left out (see :func:`diff_with_notes`).
    With ``target_version`` (e.g. ``"0.5.9"``) flags are spelled as that release of the target
    framework accepts them, and ``note`` warns about a flag or value that release lacks.
    """
    return diff_with_notes(current, fix, finding_framework=finding_framework,
                           target_framework=target_framework, registry=registry,
                           target_version=target_version)[0]


# ---------------------------------------------------------------------------------------------
# Public API: apply
# ---------------------------------------------------------------------------------------------


def _synthesize(current: LaunchConfig, reg: Registry) -> str:
    parts = [f"{k}={_shell_quote(v)}" for k, v in current.env]
    if current.program:
        parts.append(current.program)
    if current.model:
        if current.framework == "sglang" or (current.program or "").endswith("launch_server"):
            parts.append(f"--model-path {_shell_quote(current.model)}")
        else:
            parts.append(_shell_quote(current.model))
    parts += [render_flag(f, current.framework, registry=reg) for f in current.flags]
    return " ".join(parts)


def _py_literal(value: str | None, quote: str = '"') -> str:
    if value is None:
        return "True"
    b = bool_literal(value)
    if b is not None and value.strip().lower() in ("true", "false"):
        return "True" if b else "False"
    if _NUMBER.match(value):
        return value
    text = repr(value)
    if quote == '"' and '"' not in value and "\\" not in text:
        text = '"' + text[1:-1] + '"'
    return text


def apply_changes(
    current: LaunchConfig,
    changes: Sequence[FlagChange],
    *,
    registry: Registry | None = None,
) -> str:
    """The corrected full command: the user's text with changed values replaced, removed flags
    and variables cut out, new flags appended in the user's layout (same line, one per continued
    line, or as keyword arguments), new environment variables added as prefixes (``-e`` for
    ``docker run``), and a pinned image swapped when the command runs that image.
    TensorRT-LLM config keys, package pins, and new variables for a bare flag list cannot be
    expressed in the text and are skipped.
    """
    reg = registry or load_registry()
    text = current.raw if current.raw.strip() else _synthesize(current, reg)
    fw = current.framework
    scan = _scan(text, fw, reg, "--cmd")
    fw = scan.framework or fw
    edits: list[tuple[int, int, str]] = []
    inserts: list[str] = []
    env_prefix: list[str] = []
    pairs = [list(p) for p in scan.model_args[3]] if scan.model_args else None

    for ch in changes:
        if ch.kind == "flag" and not _is_config(ch):
            name = reg.canonical(ch.name, fw)
            if scan.style == "lm_eval" and pairs is not None:
                _apply_model_args(pairs, ch, name, fw, reg)
                continue
            items = [it for it in scan.items if it.flag.name == name and not it.is_model]
            if ch.action == "remove":
                edits.extend(_removal(scan, it) for it in items)
            elif items:
                edits.extend(_value_edit(scan, items[-1], ch, fw, reg))
            else:
                # ch.name: the spelling the change was made for (a release may need an old one)
                inserts.append(_render_new(scan, Flag(ch.name, ch.value, ""), fw, reg))
        elif ch.kind == "env":
            found = [e for e in scan.envs
                     if reg.canonical_env(e.name, fw) == reg.canonical_env(ch.name, fw)]
            if ch.action == "remove":
                edits.extend((e.remove_start, _eat_space(text, e.remove_end, e.style), "")
                             for e in found)
            elif found:
                e = found[-1]
                if e.style == "python":
                    edits.append((e.start, e.end, f'os.environ["{e.name}"] = {ch.value!r}'))
                else:
                    token = text[e.start:e.end]
                    edits.append((e.start, e.end, _rewrite_assignment(token, e.name,
                                                                       ch.value or "")))
            else:
                env_prefix.append(f"{ch.name}={_shell_quote(ch.value or '')}")
        elif ch.kind == "pin" and scan.image is not None and ch.action != "remove":
            repo = scan.image.text.rsplit(":", 1)[0] if ":" in scan.image.text.rsplit(
                "/", 1)[-1] else scan.image.text
            if ch.name == repo and ch.value:
                edits.append((scan.image.start, scan.image.end, f"{repo}:{ch.value}"))

    if pairs is not None and scan.model_args is not None:
        tok, vstart, vend, _ = scan.model_args
        new = ",".join(f"{k}={v}" if v != "" else k for k, v in pairs)
        edits.append((vstart, vend, _shell_quote(new)))
    if inserts:
        edits.append((scan.insert_at, scan.insert_at, "".join(inserts)))
    if env_prefix and scan.style != "flags":  # a bare flag list has nowhere to put them
        edits.append(_env_insert(scan, env_prefix))
    return _apply_edits(text, edits)


def _apply_edits(text: str, edits: list[tuple[int, int, str]]) -> str:
    out = text
    last_start = len(text) + 1
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        end = min(end, last_start)
        out = out[:start] + new + out[end:]
        last_start = start
    return out


def _eat_space(text: str, end: int, style: str) -> int:
    if style in ("prefix", "docker", "systemd"):
        while end < len(text) and text[end] in " \t":
            end += 1
    return end


def _rewrite_assignment(token: str, name: str, value: str) -> str:
    """``NAME=old`` -> ``NAME=new`` inside one raw token, keeping surrounding quotes and any
    ``Environment=``/``-e`` prefix."""
    k = token.find(name + "=")
    prefix = token[:k] if k >= 0 else ""
    quote = token[-1] if token[-1:] in "\"'" and token[-1] in prefix else ""
    new = value if quote and quote not in value else _shell_quote(value)
    return f"{prefix}{name}={new}{quote}"


def _env_insert(scan: _Scan, assignments: list[str]) -> tuple[int, int, str]:
    if scan.style == "python":
        lines = "".join(f'os.environ["{a.split("=", 1)[0]}"] = {a.split("=", 1)[1]!r}\n'
                        for a in assignments)
        prefix = "" if "import os" in scan.text else "import os\n"
        return 0, 0, prefix + lines
    if scan.docker_run_end is not None:
        return scan.docker_run_end, scan.docker_run_end, "".join(f" -e {a}" for a in assignments)
    at = scan.program_start if scan.program_start is not None else 0
    return at, at, " ".join(assignments) + " "


def _removal(scan: _Scan, it: _Item) -> tuple[int, int, str]:
    if it.style == "kwarg":
        idx = scan.items.index(it)
        if idx > 0:
            return scan.items[idx - 1].end, it.end, ""
        nxt = scan.items[idx + 1].start if idx + 1 < len(scan.items) else it.end
        return it.start, nxt, ""
    return it.prev_end, it.end, ""


def _value_edit(scan: _Scan, it: _Item, ch: FlagChange, fw: str | None,
                reg: Registry) -> list[tuple[int, int, str]]:
    text = scan.text
    if it.style == "kwarg":
        return [(it.value_start or it.start, it.end, _py_literal(ch.value, scan.py_quote))]
    switch = reg.takes_value(it.flag.name, fw) is False
    if switch:
        if bool_literal(ch.value) is False:
            spec = reg.spec(it.flag.name, fw)
            if spec is not None and spec.negatable:
                return [(it.start, it.end, "--no-" + spec.name[2:])]
            return [_removal(scan, it)]
        name = it.name_written
        if name.startswith("--no-"):
            name = "--" + name[5:]
        return [(it.start, it.end, name)]
    new = _shell_quote(ch.value) if ch.value is not None else ""
    if reg.nargs(it.flag.name, fw) == "+" and ch.value:
        new = " ".join(_shell_quote(v) for v in ch.value.split())
    name = it.name_written
    if not reg.is_registered_spelling(name, fw):  # e.g. --fp8-gemm-runner-backend: fix it too
        name = it.flag.name
    if ch.name.startswith("-") and (ch.name != it.flag.name or ch.old == ch.value):
        name = ch.name  # the spelling of the user's release, or a change of spelling only
    if it.eq:
        return [(it.start, it.end, f"{name}={new}")]
    if it.value_start is not None and it.value_end is not None:
        edits = [(it.value_start, it.value_end, new)]
        if name != it.name_written:
            edits.append((it.start, it.start + len(it.name_written), name))
        return edits
    return [(it.end, it.end, f" {new}")] if new else [(it.start, it.end, text[it.start:it.end])]


def _render_new(scan: _Scan, flag: Flag, fw: str | None, reg: Registry) -> str:
    if scan.style == "python":
        kw = flag.name.lstrip("-").replace("-", "_")
        return f"{scan.flag_sep}{kw}={_py_literal(flag.value, scan.py_quote)}{scan.flag_suffix}"
    return scan.flag_sep + render_flag(flag, fw, registry=reg)


def _apply_model_args(pairs: list[list[str]], ch: FlagChange, name: str, fw: str | None,
                      reg: Registry) -> None:
    key = name.lstrip("-").replace("-", "_")
    hits = [p for p in pairs if reg.canonical("--" + p[0], fw) == name]
    value = "True" if ch.value is None else ch.value
    if bool_literal(ch.value) is False and reg.takes_value(name, fw) is False:
        value = "False"
    if ch.action == "remove":
        for p in hits:
            pairs.remove(p)
    elif hits:
        hits[-1][1] = value
    else:
        pairs.append([key, value])
