"""Redact secrets and private addresses from anything deploykb prints, writes or sends.

A pure function: text in, redacted text and the list of what was replaced out. ``redact`` is the
one pass every output goes through (``add`` before writing a finding, ``ask``/``triage``/``show``/
``export`` before printing, ``lint`` to find what is left); ``redact_record`` applies it to every
string of a record.

Linear in the input: the text is handled line by line (a private-key block is the one thing that
spans lines), every pattern's repetition is bounded, and each rule is tried only on lines holding
its cheap marker. The rules are ordered: secrets first (a token may contain an '@' or dots), then
e-mail and user@host, then addresses, then host names and home-directory user names.

Four dotted numbers (``a.b.c.d``) are an address or a version by this rule, in order:
loopback, 0.0.0.0 and ``0.x.y.z`` are neither (kept: 0.10.1.1 is a version); 192.168/16,
172.16/12 and 169.254/16 are always addresses, whatever word comes before (no four-part version
of a package in this field begins 192.168, 172.16-31 or 169.254); ``a.b.c.d:port`` is an address;
``a.b.c.d-1`` and ``a.b.c.d+cu12`` are versions (a build suffix); otherwise the words just before
decide: a version cue (cudnn, tensorrt, nccl, version, release, build, ``==``, a ``pip list``
package name, ...) with no address cue (host, addr, peer, ``@``, ...) makes it a version, so
``TensorRT 10.1.2.3`` and ``nvidia-cudnn-cu12 9.10.2.21`` stay; anything else is an address.

``safe_text`` is what every output shows: the redacted text with its control characters made
visible (``neutralise``), so a finding or a pasted log cannot drive the terminal.

The labelled corpus in ``eval/redaction/`` (secrets that must go, clean lines that must stay
untouched) measures it: ``python scripts/redaction_eval.py``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import threading
from collections.abc import Callable
from typing import Any

from kb.records import Redaction

# Every placeholder a rule below writes in place of what it removed (a home directory keeps its
# prefix: /home/<user>/). ``lint`` refuses one where a value must stand (a version, a model id,
# a flag's setting); tests/test_redact.py keeps the list in step with the rules.
PLACEHOLDERS = (
    "<redacted>",
    "<ip>",
    "<ipv6>",
    "<host>",
    "<user>",
    "<email>",
    "<private-key>",
    "<hf-token>",
    "<api-key>",
    "<github-token>",
    "<aws-access-key>",
    "<ngc-key>",
    "<jwt>",
    "<slack-webhook>",
    "<slack-token>",
)
_PLACEHOLDER_RE = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))


def placeholders_in(text: str) -> tuple[str, ...]:
    """The redaction placeholders ``text`` holds, each once, in order (``("<redacted>", "<ip>")``
    for ``<redacted>/Model-<ip>``)."""
    return tuple(dict.fromkeys(_PLACEHOLDER_RE.findall(text)))


# Hosts that are public documentation or registries: never redacted (sources link to them), nor
# are their sub-domains.
PUBLIC_HOSTS = (
    "github.com",
    "gist.github.com",
    "raw.githubusercontent.com",
    "githubusercontent.com",
    "github.io",
    "huggingface.co",
    "hf.co",
    "pypi.org",
    "pythonhosted.org",
    "readthedocs.io",
    "vllm.ai",
    "sglang.ai",
    "lmsys.org",
    "flashinfer.ai",
    "nvidia.com",
    "ghcr.io",
    "docker.io",
    "docker.com",
    "nvcr.io",
    "ngc.nvidia.com",
    "pytorch.org",
    "python.org",
    "arxiv.org",
    "openai.com",
    "anthropic.com",
    "google.com",
    "googleapis.com",
    "microsoft.com",
    "stackoverflow.com",
    "reddit.com",
    "medium.com",
    "x.com",
    "twitter.com",
    "localhost",
    "example.com",
    "example.org",
    "example.net",
)
_PRIVATE_TLDS = ("internal", "local", "lan", "corp", "home", "intranet", "localdomain", "cluster")
# Top-level domains a private machine may sit under (``gpu07.acme-ml.com``).
_PUBLIC_TLDS = (
    "com|net|org|io|ai|dev|cloud|co|app|tech|xyz|info|biz|me|sh|us|uk|de|fr|nl|cn|jp|kr|in|ca"
    "|au|eu|ru|ch|se|no|fi|sg|tw|hk|br|es|it|pl|il|ms|gg|so|run|systems|network|services|host"
)
# The first label of a machine's name: it holds a digit (gpu07, node-3) or names a role.
_MACHINE_LABEL = re.compile(
    r"(?i)^(?:[a-z-]*\d[\w-]*|gpu|gpus|node|nodes|host|srv|server|worker|head|login|compute"
    r"|inference|infer|api|internal|prod|staging|stage|k8s|kube|cluster|db|cache|registry|git"
    r"|gitlab|jenkins|vpn|bastion|jump|mlflow|grafana|ray|slurm|nfs|storage|train|training"
    r"|serving|llm|model|models|vm|box|lab|dgx|hpc|ci|build)$"
)
# File extensions: ``scheduler.py:1234`` is a file and a line, not a host and a port.
_FILE_EXT = re.compile(
    r"(?i)^(?:py|pyi|pyx|cu|cuh|cc|cpp|cxx|c|h|hpp|hh|json|jsonl|yaml|yml|md|txt|log|sh|rs|go|js"
    r"|ts|toml|cfg|ini|safetensors|bin|pt|pth|so|html|csv|ptx|cubin|o|a|whl|tar|gz|zip|lock)$"
)
# Words before ``:number`` that are not machines: devices, ranks, layers.
_NOT_A_HOST = re.compile(
    r"(?i)^(?:tp|dp|pp|ep|cp|sm|sm_|rank|cuda|cu|py|v|step|epoch|layer|line|port|gpu|device"
    r"|dev|node|worker|id|pid|tid|seq|req|batch|stream|block|thread|warp|lane)[-_]?\d*$"
)

_Rule = tuple[str, str | None, re.Pattern[str], Callable[[re.Match[str]], str | None]]


def _const(value: str) -> Callable[[re.Match[str]], str]:
    return lambda m: value


def _keep_name(m: re.Match[str]) -> str:
    return f"{m.group(1)}<redacted>"


# The value after a secret's name: quoted (taken whole, several words included: 'my secret
# value') or bare. After NAME= or "name": it must be 6 characters or more and a bare one must
# hold a letter (max_new_token=512 is a count); after --api-key and its kind, anything is the
# secret. Placeholders are left: <api-key>, $VAR / ${VAR}, [PAD]-style special tokens.
_QUOTED = r"(?P<q>['\"])(?![<$\[])(?:(?!(?P=q))[^\n]){%d,4000}(?P=q)"
_BARE = r"(?P<oq>['\"]?)(?![<$\[%s])%s[^\s'\",)]{%d,4000}"
_HAS_LETTER = r"(?=[^\s'\"]{0,500}[A-Za-z])"
_SECRET_VALUE = f"(?:{_QUOTED % 6}|{_BARE % ('', _HAS_LETTER, 6)})"
_FLAG_VALUE = f"(?:{_QUOTED % 1}|{_BARE % ('-', '', 1)})"


def _keep_name_quoted(m: re.Match[str]) -> str:
    """The name (and the quotes) kept, the value gone: ``--api-key '<redacted>'``."""
    quote = m.group("q") or ""
    return f"{m.group(1)}{quote or m.group('oq') or ''}<redacted>{quote}"


def _is_public(host: str) -> bool:
    host = host.lower().rstrip(".")
    return host in PUBLIC_HOSTS or any(host.endswith("." + p) for p in PUBLIC_HOSTS)


# Four-part versions look like addresses (cuDNN 9.19.0.56, nvidia-cudnn-cu12 9.10.2.21): the word,
# package name or pin operator just before the number tells them apart.
_VERSION_CUE = re.compile(
    r"(?i)(?:\b(?:cudnn|cublas|cusparselt|tensorrt|trt|nccl|cuda|cutlass|driver|version|ver"
    r"|release|firmware|vbios|build)|==|>=|<=|~=|!=)[\s:=]{0,4}$"
    r"|(?:^|\s)[A-Za-z][\w.]{0,60}[-_][\w.-]{0,60}\s{1,40}$"  # `pip list`: name-with-dash  1.2.3.4
)
# Private and link-local blocks whose leading numbers no four-part version uses (192.168, 172.16
# to 172.31, 169.254): always addresses. 10/8 is not among them: TensorRT 10.1.2.3 is a version.
_ALWAYS_ADDRESSES = tuple(
    ipaddress.IPv4Network(n) for n in ("192.168.0.0/16", "172.16.0.0/12", "169.254.0.0/16")
)
_ADDRESS_CUE = re.compile(r"(?i)(?:addr|address|host|ip|peer|server|master|endpoint|@)[\s:=]*$")


def _ipv4(m: re.Match[str]) -> str | None:
    text = m.group(0)
    try:
        ip = ipaddress.IPv4Address(text)
    except ValueError:
        return None
    if ip.is_loopback or ip.is_unspecified or text.startswith("0."):
        return None  # 127.0.0.1, 0.0.0.0 and 0.x.y.z (a version: 0.10.1.1) say nothing of a network
    if any(ip in block for block in _ALWAYS_ADDRESSES):
        return "<ip>"  # 192.168.1.10 is a machine whatever word comes before it
    line = m.string
    after = line[m.end() : m.end() + 2]
    if after[:1] == ":" and after[1:2].isdigit():
        return "<ip>"  # address:port
    if after[:1] in ("+", "-") or after[:2].startswith(("-", "+")):
        return None  # 9.10.2.21-1, 1.2.3.4+cu12: a version with a build suffix
    before = line[max(0, m.start() - 80) : m.start()]
    if m.start() < 40:  # a hard-wrapped line: "... (bundles cuDNN\n9.19.0.56, ..."
        before = getattr(_LINE, "previous", "")[-40:] + " " + before
    if _VERSION_CUE.search(before) and not _ADDRESS_CUE.search(before):
        return None
    return "<ip>"


def _ipv6(m: re.Match[str]) -> str | None:
    try:
        ip = ipaddress.IPv6Address(m.group(0))
    except ValueError:
        return None
    if ip.is_loopback or ip.is_unspecified:
        return None
    return "<ipv6>"


# What follows '@' in a pin rather than a login: a tag, a commit, a digest.
_REVISION = re.compile(r"v?\d[\w.]*|sha\d+", re.IGNORECASE)


def _user_host(m: re.Match[str]) -> str | None:
    host = m.group(2)
    if _is_public(host):
        return None
    before = m.string[m.start() - 1] if m.start() else ""
    if before in "/:":
        return None  # org/repo@rev, repo.git@tag, image:tag@sha256: a pinned revision
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if _REVISION.fullmatch(host):
            return None
    return "<user>@<host>"


def _private_tld_host(m: re.Match[str]) -> str | None:
    return None if _is_public(m.group(0)) else "<host>"


def _public_tld_host(m: re.Match[str]) -> str | None:
    """``gpu07.acme-ml.com``: a machine under a public TLD (its first label names a machine, and
    it has a sub-domain), unless the domain is a known public one."""
    host = m.group(0)
    if _is_public(host):
        return None
    labels = host.split(".")
    if len(labels) < 3 or not _MACHINE_LABEL.match(labels[0]):
        return None
    return "<host>"


_WEB_LABEL = re.compile(
    r"(?i)^(?:www\d?|docs|doc|blog|blogs|forum|forums|discuss|developer|developers|wiki|en|news|help|support|status|about|learn|community)$"
)


def _url_host(m: re.Match[str]) -> str | None:
    host = m.group(0)
    if _is_public(host) or _WEB_LABEL.match(host.split(".")[0]):
        return None
    return "<host>"


def _after_keyword_host(m: re.Match[str]) -> str | None:
    host = m.group(2)
    if host.startswith(("<", "-")) or _is_public(host):
        return None
    try:
        ipaddress.ip_address(host)
        return None  # addresses have their own rule
    except ValueError:
        pass
    return f"{m.group(1)}<host>"


def _host_port(m: re.Match[str]) -> str | None:
    """``gpu-node-07:29500``, ``head.acme-ml.com:6379``: a named machine and a port."""
    host, port = m.group(1), m.group(2)
    if not 0 < int(port) < 65536 or _is_public(host) or host.startswith("<"):
        return None
    labels = host.split(".")
    if len(labels) == 1:
        if not re.search(r"[\d-]", host) or _NOT_A_HOST.match(host):
            return None  # cuda:10, rank:12: not machines
    elif _FILE_EXT.match(labels[-1]) or not labels[-1].isalpha():
        return None  # scheduler.py:1234 is a file and a line
    return f"<host>:{port}"


def _home(m: re.Match[str]) -> str:
    return f"{m.group(1)}<user>"


_H = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"  # one host-name label

# (kind, marker, pattern, replacement): a rule runs on a line only when its marker (a plain
# substring, lower-case: the line is lower-cased for the test) is in it.
RULES: tuple[_Rule, ...] = (
    # --- secrets -------------------------------------------------------------------------------
    (
        "private-key",
        "-----begin",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.{0,20000}?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|.{0,20000})"
        ),
        _const("<private-key>"),
    ),
    (
        "private-key",
        None,
        # a key body without its header: DER keys start "MII", OpenSSH keys "b3BlbnNzaC1rZXkt"
        re.compile(
            r"(?<![\w+/])(?:MII[A-Za-z0-9+/]{60,4000}|b3BlbnNzaC1rZXkt[A-Za-z0-9+/]{20,4000})={0,2}"
        ),
        _const("<private-key>"),
    ),
    ("hf-token", "hf_", re.compile(r"\bhf_[A-Za-z0-9]{30,200}\b"), _const("<hf-token>")),
    (
        # short or made-up tokens (hf_AbC123xyz): a digit or a capital, so hf_transfer stays
        "hf-token",
        "hf_",
        re.compile(r"\bhf_(?=[a-z]{0,28}[A-Z0-9])[A-Za-z0-9]{6,29}\b"),
        _const("<hf-token>"),
    ),
    (
        "openai-key",
        "sk-",
        re.compile(r"\bsk-(?:proj-|svcacct-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{20,300}"),
        _const("<api-key>"),
    ),
    (
        "github-token",
        "_",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})\b"),
        _const("<github-token>"),
    ),
    ("aws-key", None, re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), _const("<aws-access-key>")),
    ("ngc-key", "nvapi-", re.compile(r"\bnvapi-[A-Za-z0-9_-]{20,300}"), _const("<ngc-key>")),
    (
        "jwt",
        "eyj",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,4000}\.eyJ[A-Za-z0-9_-]{8,8000}\.[A-Za-z0-9_-]{0,4000}"),
        _const("<jwt>"),
    ),
    (
        "google-api-key",
        "aiza",
        re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![\w-])"),
        _const("<api-key>"),
    ),
    (
        "slack-webhook",
        "hooks.slack.com",
        re.compile(
            r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{8,300}"
        ),
        _const("<slack-webhook>"),
    ),
    (
        "slack-token",
        "xox",
        re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,300}"),
        _const("<slack-token>"),
    ),
    (
        "aws-secret",
        "aws_secret",
        re.compile(r"(?i)(aws_secret_access_key\s{0,4}[=:]\s{0,4}['\"]?)[A-Za-z0-9/+=]{40}"),
        _keep_name,
    ),
    (
        "docker-password",
        "login",
        re.compile(
            r"(\b(?:docker|podman|nerdctl|buildah|skopeo|helm\s+registry|oras)\s+login\b"
            r"[^\n]{0,300}?\s(?:-p|--password)(?:\s+|=)['\"]?)(?![<$])[^\s'\"]{1,500}"
        ),
        _keep_name,
    ),
    (
        "docker-password",
        "login",
        # echo <key> | docker login ... --password-stdin
        re.compile(
            r"(\becho\s+(?:-n\s+)?['\"]?)(?![<$])[A-Za-z0-9+/=_.-]{16,500}"
            r"(?=['\"]?\s*\|\s*(?:docker|podman|helm|nerdctl)\b[^\n]{0,200}\blogin\b)"
        ),
        _keep_name,
    ),
    (
        "bearer-token",
        None,
        re.compile(
            r"(?i)((?:authorization|proxy-authorization)\s{0,4}[:=]\s{0,4}['\"]?"
            r"(?:bearer|basic|token|apikey)\s{1,4})(?![<$])[A-Za-z0-9._~+/=-]{8,4000}"
        ),
        _keep_name,
    ),
    (
        "bearer-token",
        "bearer",
        re.compile(
            r"(?i)(\bbearer\s{1,4})(?![<$])(?=[A-Za-z0-9._~+/=-]{0,300}\d)[A-Za-z0-9._~+/=-]{16,4000}"
        ),
        _keep_name,
    ),
    (
        "auth-header",
        None,
        re.compile(
            r"(?i)(\b(?:x-api-key|api-key|x-auth-token|x-access-token|private-token)\s{0,4}:\s{0,4}"
            r"['\"]?)(?![<$])[^\s'\",]{8,4000}"
        ),
        _keep_name,
    ),
    (
        # NAME=value, name=value (engine kwargs), "name": value (JSON, a Python dict) and
        # name: value (YAML): tokens, keys, secrets, passwords. A quoted value is taken whole
        # (several words); a bare one must hold a letter, so "max_new_token=512" is left alone,
        # and a placeholder (<...>, $VAR, [PAD]) is no secret
        "env-secret",
        None,
        re.compile(
            r"(?i)(?<!-)\b([A-Z_]{0,64}(?:TOKEN|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY|SECRET[A-Z_]{0,32}"
            r"|PASSWORD|PASSWD|PASS)['\"]?\s{0,4}[=:]\s{0,4})" + _SECRET_VALUE
        ),
        _keep_name_quoted,
    ),
    (
        # --api-key VALUE, --api-key=VALUE, --api-key 'several words' (any length when quoted)
        "api-key-flag",
        "--",
        re.compile(
            r"(--(?:api[-_]key|hf[-_]token|token|password|passwd|secret|access[-_]token"
            r"|auth[-_]token|api[-_]token|ngc[-_]api[-_]key)(?:=|\s{1,4}))" + _FLAG_VALUE
        ),
        _keep_name_quoted,
    ),
    (
        "docker-password",
        " -p",
        # an NGC key or password after -p in any login-like command (ngc, helm, oras, ...)
        re.compile(r"(\$oauthtoken\s{1,4}-p(?:\s{1,4}|=)['\"]?)(?![<$])[^\s'\"]{8,500}"),
        _keep_name,
    ),
    # credentials in a URL: https://user:password@host/...
    (
        "url-credentials",
        "://",
        re.compile(r"(?<=://)[^/\s@:<]{1,256}(?::[^/\s@]{0,256})?@"),
        _const("<user>@"),
    ),
    # --- people and machines -------------------------------------------------------------------
    (
        # the host someone logged into with the credentials just removed
        "hostname",
        "<user>@",
        re.compile(rf"(?<=<user>@)(?:{_H}\.){{0,8}}{_H}"),
        lambda m: None if _is_public(m.group(0)) else "<host>",
    ),
    (
        # a URL's host with a sub-domain (llm-gw.acme-ml.com), unless public or a web site's
        "hostname",
        "://",
        re.compile(rf"(?<=://)(?:{_H}\.){{2,8}}[A-Za-z]{{2,24}}(?![\w-])"),
        _url_host,
    ),
    (
        "email",
        "@",
        re.compile(r"\b[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z]{2,24}\b"),
        _const("<email>"),
    ),
    (
        "ssh-user-host",
        "@",
        re.compile(
            r"\b([A-Za-z_][\w.-]{0,63})@([A-Za-z0-9][\w.-]{0,252}[A-Za-z0-9]|\d{1,3}(?:\.\d{1,3}){3})"
        ),
        _user_host,
    ),
    ("ipv4", ".", re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]{0,40}\d)"), _ipv4),
    (
        "ipv6",
        ":",
        re.compile(
            r"(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){2,7}[0-9A-Fa-f]{1,4}(?![\w:])|"
            r"(?<![\w])(?:[0-9A-Fa-f]{1,4}:){1,7}:(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6})?(?![\w:])"
        ),
        _ipv6,
    ),
    (
        # a name under a private domain, whole: gpu07.cluster.internal, and gpu-node-17.corp.acme.io
        # (a private label inside a public domain); not Path.home() nor self.cluster.local_rank
        "hostname",
        ".",
        re.compile(
            rf"\b(?:{_H}\.){{1,8}}(?:{'|'.join(_PRIVATE_TLDS)})"
            rf"(?:(?:\.{_H}){{0,5}}\.(?:{_PUBLIC_TLDS}))?(?![\w(-]|\.\w)"
        ),
        _private_tld_host,
    ),
    (
        "hostname",
        ".",
        re.compile(rf"(?<![\w.@/-])(?:{_H}\.){{2,8}}(?:{_PUBLIC_TLDS})(?![\w-]|\.\w)"),
        _public_tld_host,
    ),
    (
        "hostname",
        None,
        re.compile(
            r"(\b(?:ssh|mosh|sftp)\s{1,8}(?:-[^\s]{1,40}\s{1,8}(?:[^\s-][^\s]{0,200}\s{1,8})?){0,8}?)"
            r"([A-Za-z][\w-]{0,62}(?:\.[\w-]{1,63}){0,8})(?=[\s:'\"]|$)"
        ),
        _after_keyword_host,
    ),
    (
        # scp/rsync name a machine as host:path
        "hostname",
        None,
        re.compile(
            r"(\b(?:scp|rsync)\b[^\n]{0,300}?\s)([A-Za-z][\w-]{0,62}(?:\.[\w-]{1,63}){0,8})"
            r"(?=:[~/.\w])"
        ),
        _after_keyword_host,
    ),
    (
        "hostname",
        None,
        re.compile(
            r"((?:--host|--dist-init-addr|--nccl-init-addr|MASTER_ADDR|--master-addr"
            r"|--head-node-address|--rdzv-endpoint|--rdzv_endpoint)"
            r"[= ]\s{0,4})([A-Za-z][\w-]{0,62}(?:\.[\w-]{1,63}){0,8})"
        ),
        _after_keyword_host,
    ),
    (
        "hostname",
        ":",
        re.compile(
            r"(?:(?<=//)|(?<![\w./:@<>-]))([A-Za-z][\w-]{0,62}(?:\.[A-Za-z0-9-]{1,63}){0,8})"
            r":(\d{2,5})(?![\w.:])"
        ),
        _host_port,
    ),
    (
        "home-path",
        None,
        re.compile(r"(/home/|/Users/|C:\\Users\\)(?![<.])([^/\\\s'\"]{1,64})"),
        _home,
    ),
    (
        # ~jdoe/models: a user's home by name (not ~/.cache, ~1.5x, vllm~=0.10)
        "home-path",
        "~",
        re.compile(r"(?<![^\s'\"=:(,\[])(~)(?!<)([A-Za-z_][\w.-]{0,31})(?=/)"),
        _home,
    ),
)

_KEY_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_KEY_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")


def redact(text: str) -> tuple[str, tuple[Redaction, ...]]:
    """Return the redacted text and each replacement made (kind, original, replacement, line)."""
    found: list[Redaction] = []
    out: list[str] = []
    _LINE.previous = ""
    in_key: list[str] | None = None  # the lines of a private-key block being swallowed
    key_line = 0
    for number, line in enumerate(text.split("\n"), start=1):
        if in_key is not None:
            end = _KEY_END.search(line)
            in_key.append(line if end is None else line[: end.end()])
            if end is None:
                continue
            found.append(Redaction("private-key", "\n".join(in_key), "<private-key>", key_line))
            line = line[end.end() :]
            in_key = None
        begin = _KEY_BEGIN.search(line)
        if begin is not None and _KEY_END.search(line, begin.end()) is None:
            # a block over several lines: everything to its END line is one secret
            in_key, key_line = [line[begin.start() :]], number
            out.append(_redact_line(line[: begin.start()], number, found) + "<private-key>")
            continue
        out.append(_redact_line(line, number, found))
    if in_key is not None:  # no END: the key runs to the end of the text
        found.append(Redaction("private-key", "\n".join(in_key), "<private-key>", key_line))
    return "\n".join(out), tuple(found)


_LINE = threading.local()  # the line before the one being redacted (a cue may end it)


def _redact_line(line: str, number: int, found: list[Redaction]) -> str:
    if not line.strip():
        return line
    original = line
    lower = line.lower()
    for kind, marker, pattern, replace in RULES:
        if marker is not None and marker not in lower:
            continue

        def sub(m: re.Match[str], kind: str = kind, replace=replace) -> str:
            new = replace(m)
            if new is None or new == m.group(0):
                return m.group(0)
            found.append(Redaction(kind, m.group(0), new, number))
            return new

        new_line = pattern.sub(sub, line)
        if new_line is not line:
            line = new_line
            lower = line.lower()
    _LINE.previous = original[-80:]
    return line


# C0 controls but tab and newline, DEL, and C1 (U+0080-U+009F: U+009B is a CSI on some terminals)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def neutralise(text: str) -> str:
    """``text`` with every control character but newline and tab written out as ``\\xNN``
    (ESC is ``\\x1b``), so what a finding or a log holds is shown, never run by a terminal
    (``\\e]0;title\\a`` sets a window title, ``\\e[2J`` clears the screen). A CR before a newline
    is a line ending and goes."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(_visible, text.replace("\r\n", "\n"))


