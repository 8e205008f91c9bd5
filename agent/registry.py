"""The flag registry: what each framework's launch flags are called, take and mean.

``data/flags.json`` (built by ``scripts/build_flag_registry.py`` from the frameworks' documented
arguments) is read once into a :class:`Registry`. Every comparison of launch commands goes
through it, so that ``--fp4-gemm-runner-backend`` in a finding and ``--fp4_gemm_backend=...`` in a
user's command are recognised as the same setting, and so that a finding written for SGLang can be
translated to the vLLM spelling where an equivalent exists.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kb.errors import DeployKBError
from kb.frameworks import normalise_framework
from kb.records import Flag
from kb.resources import data_file

_TRUE = frozenset({"true", "1", "yes", "y", "on"})
_FALSE = frozenset({"false", "0", "no", "n", "off"})


def bool_literal(text: str | None) -> bool | None:
    """``"True"``/``"1"``/``"yes"`` -> True, ``"false"``/``"0"``/``"no"`` -> False, else None."""
    if text is None:
        return None
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    return None


DISPLAY = {"sglang": "SGLang", "vllm": "vLLM", "tensorrt-llm": "TensorRT-LLM"}
_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)((?:\.?(?:post|rc|a|b|dev)\d*)*)(?:[+-].*)?$")
# what follows the number of a development or local build (setuptools-scm: "0.1.dev20051+g487ecf1",
# "0.11.2.dev340+ge5a621b72", "0.5.9+g1a2b3c4"): not a release, whatever its number says
_DEV_BUILD = re.compile(r"(?:\.?(?:rc|a|b)\d+)?(?:\.?dev\d*|\+g[0-9a-f]{4,})", re.I)


def version_tuple(text: str) -> tuple[int, ...] | None:
    """``"0.5.9"`` -> (0, 5, 9); ``"v0.5.10.post1"`` -> (0, 5, 10); not a release -> None."""
    m = _VERSION.match(text.strip())
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def _in_ranges(version: str, runs: list) -> bool:
    v = version_tuple(version)
    return v is not None and any(
        version_tuple(a) <= v <= version_tuple(b)
        for a, b in runs  # type: ignore[operator]
    )


def _runs_text(runs: list) -> str:
    return ", ".join(a if a == b else f"{a}-{b}" for a, b in runs)


def _env_vars(block: dict) -> dict:
    env = block.get("env", {})
    return env.get("vars", {}) if "vars" in env else env


def _deprecation(name: str, raw: dict, latest: str | None) -> str | None:
    entry = raw.get("spellings", {}).get(name, {})
    if latest is None or not _in_ranges(latest, entry.get("deprecated", [])):
        return None
    instead = entry.get("use_instead")
    return "deprecated" + (f": use {instead}" if instead else "")


@dataclass(frozen=True)
class Release:
    """The release of a framework a version text is checked against."""

    framework: str
    version: str | None  # a release the registry read, or None (unknown, main, a commit)
    note: str | None = None  # how the written version was mapped


@dataclass(frozen=True)
class VersionIssue:
    """A flag (or value) the given release does not accept, or spells differently."""

    kind: str  # "missing" | "renamed" | "choice"
    message: str
    spelling: str | None = None  # for "renamed": the release's own spelling


@dataclass(frozen=True)
class FlagSpec:
    """One registered flag (or TensorRT-LLM config key) of one framework."""

    name: str  # canonical spelling, e.g. "--fp4-gemm-backend", or a config key
    framework: str
    takes_value: bool
    nargs: str | None = None  # "+" several values, "?" optional value
    negatable: bool = False  # accepts --no-<name>
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    doc: str | None = None
    deprecated: str | None = None
    note: str | None = None
    kind: str = "flag"  # "flag" or "config"


@dataclass(frozen=True)
class Equivalent:
    """The counterpart of a setting in another framework."""

    kind: str  # "flag" | "env" | "config"
    name: str
    value: str | None
    note: str


def _key(name: str) -> str:
    """Lookup key: surrounding space dropped, underscores in a long flag written as dashes."""
    name = name.strip()
    if name.startswith("--"):
        return "--" + name[2:].replace("_", "-")
    return name


def _value_key(value: str | None) -> str | None:
    return None if value is None else value.strip().lower().replace("-", "_")


class Registry:
    """Flags, aliases, renames, environment variables and cross-framework equivalents."""

    def __init__(self, data: dict, path: str = "data/flags.json") -> None:
        self.path = path
        try:
            self._fw = data["frameworks"]
            self._common_env: dict = data.get("common_env", {})
            self._equivalents: list[dict] = data.get("equivalents", [])
        except (KeyError, TypeError) as exc:
            raise DeployKBError(f"{path}: not a flag registry (missing {exc})") from None
        self._specs: dict[str, dict[str, FlagSpec]] = {}
        self._index: dict[str, dict[str, str]] = {}  # fw -> key -> canonical name
        self._renamed: dict[str, dict[str, dict]] = {}  # fw -> key -> rename entry
        self._options: dict[str, list[str]] = {}  # fw -> every accepted option string
        self._spellings: dict[str, dict[str, dict]] = {}  # fw -> key -> spelling entry
        self._versions: dict[str, tuple[str, ...]] = {}  # fw -> releases read, oldest first
        for fw, block in self._fw.items():
            self._load_framework(fw, block)

    def _load_framework(self, fw: str, block: dict) -> None:
        specs: dict[str, FlagSpec] = {}
        index: dict[str, str] = {}
        options: list[str] = []
        spellings: dict[str, dict] = {}
        versions = tuple(block.get("versions", ()))
        latest = versions[-1] if versions else None
        for name, raw in block.get("flags", {}).items():
            spells = raw.get("spellings")
            if spells is None:  # hand-kept table (TensorRT-LLM): aliases listed, no versions
                aliases = tuple(raw.get("aliases", ()))
                choices = tuple(raw.get("choices", ()))
            else:
                aliases = tuple(
                    s
                    for s, e in spells.items()
                    if s != name
                    and latest is not None
                    and _in_ranges(latest, e["versions"])
                    and not _in_ranges(latest, e.get("deprecated", []))
                )
                runs = raw.get("choices", [])
                choices = tuple(runs[-1]["values"]) if runs else ()
                for s, e in spells.items():
                    spellings[_key(s)] = {"from": s, "to": name, **e}
            spec = FlagSpec(
                name=name,
                framework=fw,
                takes_value=bool(raw.get("value")),
                nargs=raw.get("nargs"),
                negatable=bool(raw.get("negatable")),
                aliases=aliases,
                choices=choices,
                doc=raw.get("doc"),
                deprecated=raw.get("deprecated") or _deprecation(name, raw, latest),
                note=raw.get("note"),
            )
            specs[name] = spec
            index[_key(name)] = name
            options.append(name)
            for alias in spec.aliases:
                index[_key(alias)] = name
                options.append(alias)
            if spec.negatable:
                options.append("--no-" + name[2:])
        for key_name, raw in block.get("config", {}).items():
            specs[key_name] = FlagSpec(
                name=key_name, framework=fw, takes_value=True, doc=raw.get("doc"), kind="config"
            )
            index[key_name] = key_name
        renamed: dict[str, dict] = {}
        for key, entry in spellings.items():
            if key not in index:  # older or deprecated spellings of a setting
                renamed[key] = {**entry, "registered": True}
                options.append(entry["from"])
        for old, entry in block.get("unregistered", {}).items():
            if entry.get("to"):
                renamed[_key(old)] = {"from": old, **entry, "registered": False}
            else:  # seen in the wild, in no release read: known, without versions
                specs[old] = FlagSpec(
                    name=old, framework=fw, takes_value=True, note=entry.get("note")
                )
                index[_key(old)] = old
        self._specs[fw] = specs
        self._index[fw] = index
        self._renamed[fw] = renamed
        self._options[fw] = options
        self._spellings[fw] = spellings
        self._versions[fw] = versions

    # --- flags -------------------------------------------------------------------------------

    @property
    def frameworks(self) -> tuple[str, ...]:
        return tuple(self._fw)

    def _fwname(self, framework: str | None) -> str | None:
        if framework in self._fw:
            return framework
        return normalise_framework(framework)

    def _resolve(self, name: str, framework: str | None) -> tuple[str | None, dict | None]:
        """(canonical name or None, rename entry or None) for a written flag name."""
        fw = self._fwname(framework)
        if fw is None:
            return None, None
        key = _key(name)
        index = self._index[fw]
        if key in index:
            return index[key], None
        entry = self._renamed[fw].get(key)
        if entry is not None:
            return entry["to"], entry
        if key.startswith("--no-"):
            base = self._specs[fw].get(index.get("--" + key[5:], ""))
            if base is not None and base.negatable:
                return "--no-" + base.name[2:], None
        if key.startswith("--") and "." in key:  # vLLM dotted JSON keys: --compilation-config.x
            head, _, tail = name.strip().partition(".")
            canon, _ = self._resolve(head, fw)
            if canon is not None:
                return f"{canon}.{tail}", None
        if key.startswith("-O.") and fw == "vllm":
            return "--compilation-config." + name.strip()[3:], None
        if self._fw[fw].get("allow_abbrev") and key.startswith("--") and len(key) > 3:
            hits = [opt for opt in self._options[fw] if _key(opt).startswith(key)]
            if len(hits) == 1:
                return self._resolve(hits[0], fw)
        return None, None

    def canonical(self, name: str, framework: str | None) -> str:
        """The registered spelling of ``name`` in ``framework``.

        Handles ``--a_b`` written with underscores, aliases (``--tp`` and ``--tensor-parallel-size``
        are ``--tp-size`` in SGLang, ``-tp`` is ``--tensor-parallel-size`` in vLLM), deprecated or
        renamed spellings (``--fp4-gemm-runner-backend`` -> ``--fp4-gemm-backend``) and, for
        SGLang, unique prefixes as argparse accepts them. An unknown name comes back normalised
        (dashes for SGLang/vLLM, as written for TensorRT-LLM and config keys).
        """
        canon, _ = self._resolve(name, framework)
        if canon is not None:
            return canon
        fw = self._fwname(framework)
        written = name.strip()
        if fw is not None and self._fw[fw].get("naming") == "underscore":
            return written
        return _key(written)

    def spec(self, name: str, framework: str | None) -> FlagSpec | None:
        """The registered flag behind ``name`` (for ``--x.key`` the JSON flag ``--x``)."""
        canon, _ = self._resolve(name, framework)
        fw = self._fwname(framework)
        if canon is None or fw is None:
            return None
        return self._specs[fw].get(canon.split(".", 1)[0] if canon.startswith("--") else canon)

    def is_known(self, name: str, framework: str | None) -> bool:
        """True when ``framework`` registers the flag under this or another spelling."""
        return self._resolve(name, framework)[0] is not None

    def is_registered_spelling(self, name: str, framework: str | None) -> bool:
        """False for spellings the framework itself rejects (``--fp8-gemm-runner-backend``)."""
        canon, entry = self._resolve(name, framework)
        return canon is not None and (entry is None or bool(entry.get("registered")))

    def rename_note(self, name: str, framework: str | None) -> str | None:
        """A sentence when ``name`` is a renamed/deprecated spelling, else None."""
        canon, entry = self._resolve(name, framework)
        if entry is None:
            return None
        fw = self._fwname(framework)
        shown = DISPLAY.get(fw or "", fw)
        if not entry.get("registered"):
            return f"{fw} registers {canon}, not {entry['from']}"
        if entry.get("canonical"):
            text = (
                f"{entry['from']} is the {shown} {_runs_text(entry['canonical'])} name of {canon}"
            )
        else:
            text = f"{entry['from']} is a deprecated {fw} spelling of {canon}"
        if entry.get("deprecated") and entry.get("canonical"):
            text += f" (deprecated alias in {_runs_text(entry['deprecated'])})"
        if entry.get("removed_in"):
            text += f"; removed in {entry['removed_in']}"
        return text

    def takes_value(self, name: str, framework: str | None) -> bool | None:
        """True/False for a registered flag (``--no-x`` forms are switches); None if unknown."""
        fw = self._fwname(framework)
        canon, entry = self._resolve(name, fw)
        if canon is None:
            return None
        if entry is not None and "nargs" in entry:
            return True
        if self.negation(name, fw) is not None:
            return False
        if canon.startswith("--") and "." in canon:
            return True
        spec = self.spec(name, fw)
        return None if spec is None else spec.takes_value

    def nargs(self, name: str, framework: str | None) -> str | None:
        """``"+"`` for flags taking several values, ``"?"`` for an optional value, else None."""
        canon, entry = self._resolve(name, framework)
        if entry is not None and "nargs" in entry:
            return entry["nargs"]
        if canon is None or (canon.startswith("--") and "." in canon):
            return None
        spec = self.spec(name, framework)
        return None if spec is None else spec.nargs

    def negation(self, name: str, framework: str | None) -> str | None:
        """For ``--no-<flag>`` of a negatable switch, the canonical ``--<flag>``; else None."""
        canon, _ = self._resolve(name, framework)
        if canon is None or not canon.startswith("--no-"):
            return None
        base = self.spec("--" + canon[5:], framework)
        if base is not None and base.negatable and base.name == "--" + canon[5:]:
            return base.name
        return None

    def canonical_value(self, name: str, value: str | None, framework: str | None) -> str | None:
        """The value as the framework registers it (``--fp4-gemm-backend cutlass`` ->
        ``flashinfer_cutlass``, ``--attention-backend nsa`` -> ``dsa``)."""
        if value is None:
            return None
        fw = self._fwname(framework)
        if fw is None:
            return value
        canon = self.canonical(name, fw)
        aliases = self._fw[fw].get("value_aliases", {}).get(canon, {})
        return aliases.get(value.strip(), value.strip())

    def same_value(self, name: str, a: str | None, b: str | None, framework: str | None) -> bool:
        """Whether two values of one flag mean the same (switch on/"true", case of choices,
        value aliases, ``0.80`` and ``0.8``)."""
        if (a is None or bool_literal(a) is True) and (b is None or bool_literal(b) is True):
            return True
        if a is None or b is None:
            return False
        if bool_literal(a) is False and bool_literal(b) is False:
            return True
        ca = self.canonical_value(name, a, framework) or ""
        cb = self.canonical_value(name, b, framework) or ""
        if _value_key(ca) == _value_key(cb):
            return True
        try:
            return float(ca) == float(cb)
        except ValueError:
            return " ".join(ca.split()) == " ".join(cb.split())

    def describe(self, name: str, framework: str | None) -> str:
        """One line for humans: what the flag does, what it takes, renames and deprecations."""
        fw = self._fwname(framework)
        written = name.strip()
        spec = self.spec(written, fw)
        if spec is None:
            where = fw or "any known framework"
            return f"{written}: not in the {where} flag registry ({self.path})"
        parts = [f"{spec.name} ({fw}{' config key' if spec.kind == 'config' else ''})"]
        text = spec.doc or ""
        if spec.kind == "flag":
            if not spec.takes_value:
                kind = "switch" + (
                    f"; {'--no-' + spec.name[2:]} turns it off" if spec.negatable else ""
                )
            elif spec.nargs == "+":
                kind = "takes one or more values"
            elif spec.nargs == "?":
                kind = "value optional"
            else:
                kind = "takes a value"
            if spec.choices:
                shown = ", ".join(spec.choices[:12]) + (", ..." if len(spec.choices) > 12 else "")
                kind += f": {shown}"
            text = f"{text} ({kind})".strip()
        extra = [n for n in (self.rename_note(written, fw), spec.deprecated, spec.note) if n]
        raw = self._fw.get(fw or "", {}).get("flags", {}).get(spec.name, {})
        if raw.get("versions"):
            span = f"in {DISPLAY.get(fw or '', fw)} {_runs_text(raw['versions'])}"
            if raw.get("removed_in"):
                span += f"; removed in {raw['removed_in']}"
            extra.append(span)
        return f"{parts[0]}: {text}" + "".join(f" [{e}]" for e in extra)

    def flags(self, framework: str) -> tuple[FlagSpec, ...]:
        fw = self._fwname(framework)
        return tuple(self._specs[fw].values()) if fw else ()

    def guess_framework(self, names: Iterable[str]) -> str | None:
        """The framework whose registry knows most of ``names`` (None on a tie or no hit)."""
        names = [n for n in names if n.strip().startswith("-")]
        scores = {fw: sum(self.is_known(n, fw) for n in names) for fw in self._fw}
        ranked = sorted(scores.items(), key=lambda kv: -kv[1])
        if not ranked or ranked[0][1] == 0 or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
            return None
        return ranked[0][0]

    # --- versions ------------------------------------------------------------------------------

    def versions(self, framework: str | None) -> tuple[str, ...]:
        """The releases the registry was generated from, oldest first (empty: not versioned)."""
        fw = self._fwname(framework)
        return self._versions.get(fw, ()) if fw else ()

    def release(self, framework: str | None, version: str | None) -> Release | None:
        """The known release to check ``version`` against: the same release, else the newest
        known one before it (``0.5.9.post1`` -> 0.5.9); None for a framework without versions.
        ``main``, a commit or an unreadable version give ``version=None`` and a note."""
        fw = self._fwname(framework)
        known = self.versions(fw)
        if fw is None or not known:
            return None
        shown = DISPLAY.get(fw, fw)
        if not version or not version.strip():
            return Release(
                fw, None, f"{shown} version unknown: flags not checked against a release"
            )
        first = re.match(r"\s*(?:>=|≥)?\s*v?(\d+(?:\.\d+)+)", version)  # ">=0.18.0": the oldest
        if first is None:  # "patched vLLM 0.28.0", "lmsysorg/sglang:v0.5.9", "vllm v0.17.1 in ..."
            first = re.search(
                r"(?:sglang|vllm|tensorrt-llm|trt-?llm|vllm/vllm-openai(?:-rocm)?)"
                r"[\s:=@-]*v?(\d+(?:\.\d+)+)",
                version,
                re.I,
            )
        # "0.25.1, torch 2.11": the first number; "0.1.dev20051+g487ecf1": a build, no release
        dev = first is not None and _DEV_BUILD.match(version[first.end() :])
        want = version_tuple(first.group(1)) if first and not dev else None
        if want is None:
            return Release(
                fw,
                None,
                f"{shown} {version.strip()} is not a release number: flags "
                "not checked against a release",
            )
        tuples = [(version_tuple(v), v) for v in known]
        same_minor = [v for t, v in tuples if t is not None and t[:2] == want[:2]]
        before = [v for t, v in tuples if t is not None and t <= want]
        if same_minor and not (before and version_tuple(before[-1])[:2] == want[:2]):
            before = same_minor[:1]  # 0.11.0 -> 0.11.2 when 0.11.2 is the release read
        if not before:
            return Release(
                fw,
                None,
                f"{shown} {version.strip()} is older than the oldest release "
                f"the flag registry read ({known[0]}): flags not checked",
            )
        got = before[-1]
        if version_tuple(got) == want:
            return Release(fw, got)
        if got == known[-1] and want > version_tuple(got):  # type: ignore[operator]
            return Release(
                fw,
                got,
                f"{shown} {version.strip()} is newer than the newest release "
                f"the flag registry read; checked against {got}",
            )
        return Release(fw, got, f"{shown} {version.strip()} checked against {got}")

    def _setting_spellings(self, canon: str, fw: str) -> list[dict]:
        """The spelling entries of a setting (``--x.key`` and ``--no-x`` are ``--x``'s)."""
        if canon.startswith("--") and "." in canon:
            canon = canon.split(".", 1)[0]
        if canon.startswith("--no-") and canon not in self._specs.get(fw, {}):
            canon = "--" + canon[5:]
        return [e for e in self._spellings.get(fw, {}).values() if e["to"] == canon]

    def spelling_in(self, name: str, framework: str | None, version: str) -> str | None:
        """How release ``version`` spells the setting behind ``name`` (its canonical name
        there), or None when that release has no such setting."""
        fw = self._fwname(framework)
        canon, _ = self._resolve(name, fw)
        if canon is None or fw is None:
            return None
        entries = self._setting_spellings(canon, fw)
        if not entries:
            return canon  # not versioned (hand-kept flag, config key)
        accepted = [e for e in entries if _in_ranges(version, e["versions"])]
        if not accepted:
            return None
        primary = [e for e in accepted if _in_ranges(version, e.get("canonical", e["versions"]))]
        pick = (primary or accepted)[0]["from"]
        if canon.startswith("--no-") and canon not in self._specs.get(fw, {}):
            return "--no-" + pick[2:]
        dotted = canon.partition(".")[2] if canon.startswith("--") else ""
        return pick + ("." + dotted if dotted else "")

    def first_release(self, name: str, framework: str | None) -> str | None:
        fw = self._fwname(framework)
        canon, _ = self._resolve(name, fw)
        if canon is None or fw is None:
            return None
        firsts = [e["versions"][0][0] for e in self._setting_spellings(canon, fw) if e["versions"]]
        return min(firsts, key=lambda v: version_tuple(v) or ()) if firsts else None

    def accepts(self, name: str, framework: str | None, version: str) -> bool:
        """True when release ``version`` accepts the option string ``name`` as written (an
        alias, a deprecated spelling, a negation or a unique prefix of one)."""
        fw = self._fwname(framework)
        canon, entry = self._resolve(name, fw)
        if canon is None or fw is None:
            return False
        if entry is not None:
            return bool(entry.get("registered")) and _in_ranges(version, entry["versions"])
        written = _key(name)
        negated = self.negation(name, fw)
        if negated is not None:
            written = negated
        entries = self._setting_spellings(canon, fw)
        if not entries:
            return True
        exact = self._spellings[fw].get(written.split(".", 1)[0])
        if exact is not None:
            return _in_ranges(version, exact["versions"])
        return any(_in_ranges(version, e["versions"]) for e in entries)  # a prefix

    def choices_in(self, name: str, framework: str | None, version: str) -> tuple[str, ...]:
        """The values release ``version`` accepts for the setting (empty: any value)."""
        fw = self._fwname(framework)
        canon, _ = self._resolve(name, fw)
        if canon is None or fw is None:
            return ()
        raw = self._fw[fw].get("flags", {}).get(canon, {})
        for run in raw.get("choices", []) if isinstance(raw.get("choices"), list) else []:
            if isinstance(run, dict) and _in_ranges(version, run["versions"]):
                return tuple(run["values"])
        return ()

    def value_in(
        self, name: str, value: str | None, framework: str | None, version: str
    ) -> str | None:
        """``value`` as release ``version`` accepts it: a value alias that release knows
        (``--attention-backend dsa`` is ``nsa`` up to SGLang 0.5.12), else ``value``."""
        if value is None:
            return None
        choices = self.choices_in(name, framework, version)
        if not choices or value in choices:
            return value
        fw = self._fwname(framework)
        canon = self.canonical(name, fw)
        target = self.canonical_value(canon, value, fw)
        if target in choices:
            return target
        for alias, to in self._fw.get(fw or "", {}).get("value_aliases", {}).get(canon, {}).items():
            if to == target and alias in choices:
                return alias
        low = {c.lower(): c for c in choices}
        return low.get(value.lower(), value)

    def version_issues(
        self, name: str, value: str | None, framework: str | None, version: str
    ) -> tuple[VersionIssue, ...]:
        """What release ``version`` says about ``name value``: missing there (with the release
        it first appears in or was removed in), spelled otherwise, or a value it rejects."""
        fw = self._fwname(framework)
        canon, _ = self._resolve(name, fw)
        if canon is None or fw is None or not self.versions(fw):
            return ()
        shown = f"{DISPLAY.get(fw, fw)} {version}"
        written = name.strip()
        here = self.spelling_in(written, fw, version)
        if here is None:
            first = self.first_release(written, fw)
            if first and version_tuple(first) > version_tuple(version):  # type: ignore[operator]
                why = f"{canon.split('.', 1)[0]} first appears in {DISPLAY.get(fw, fw)} {first}"
            else:
                last = max(
                    (e["versions"][-1][1] for e in self._setting_spellings(canon, fw)),
                    key=lambda v: version_tuple(v) or (),
                    default=None,
                )
                why = f"{canon} is not in {shown}" + (f" (last in {last})" if last else "")
            return (VersionIssue("missing", f"{why}; {shown} does not accept {written}"),)
        out: list[VersionIssue] = []
        if not self.accepts(written, fw, version):
            out.append(VersionIssue("renamed", self._respelled(written, here, fw, version), here))
        choices = self.choices_in(written, fw, version)
        if value is not None and choices:
            fixed = self.value_in(written, value, fw, version)
            if fixed not in choices:
                shown_choices = ", ".join(choices[:14]) + (", ..." if len(choices) > 14 else "")
                out.append(
                    VersionIssue(
                        "choice",
                        f"{shown} does not accept {here} {value} (choices: {shown_choices})",
                    )
                )
        return tuple(out)

    def _respelled(self, written: str, here: str, fw: str, version: str) -> str:
        """Why release ``version`` wants ``here`` for ``written``: the spelling was removed before
        it, or comes only later, or the release merely prefers the other one."""
        shown_fw = DISPLAY.get(fw, fw)
        entry = self._spellings[fw].get(_key(written).split(".", 1)[0])
        runs = entry.get("versions") if entry else None
        if runs:
            last, first = runs[-1][1], runs[0][0]
            if version_tuple(last) < version_tuple(version):  # type: ignore[operator]
                removed = entry.get("removed_in") or self._after(fw, last) or version  # type: ignore[union-attr]
                return f"{written} was removed in {shown_fw} {removed}; use {here}"
            if version_tuple(first) > version_tuple(version):  # type: ignore[operator]
                return (
                    f"{written} first appears in {shown_fw} {first}; {shown_fw} {version} "
                    f"spells it {here}"
                )
        return f"{shown_fw} {version} spells {written} as {here}"

    def _after(self, fw: str, version: str) -> str | None:
        """The release read after ``version``."""
        known = self.versions(fw)
        return known[known.index(version) + 1] if version in known[:-1] else None

    # --- environment variables, packages, images ---------------------------------------------

    def canonical_env(self, name: str, framework: str | None = None) -> str:
        """``SGL_ENABLE_JIT_DEEPGEMM`` -> ``SGLANG_ENABLE_JIT_DEEPGEMM`` (SGLang rewrites the old
        prefix), deprecated names -> their replacement; anything else unchanged."""
        name = name.strip()
        fw = self._fwname(framework) or self.env_framework(name)
        if fw is None:
            return name
        block = self._fw[fw]
        for old, new in block.get("env_prefix_aliases", {}).items():
            if name.startswith(old):
                name = new + name[len(old) :]
        entry = _env_vars(block).get(name, {})
        return entry.get("renamed_to", name)

    def env_framework(self, name: str) -> str | None:
        """Which framework reads this variable (by prefix or listing); None for neutral ones."""
        name = name.strip()
        for fw, block in self._fw.items():
            if name in _env_vars(block):
                return fw
            if any(name.startswith(p) for p in block.get("env_prefixes", ())):
                return fw
        return None

    def env_in(self, name: str, framework: str | None, version: str) -> bool | None:
        """Whether release ``version`` of ``framework`` reads the variable; None when the
        registry cannot tell (a variable of another framework or of none, one it knows no
        releases of, a release it read no variables of)."""
        fw = self._fwname(framework)
        if fw is None or not _in_ranges(version, self._fw[fw].get("env_read_from") or []):
            return None
        entry = _env_vars(self._fw[fw]).get(self.canonical_env(name, fw))
        if not entry or not entry.get("versions"):
            return None
        return _in_ranges(version, entry["versions"])

    def env_counterpart(
        self, name: str, value: str | None, framework: str | None, version: str
    ) -> Equivalent | None:
        """For a variable that release ``version`` no longer reads, the flag that replaced it
        there (``VLLM_ATTENTION_BACKEND=X`` -> ``--attention-backend X``), with a note; None
        when none is known or that release lacks the flag too."""
        fw = self._fwname(framework)
        if fw is None:
            return None
        canon_env = self.canonical_env(name, fw)
        entry = _env_vars(self._fw[fw]).get(canon_env) or {}
        flag, _, fixed = str(entry.get("replaced_by_flag") or "").partition(" ")
        if not flag or self.spelling_in(flag, fw, version) is None:
            return None
        if fixed and bool_literal(value) is False:
            return None  # the variable turned the setting off: the flag's default
        out = fixed or (entry.get("flag_values") or {}).get(value or "", value)
        shown_fw = DISPLAY.get(fw, fw)
        gone = (
            f"was removed in {shown_fw} {entry['removed_in']}"
            if entry.get("removed_in")
            else f"is not read by {shown_fw} {version}"
        )
        note = f"{canon_env} {gone}; {shown_fw} {version} takes {flag} instead"
        return Equivalent("flag", self.canonical(flag, fw), out or None, note)

    def flag_env_counterpart(
        self, name: str, value: str | None, framework: str | None, version: str
    ) -> Equivalent | None:
        """For a flag that release ``version`` does not have yet, the variable that release
        reads for the same setting (SGLang 0.5.7: ``--fp4-gemm-backend flashinfer_cudnn`` ->
        ``SGLANG_FLASHINFER_FP4_GEMM_BACKEND=cudnn``), with a note; None when none is known."""
        fw = self._fwname(framework)
        canon, _ = self._resolve(name, fw)
        if fw is None or canon is None:
            return None
        for env, entry in _env_vars(self._fw[fw]).items():
            flag, _, fixed = str(entry.get("replaced_by_flag") or "").partition(" ")
            if not flag or self.canonical(flag, fw) != canon:
                continue
            if not entry.get("versions") or not _in_ranges(version, entry["versions"]):
                continue
            if fixed:
                if not self.same_value(canon, fixed, value, fw):
                    continue
                out: str | None = "1"
            else:
                values = entry.get("flag_values") or {}
                back = [k for k, v in values.items() if self.same_value(canon, v, value, fw)]
                if values and not back:
                    continue
                out = back[0] if back else value
            shown = f"{DISPLAY.get(fw, fw)} {version}"
            return Equivalent("env", env, out, f"{shown} reads {env} instead")
        return None

    def is_known_env(self, name: str, framework: str | None = None) -> bool:
        canon = self.canonical_env(name, framework)
        if canon in self._common_env:
            return True
        return any(canon in _env_vars(block) for block in self._fw.values())

    def describe_env(self, name: str, framework: str | None = None) -> str:
        canon = self.canonical_env(name, framework)
        entry = self._common_env.get(canon)
        owner = "any framework"
        if entry is None:
            owner = self.env_framework(canon) or "unknown"
            entry = _env_vars(self._fw.get(owner, {})).get(canon)
        if entry is None:
            return f"{name}: not in the flag registry ({self.path})"
        head = canon if canon == name.strip() else f"{name.strip()} (read as {canon})"
        spans = ", ".join(f"{lo}-{hi}" for lo, hi in entry.get("versions", ()))
        doc = entry.get("doc") or (
            f"read by releases {spans}; no description recorded" if spans else "no description"
        )
        return f"{head} ({owner}): {doc}"

    def framework_of_package(self, package: str) -> str | None:
        key = package.strip().lower().replace("_", "-")
        for fw, block in self._fw.items():
            if key in {p.replace("_", "-") for p in block.get("packages", ())}:
                return fw
        return None

    def framework_of_image(self, image: str) -> str | None:
        repo = image.strip().split("@", 1)[0]
        if ":" in repo.rsplit("/", 1)[-1]:
            repo = repo.rsplit(":", 1)[0]
        for fw, block in self._fw.items():
            if any(repo == im or repo.endswith("/" + im) for im in block.get("images", ())):
                return fw
        return None

    # --- cross-framework -----------------------------------------------------------------------

    def _member_key(self, kind: str, name: str, framework: str) -> str:
        if kind == "env":
            return "env:" + self.canonical_env(name, framework)
        if kind == "config":
            return "config:" + name.strip()
        return self.canonical(name, framework)

    def _member_in(self, member: str, fw: str, version: str) -> bool:
        if member.startswith("config:"):
            return True
        if member.startswith("env:"):
            entry = _env_vars(self._fw.get(fw, {})).get(member[4:])
            runs = entry.get("versions") if entry else None
            return not runs or _in_ranges(version, runs)
        return self.spelling_in(member, fw, version) is not None

    def equivalent(
        self,
        name: str,
        value: str | None,
        source: str | None,
        target: str | None,
        *,
        kind: str = "flag",
        target_version: str | None = None,
    ) -> Equivalent | None:
        """The ``target`` framework's counterpart of a ``source`` flag/env/config setting.

        With ``target_version`` (a release :meth:`release` returned), equivalents whose
        target member that release lacks are skipped (vLLM ``--attention-backend`` before
        0.13 falls through to ``VLLM_ATTENTION_BACKEND``).

        Explicit equivalents come from the registry (with value maps where the names differ,
        e.g. SGLang ``--attention-backend triton`` is vLLM ``--attention-backend TRITON_ATTN``);
        a flag with no listed equivalent falls back to a flag of the same name in the target
        when its value is acceptable there. None when nothing matches.
        """
        src, dst = self._fwname(source), self._fwname(target)
        if src is None or dst is None:
            return None
        if kind == "env":
            written = f"{name.strip()}={value}"
        elif kind == "config":
            written = f"{name.strip()}: {value}"
        else:
            written = name.strip() if value is None else f"{name.strip()} {value}"
        key = self._member_key(kind, name, src)
        listed = [
            eq for eq in self._equivalents if eq["members"].get(src) == key and dst in eq["members"]
        ]
        for eq in listed:
            found = self._listed_equivalent(eq, name, value, src, dst, written, target_version)
            if found is not None:
                return found
        if listed or kind != "flag":
            return None
        return self._same_name(name, value, src, dst, written)

    def _listed_equivalent(
        self,
        eq: dict,
        name: str,
        value: str | None,
        src: str,
        dst: str,
        written: str,
        target_version: str | None,
    ) -> Equivalent | None:
        """The counterpart one registry entry gives, or None when its target member is not in
        ``target_version`` or its value map has no row for ``value``."""
        members = eq["members"]
        if target_version and not self._member_in(members[dst], dst, target_version):
            return None
        out_value = value
        if "values" in eq:
            rows = (r for r in eq["values"] if src in r and dst in r)
            row = next((r for r in rows if self.same_value(name, r[src], value, src)), None)
            if row is None:
                return None
            out_value = row[dst]
        note = f"translated from {src} {written}"
        if eq.get("match") == "approximate" or eq.get("approximate"):
            note += f" (approximate: {eq.get('caveat') or eq.get('note') or 'not identical'})"
        elif eq.get("caveat"):
            note += f" ({eq['caveat']})"
        member = members[dst]
        if member.startswith("env:"):
            return Equivalent("env", member[4:], out_value, note)
        if member.startswith("config:"):
            return Equivalent("config", member[7:], out_value, note)
        return Equivalent("flag", member, out_value, note)

    def _same_name(
        self, name: str, value: str | None, src: str, dst: str, written: str
    ) -> Equivalent | None:
        """A flag no entry lists: the target's flag of the same name, when it takes the value."""
        canon = self.canonical(name, src)
        target_spec = self.spec(canon, dst)
        if target_spec is None or target_spec.name != canon:
            return None
        if value is not None and target_spec.choices:
            if not any(self.same_value(canon, c, value, dst) for c in target_spec.choices):
                return None
        return Equivalent("flag", canon, value, f"translated from {src} {written} (same name)")

    def translate(self, flag: Flag, source_fw: str | None, target_fw: str | None) -> Flag | None:
        """``flag`` as ``target_fw`` spells it, or None when it has no flag equivalent there.

        Same framework: the flag canonicalised. Across frameworks: see :meth:`equivalent`
        (an equivalent that is an environment variable is not a flag: use ``equivalent``)."""
        src, dst = self._fwname(source_fw), self._fwname(target_fw)
        if src is not None and src == dst:
            name = self.canonical(flag.name, dst)
            value = self.canonical_value(name, flag.value, dst)
            return Flag(name=name, value=value, written=flag.written)
        eq = self.equivalent(flag.name, flag.value, src, dst)
        if eq is None or eq.kind == "env":
            return None
        if eq.kind == "config":
            return Flag(name=eq.name, value=eq.value, written=f"{eq.name}: {eq.value}")
        written = eq.name if eq.value is None else f"{eq.name} {eq.value}"
        return Flag(name=eq.name, value=eq.value, written=written)


def installed_version(framework: str | None) -> str | None:
    """The version of ``framework``'s package installed in this Python environment, from its
    metadata (``importlib.metadata``; the framework is never imported), or None."""
    from importlib import metadata

    fw = normalise_framework(framework)
    package = {"sglang": "sglang", "vllm": "vllm", "tensorrt-llm": "tensorrt_llm"}.get(fw or "")
    if package is None:
        return None
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=8)
def _load(path: str) -> Registry:
    from kb.dataload import read_json

    return Registry(read_json(Path(path)), path)


def load_registry(path: str | Path | None = None) -> Registry:
    """The registry from ``path`` (default: the shipped ``data/flags.json``), read once."""
    return _load(str(path) if path else str(data_file("flags.json")))
