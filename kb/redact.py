"""Redact secrets and private addresses from pasted logs and commands before anything is written.

A pure function: text in, redacted text and the list of what was replaced out. The rules are
ordered: secrets first (a token may contain an '@' or dots), then e-mail and user@host, then
addresses, then host names and home-directory user names.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

from kb.records import Redaction

# Hosts that are public documentation or registries: never redacted (sources link to them).
PUBLIC_HOSTS = (
    "github.com",
    "gist.github.com",
    "raw.githubusercontent.com",
    "huggingface.co",
    "hf.co",
    "pypi.org",
    "files.pythonhosted.org",
    "docs.vllm.ai",
    "docs.sglang.ai",
    "docs.nvidia.com",
    "developer.nvidia.com",
    "nvidia.com",
    "ghcr.io",
    "docker.io",
    "hub.docker.com",
    "nvcr.io",
    "download.pytorch.org",
    "pytorch.org",
    "localhost",
    "example.com",
)
_PRIVATE_TLDS = ("internal", "local", "lan", "corp", "home", "intranet", "localdomain", "cluster")

_Rule = tuple[str, re.Pattern[str], Callable[[re.Match[str]], str | None]]


def _const(value: str) -> Callable[[re.Match[str]], str]:
    return lambda m: value


# Four-part versions look like addresses (cuDNN 9.19.0.56, TensorRT 10.0.1.6): the word or pin
# operator just before the number tells them apart.
_VERSION_CUE = re.compile(
    r"(?i)(?:\b(?:cudnn|cublas|cusparselt|tensorrt|trt|nccl|cuda|cutlass|driver|version|ver|release)"
    r"|==|>=|<=|~=|!=)[\s:=]*$"
)


def _ipv4(m: re.Match[str]) -> str | None:
    text = m.group(0)
    try:
        ip = ipaddress.IPv4Address(text)
    except ValueError:
        return None
    if ip.is_loopback or ip.is_unspecified:
        return None  # 127.0.0.1 and 0.0.0.0 say nothing about anyone's network
    if _VERSION_CUE.search(m.string[max(0, m.start() - 24) : m.start()]):
        return None
    return "<ip>"


def _ipv6(m: re.Match[str]) -> str | None:
    text = m.group(0)
    try:
        ip = ipaddress.IPv6Address(text)
    except ValueError:
        return None
    if ip.is_loopback or ip.is_unspecified:
        return None
    return "<ipv6>"


def _keep_secret_name(m: re.Match[str]) -> str:
    return f"{m.group(1)}<redacted>"


# What follows '@' in a pin rather than a login: a tag, a commit, a digest.
_REVISION = re.compile(r"v?\d[\w.]*|sha\d+", re.IGNORECASE)


def _user_host(m: re.Match[str]) -> str | None:
    host = m.group(2)
    if host.lower() in PUBLIC_HOSTS:
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


def _hostname(m: re.Match[str]) -> str | None:
    host = m.group(0).lower().rstrip(".")
    if host in PUBLIC_HOSTS or any(host.endswith("." + p) for p in PUBLIC_HOSTS):
        return None
    return "<host>"


def _after_keyword_host(m: re.Match[str]) -> str | None:
    host = m.group(2)
    if host.startswith("<") or host.lower() in PUBLIC_HOSTS or host.startswith("-"):
        return None
    try:
        ipaddress.ip_address(host)
        return None  # addresses have their own rule
    except ValueError:
        pass
    return f"{m.group(1)}<host>"


RULES: tuple[_Rule, ...] = (
    # secrets
    ("hf-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), _const("<hf-token>")),
    (
        "openai-key",
        re.compile(r"\bsk-(?:proj-|svcacct-|ant-)?[A-Za-z0-9_-]{20,}"),
        _const("<api-key>"),
    ),
    (
        "github-token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b"),
        _const("<github-token>"),
    ),
    ("aws-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), _const("<aws-access-key>")),
    ("ngc-key", re.compile(r"\bnvapi-[A-Za-z0-9_-]{20,}"), _const("<ngc-key>")),
    (
        "aws-secret",
        re.compile(r"(?i)(aws_secret_access_key\s*[=:]\s*)[A-Za-z0-9/+=]{40}"),
        _keep_secret_name,
    ),
    (
        "bearer-token",
        re.compile(r"(?i)(authorization:\s*bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
        _keep_secret_name,
    ),
    (
        # NAME=value and name=value (engine kwargs): tokens, keys, secrets, passwords; the value
        # must hold a letter, so "max_new_token=512" is left alone
        "env-secret",
        re.compile(
            r"(?i)\b([A-Z_]*(?:TOKEN|API_KEY|SECRET[A-Z_]*|PASSWORD|PASSWD)\s*[=:]\s*['\"]?)"
            r"(?!<)(?=[^\s'\"]*[A-Za-z])[^\s'\",)]{6,}"
        ),
        _keep_secret_name,
    ),
    (
        "api-key-flag",
        re.compile(r"(--(?:api-key|hf-token|token|password)[= ]\s*)(?!<)[^\s'\"]{6,}"),
        _keep_secret_name,
    ),
    # credentials in a URL: https://user:password@host/...
    ("url-credentials", re.compile(r"(?<=://)[^/\s@:<]+(?::[^/\s@]*)?@"), _const("<user>@")),
    # people and machines
    (
        "email",
        re.compile(r"\b[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}\b"),
        _const("<email>"),
    ),
    (
        "ssh-user-host",
        re.compile(r"\b([A-Za-z_][\w.-]*)@([A-Za-z0-9][\w.-]*[A-Za-z0-9]|\d{1,3}(?:\.\d{1,3}){3})"),
        _user_host,
    ),
    ("ipv4", re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]*\d)"), _ipv4),
    (
        "ipv6",
        re.compile(
            r"(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){2,7}[0-9A-Fa-f]{1,4}(?![\w:])|"
            r"(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){1,7}:(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6})?(?![\w:])"
        ),
        _ipv6,
    ),
    (
        "hostname",
        re.compile(
            r"\b(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+(?:"
            + "|".join(_PRIVATE_TLDS)
            + r")\b"
        ),
        _hostname,
    ),
    (
        "hostname",
        re.compile(
            r"(\b(?:ssh|scp|rsync|mosh)\s+(?:-\S+\s+(?:\S+\s+)?)*?)([A-Za-z][\w-]*(?:\.[\w-]+)*)(?=[\s:'\"]|$)"
        ),
        _after_keyword_host,
    ),
    (
        "hostname",
        re.compile(
            r"((?:--host|--dist-init-addr|--nccl-init-addr|MASTER_ADDR|--master-addr|--head-node-address)"
            r"[= ]\s*)([A-Za-z][\w-]*(?:\.[\w-]+)*)"
        ),
        _after_keyword_host,
    ),
    (
        "home-path",
        re.compile(r"(/home/|/Users/)(?!<)([^/\s'\"]+)"),
        lambda m: f"{m.group(1)}<user>",
    ),
)


def redact(text: str) -> tuple[str, tuple[Redaction, ...]]:
    """Return the redacted text and each replacement made (kind, original, replacement, line)."""
    found: list[Redaction] = []
    for kind, pattern, replace in RULES:

        def sub(m: re.Match[str], kind: str = kind, replace=replace) -> str:
            new = replace(m)
            if new is None or new == m.group(0):
                return m.group(0)
            # m.string is the text this rule scans; earlier rules never add or remove newlines
            line = m.string.count("\n", 0, m.start()) + 1
            found.append(Redaction(kind, m.group(0), new, line))
            return new

        text = pattern.sub(sub, text)
    return text, tuple(found)


def find_secrets(text: str) -> tuple[Redaction, ...]:
    """What ``redact`` would replace: used by ``lint`` to flag an unredacted finding."""
    return redact(text)[1]