def _visible(m: re.Match[str]) -> str:
    return f"\\x{ord(m.group(0)):02x}"


def control_characters(text: str) -> list[tuple[int, str]]:
    """``(line, character)`` of each control character ``neutralise`` would write out."""
    text = text.replace("\r\n", "\n")
    out: list[tuple[int, str]] = []
    line, pos = 1, 0
    for m in _CONTROL.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        out.append((line, m.group(0)))
    return out


def safe_text(text: str) -> str:
    """What any output shows of ``text``: redacted, then control characters made visible (in
    that order: a raw CR or ESC still separates a token from what precedes it for the rules)."""
    return neutralise(redact(text)[0])


def find_secrets(text: str) -> tuple[Redaction, ...]:
    """What ``redact`` would replace: used by ``lint`` to flag an unredacted finding."""
    return redact(text)[1]


def redact_text(text: str) -> str:
    return redact(text)[0]


def redact_record(value: Any, skip: frozenset[str] = frozenset()) -> Any:
    """``value`` with every string in it through ``safe_text`` (redacted, control characters
    made visible): records (frozen dataclasses), tuples, lists and dicts are rebuilt, other values
    kept. Fields named in ``skip`` are left as they are."""
    if isinstance(value, str):
        return safe_text(value) if len(value) > 3 else neutralise(value)
    if isinstance(value, tuple) and len(value) == 2 and _secret_value(*value):
        return (value[0], "<redacted>")  # an (ENV_NAME, value) pair: ("HF_TOKEN", "abc def")
    if isinstance(value, (tuple, list)):
        items = [redact_record(v, skip) for v in value]
        return type(value)(items) if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: redact_record(v, skip) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: redact_record(getattr(value, f.name), skip)
            for f in dataclasses.fields(value)
            if f.init and f.name not in skip
        }
        # a parsed flag keeps its value apart from its name (--api-key, 'my secret value'):
        # judged together, as written
        name = getattr(value, "name", None)
        for part in ("value", "old"):
            if part in changes and _secret_value(name, getattr(value, part)):
                changes[part] = "<redacted>"
        return dataclasses.replace(value, **changes)
    return value


_SECRET_KINDS = frozenset({"api-key-flag", "env-secret", "auth-header", "docker-password"})


def _secret_value(name: object, value: object) -> bool:
    """``value`` is the secret of a setting called ``name`` (``--api-key``, ``HF_TOKEN``)."""
    if not isinstance(name, str) or not isinstance(value, str) or not value or len(name) > 100:
        return False
    sep = " " if name.startswith("-") else "="
    quoted = "'" + value.replace("'", "") + "'"
    return any(r.kind in _SECRET_KINDS for r in redact(f"{name}{sep}{quoted}")[1])
