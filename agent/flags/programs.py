"""The program a launch command runs, and what ``docker run`` sets around it.

``python -m sglang.launch_server``, ``sglang serve``, ``vllm serve``, ``trtllm-serve``,
``lm_eval --model vllm`` or a framework's image run by ``docker run`` (its ``-e`` variables too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.flags.layout import EnvSpan
from agent.flags.tokens import ASSIGN, Token, flag_like
from kb.frameworks import normalise_framework

_DOCKER = frozenset({"docker", "podman", "nvidia-docker"})
_DOCKER_SWITCHES = frozenset(
    "--rm --detach --interactive --tty --privileged --init --read-only --no-healthcheck "
    "--oom-kill-disable --publish-all --disable-content-trust --help --quiet".split()
)
_DOCKER_SHORT_SWITCHES = frozenset("ditPq")
_MODULE_FRAMEWORK = {"sglang": "sglang", "vllm": "vllm", "tensorrt_llm": "tensorrt-llm"}


@dataclass(frozen=True)
class Program:
    start: int  # index of its first token
    after: int  # index after it
    text: str
    framework: str | None
    kind: str  # "python" | "cli" | "lm_eval" | "image"


def find_program(toks: list[Token]) -> Program | None:
    for i, t in enumerate(toks):
        base = t.text.rsplit("/", 1)[-1]
        nxt = toks[i + 1].text if i + 1 < len(toks) else ""
        found = None
        if re.fullmatch(r"python[\d.]*", base):
            found = _python_module(toks, i)
        elif base in ("sglang", "vllm") and nxt == "serve":
            found = Program(i, i + 2, f"{t.text} serve", base, "cli")
        elif base == "trtllm-serve":
            k = i + 2 if nxt == "serve" else i + 1
            found = Program(i, k, " ".join(x.text for x in toks[i:k]), "tensorrt-llm", "cli")
        elif base in ("lm_eval", "lm-eval"):
            found = _lm_eval(toks, i)
        if found is not None:
            return found
    docker = docker_run(toks, len(toks))
    if docker is not None and docker[1] < len(toks):
        img = docker[1]
        rest = toks[img + 1 :]
        if not rest or flag_like(rest[0].text):  # arguments to the image's own entrypoint
            return Program(img, img + 1, f"docker run {toks[img].text}", None, "image")
    return None


def _python_module(toks: list[Token], i: int) -> Program | None:
    """``python [-X ...] -m sglang.launch_server``: the program, when the module is a framework's."""
    j = i + 1
    while j < len(toks) and j <= i + 4 and toks[j].text != "-m" and flag_like(toks[j].text):
        j += 1
    if j + 1 < len(toks) and toks[j].text == "-m":
        fw = _MODULE_FRAMEWORK.get(toks[j + 1].text.split(".")[0])
        if fw:
            return Program(i, j + 2, " ".join(x.text for x in toks[i : j + 2]), fw, "python")
    return None


def _lm_eval(toks: list[Token], i: int) -> Program | None:
    """``lm_eval --model vllm ...``: the program, when ``--model`` names a framework."""
    for j in range(i + 1, len(toks) - 1):
        if toks[j].text in ("--model", "--model_type"):
            fw = normalise_framework(toks[j + 1].text)
            if fw:
                return Program(
                    i, i + 1, f"{toks[i].text} --model {toks[j + 1].text}", fw, "lm_eval"
                )
        elif toks[j].text.startswith("--model="):
            fw = normalise_framework(toks[j].text.split("=", 1)[1])
            if fw:
                return Program(i, i + 1, f"{toks[i].text} {toks[j].text}", fw, "lm_eval")
    return None


def docker_run(toks: list[Token], upto: int) -> tuple[int, int, list[tuple[Token, Token]]] | None:
    """(index of 'run', index of the image, [(option token, NAME=value token)]) or None."""
    for d in range(upto):
        if toks[d].text.rsplit("/", 1)[-1] in _DOCKER and d + 1 < len(toks):
            run = d + 1
            if toks[run].text == "container" and run + 1 < len(toks):
                run += 1
            if toks[run].text != "run":
                continue
            image, envs = _docker_options(toks, run + 1)
            return run, image, envs
    return None


def _docker_options(toks: list[Token], k: int) -> tuple[int, list[tuple[Token, Token]]]:
    """The index of the image after ``docker run``'s options from ``k``, and its ``-e`` options."""
    envs: list[tuple[Token, Token]] = []
    while k < len(toks):
        w = toks[k].text
        if not w.startswith("-") or w == "-":
            return k, envs
        k = _docker_option(toks, k, envs)
    return len(toks), envs


def _docker_option(toks: list[Token], k: int, envs: list[tuple[Token, Token]]) -> int:
    """The index after the ``docker run`` option at ``k``; an ``-e X=1``, ``-eX=1``, ``--env X=1``
    or ``--env=X=1`` is added to ``envs`` as (option token, NAME=value token)."""
    w = toks[k].text
    long = w.startswith("--")
    opt, eq, _ = w.partition("=")
    if (long and opt == "--env") or (not long and not _switches(w) and w[1] == "e"):
        if eq if long else len(w) > 2:  # the value in the same token
            envs.append((toks[k], toks[k]))
        elif k + 1 < len(toks):
            envs.append((toks[k], toks[k + 1]))
            return k + 2
        return k + 1
    if long:
        return k + 2 if not eq and opt not in _DOCKER_SWITCHES else k + 1
    return k + 2 if not _switches(w) and len(w) == 2 else k + 1


def _switches(w: str) -> bool:
    """``-d``, ``-it``: short switches that take no value."""
    if len(w) == 2:
        return w[1] in _DOCKER_SHORT_SWITCHES
    return all(c in _DOCKER_SHORT_SWITCHES for c in w[1:])


def docker_envs(options: list[tuple[Token, Token]]) -> list[EnvSpan]:
    """``docker run -e NAME=value`` / ``--env NAME=value`` / ``-eNAME=value`` as variables."""
    out = []
    for opt, tok in options:
        payload = tok.text.split("=", 1)[1] if tok is opt else tok.text
        if opt.text.startswith("-e") and opt.text != "-e" and tok is opt:
            payload = tok.text[2:]
        m = ASSIGN.match(payload)
        if m:
            out.append(
                EnvSpan(m.group(1), m.group(2), tok.start, tok.end, "docker", opt.start, tok.end)
            )
    return out
