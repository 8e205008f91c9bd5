"""Build ``data/flags.json``, deploykb's flag registry, from the released SGLang and vLLM wheels.

For every release listed in ``data/flag_facts.json`` ("releases") the script downloads the wheel
(``pip download --no-deps sglang==X``), keeps only the files that define the launch arguments
and environment variables, deletes the wheel, and reads those files with ``ast`` (see
``scripts/flag_extract.py``; the frameworks are never imported). It then writes, per setting and
per spelling, the releases that accept it, its canonical name in each release, its choices per
release, deprecations and removals, and the environment variables per release, merged with the
hand-kept facts of ``data/flag_facts.json`` (descriptions, cross-framework equivalents, value
aliases, TensorRT-LLM, whose wheels PyPI does not carry). Provenance (wheel file and sha256 of
every release) goes into the output.

    .venv/bin/python scripts/build_flag_registry.py            # download what is missing, write
    .venv/bin/python scripts/build_flag_registry.py --check    # exit 1 if data/flags.json differs
    .venv/bin/python scripts/build_flag_registry.py --cache DIR --offline   # no downloads

The extracted sources stay in ``--cache`` (default ``$TMPDIR/deploykb-flag-wheels``, about 60 MB
for all releases; each vLLM wheel is about 450 MB while it is on disk).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import flag_extract  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "data" / "flags.json"
FACTS = ROOT / "data" / "flag_facts.json"
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "deploykb-flag-wheels"

# the files of a wheel the extractor reads
KEEP = {
    "sglang": [
        r"^sglang/srt/server_args\.py$",
        r"^sglang/srt/arg_groups/.*\.py$",
        r"^sglang/srt/environ\.py$",
        r"^sglang/srt/configs/model_config\.py$",  # _STR_DTYPE_TO_TORCH_DTYPE (--dtype names)
    ],
    "vllm": [
        r"^vllm/engine/arg_utils\.py$",
        r"^vllm/config\.py$",
        r"^vllm/config/.*\.py$",
        r"^vllm/envs\.py$",
        r"^vllm/entrypoints/(openai|common|launchers)/cli_args\.py$",
        r"^vllm/entrypoints/cli/serve\.py$",
        r"^vllm/utils/argparse_utils\.py$",
        r"^vllm/utils/__init__\.py$",
        r"^vllm/(v1/)?attention/backends/registry\.py$",
        r"^vllm/platforms/interface\.py$",
        r"^vllm/model_executor/layers/quantization/__init__\.py$",
    ],
}
EXTRACT = {"sglang": flag_extract.extract_sglang, "vllm": flag_extract.extract_vllm}


class BuildError(Exception):
    pass


def version_key(v: str) -> tuple:
    parts = []
    for p in re.split(r"[.+-]", v):
        parts.append((0, int(p), "") if p.isdigit() else (1, 0, p))
    return tuple(parts)


# --- download -------------------------------------------------------------------------------


def fetch(fw: str, version: str, cache: Path) -> Path:
    """``cache/fw/version`` with ``src/`` (the kept files) and ``wheel.json`` (provenance)."""
    out = cache / fw / version
    if (out / "wheel.json").exists():
        return out
    tmp = Path(
        tempfile.mkdtemp(
            prefix=f"{fw}-{version}-", dir=cache.parent if cache.parent.exists() else None
        )
    )
    try:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "-q",
            f"{fw}=={version}",
            "-d",
            str(tmp),
        ]
        print(f"downloading {fw} {version}", file=sys.stderr, flush=True)
        if subprocess.run(cmd).returncode != 0:
            raise BuildError(f"pip download {fw}=={version} failed")
        wheels = list(tmp.glob("*.whl"))
        if len(wheels) != 1:
            raise BuildError(f"{fw}=={version}: expected one wheel, got {len(wheels)}")
        whl = wheels[0]
        digest = hashlib.sha256()
        with whl.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        keep = [re.compile(p) for p in KEEP[fw]]
        with zipfile.ZipFile(whl) as z:
            names = [n for n in z.namelist() if any(p.search(n) for p in keep)]
            dated = max((datetime.datetime(*z.getinfo(n).date_time) for n in names), default=None)
            for n in names:
                z.extract(n, out / "src")
        meta = {
            "wheel": whl.name,
            "sha256": digest.hexdigest(),
            "files_dated": dated.date().isoformat() if dated else None,
        }
        (out / "wheel.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        whl.unlink()
    finally:
        for p in tmp.glob("*"):
            p.unlink()
        tmp.rmdir()
    return out


# --- merge ----------------------------------------------------------------------------------


def ranges(present: list[str], order: list[str]) -> list[list[str]]:
    """Contiguous runs of ``present`` within ``order``: [[first, last], ...]."""
    out: list[list[str]] = []
    have = set(present)
    run: list[str] = []
    for v in order:
        if v in have:
            run.append(v)
        elif run:
            out.append([run[0], run[-1]])
            run = []
    if run:
        out.append([run[0], run[-1]])
    return out


class _UF:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def merge(releases: dict[str, flag_extract.Release], order: list[str]) -> dict:
    """Per setting: its spellings per release, canonical names, choices, deprecations."""
    uf = _UF()
    for rel in releases.values():
        for r in rel.regs:
            for n in r.names:
                uf.find("s:" + n)
            if r.deprecated_kind == "own":
                for n in r.names[1:]:
                    uf.union("s:" + r.names[0], "s:" + n)
            else:
                for n in r.names:
                    uf.union("d:" + r.dest, "s:" + n)
    # state[spelling][version] = (reg, position)
    state: dict[str, dict[str, tuple[flag_extract.Reg, int]]] = {}
    for v in order:
        for r in releases[v].regs:
            for i, n in enumerate(r.names):
                state.setdefault(n, {}).setdefault(v, (r, i))
    families: dict[str, list[str]] = {}
    for n in state:
        families.setdefault(uf.find("s:" + n), []).append(n)

    settings: dict[str, dict] = {}
    for members in families.values():
        canon_by_v: dict[str, flag_extract.Reg] = {}
        for v in order:
            for n in members:
                got = state[n].get(v)
                if got and not got[0].deprecated and got[1] == 0 and v not in canon_by_v:
                    canon_by_v[v] = got[0]
        if canon_by_v:
            latest = max(canon_by_v, key=version_key)
            key_reg = canon_by_v[latest]
            key = key_reg.names[0]
        else:
            latest = max((v for n in members for v in state[n]), key=version_key)
            key_reg = next(state[n][latest][0] for n in members if latest in state[n])
            key = key_reg.names[0]
        accepted = sorted({v for n in members for v in state[n]}, key=version_key)
        entry: dict = {"value": key_reg.takes_value}
        if key_reg.nargs:
            entry["nargs"] = key_reg.nargs
        if key_reg.negatable:
            entry["negatable"] = True
        entry["versions"] = ranges(accepted, order)
        if accepted[-1] != order[-1]:
            entry["removed_in"] = order[order.index(accepted[-1]) + 1]
        # choices per release, from the canonical registration (else any registration)
        by_choices: dict[tuple, list[str]] = {}
        for v in accepted:
            reg = canon_by_v.get(v) or next(state[n][v][0] for n in members if v in state[n])
            if reg.choices is not None:
                by_choices.setdefault(tuple(reg.choices), []).append(v)
        if by_choices:
            entry["choices"] = [
                {"versions": ranges(vs, order), "values": list(vals)}
                for vals, vs in sorted(by_choices.items(), key=lambda kv: version_key(kv[1][0]))
            ]
        spellings: dict[str, dict] = {}
        for n in sorted(members, key=lambda s: (s != key, s)):
            vs = sorted(state[n], key=version_key)
            sp: dict = {"versions": ranges(vs, order)}
            canonical = [
                v for v in vs if canon_by_v.get(v) is not None and canon_by_v[v].names[0] == n
            ]
            if canonical and canonical != vs:
                sp["canonical"] = ranges(canonical, order)
            elif not canonical:
                sp["canonical"] = []
            names_in = {}
            for v in vs:
                c = canon_by_v.get(v)
                if c is not None and c.names[0] != n:
                    names_in.setdefault(c.names[0], []).append(v)
            if names_in:
                sp["alias_of"] = [
                    {"name": c, "versions": ranges(cv, order)} for c, cv in names_in.items()
                ]
            dep = [v for v in vs if state[n][v][0].deprecated]
            if dep:
                sp["deprecated"] = ranges(dep, order)
                nf = state[n][dep[-1]][0].new_flag
                if nf:
                    sp["use_instead"] = nf
            if vs[-1] != order[-1]:
                sp["removed_in"] = order[order.index(vs[-1]) + 1]
            if not state[n][vs[-1]][0].takes_value and key_reg.takes_value:
                sp["value"] = False
            if state[n][vs[-1]][0].nargs != key_reg.nargs:
                sp["nargs"] = state[n][vs[-1]][0].nargs
            spellings[n] = sp
        entry["spellings"] = spellings
        if key in settings:  # two families ending on one name: keep the wider one
            if len(settings[key]["spellings"]) >= len(spellings):
                continue
        settings[key] = entry
    return dict(sorted(settings.items()))


def env_table(releases: dict[str, flag_extract.Release], order: list[str]) -> dict:
    seen: dict[str, list[str]] = {}
    for v in order:
        for name in releases[v].env:
            seen.setdefault(name, []).append(v)
    with_env = [v for v in order if releases[v].env]
    out = {}
    for name, vs in sorted(seen.items()):
        entry = {"versions": ranges(vs, order)}
        if vs[-1] != order[-1]:
            entry["removed_in"] = order[order.index(vs[-1]) + 1]
        out[name] = entry
    return {"read_from": ranges(with_env, order), "vars": out}  # split by build()


def _attach_facts(fw: str, block: dict, facts: dict) -> None:
    flags = block["flags"]
    index = {sp: key for key, e in flags.items() for sp in e.get("spellings", {})}
    for kind in ("docs", "notes"):
        for name, text in facts.get(kind, {}).items():
            key = index.get(name)
            if key is None:
                raise BuildError(f"data/flag_facts.json: {fw} {kind}: {name} is in no release")
            flags[key]["doc" if kind == "docs" else "note"] = text
    envs = block["env"]
    for name, doc in facts.get("env_docs", {}).items():
        envs.setdefault(name, {"versions": []})["doc"] = doc
    for old, new in facts.get("env_renamed", {}).items():
        envs.setdefault(old, {"versions": []}).update(
            renamed_to=new, doc=f"deprecated name of {new}"
        )
    for old, fact in facts.get("env_replaced_by_flag", {}).items():
        flag = fact["flag"] if isinstance(fact, dict) else fact  # {flag, values, source}
        entry = envs.setdefault(old, {"versions": []})
        entry["replaced_by_flag"] = flag
        if old not in facts.get("env_docs", {}):  # a hand-written description stays
            entry["doc"] = f"deprecated: use {flag}"
        if isinstance(fact, dict) and fact.get("values"):
            entry["flag_values"] = fact["values"]  # the variable's value -> the flag's
    for name in facts.get("unregistered", {}):
        if name in index:
            raise BuildError(
                f"data/flag_facts.json: {fw} unregistered: {name} is registered in "
                f"{flags[index[name]]['spellings'][name]['versions']}"
            )
    block["unregistered"] = facts.get("unregistered", {})
    block["value_aliases"] = facts.get("value_aliases", {})


def dtype_aliases(releases: dict, order: list[str]) -> tuple[dict[str, str], list[list[str]]]:
    """``--dtype`` value aliases from the releases' ``_STR_DTYPE_TO_TORCH_DTYPE`` tables: each string
    that names the same torch dtype as another maps to the one spelled like the dtype
    (``half`` -> ``float16``, ``float`` -> ``float32``), and the Python API's ``torch.<dtype>``
    maps there too. Returns the aliases and the releases whose table they come from."""
    names: dict[str, str] = {}
    read: list[str] = []
    for v in order:
        table = releases[v].dtype_names
        if table:
            read.append(v)
        for key, dtype in table.items():
            if names.setdefault(key, dtype) != dtype:
                raise BuildError(f"--dtype {key}: torch.{names[key]} before, torch.{dtype} in {v}")
    canon = {
        dtype: dtype if dtype in names else min(k for k, d in names.items() if d == dtype)
        for dtype in set(names.values())
    }
    out = {key: canon[dtype] for key, dtype in names.items() if key != canon[dtype]}
    out.update({f"torch.{dtype}": c for dtype, c in canon.items()})
    return dict(sorted(out.items())), ranges(read, order)


def build(facts: dict, extracts: dict[str, dict[str, Path]]) -> dict:
    """The registry from the facts and, per framework, ``{version: extracted folder}``."""
    frameworks: dict[str, dict] = {}
    provenance: dict[str, list] = {}
    for fw in ("sglang", "vllm"):
        folders = extracts.get(fw, {})
        order = sorted(folders, key=version_key)
        if not order:
            continue
        releases = {v: EXTRACT[fw](folders[v] / "src") for v in order}
        prov = []
        for v in order:
            meta = json.loads((folders[v] / "wheel.json").read_text(encoding="utf-8"))
            counts = {
                "flags": len({n for r in releases[v].regs for n in r.names}),
                "env": len(releases[v].env),
            }
            prov.append({"version": v, **meta, **counts})
        provenance[fw] = prov
        for before, after in zip(prov, prov[1:], strict=False):  # a file moved out of KEEP
            if after["flags"] < 0.9 * before["flags"]:
                raise BuildError(
                    f"{fw} {after['version']} has {after['flags']} flags, {before['version']} "
                    f"{before['flags']}: did the argument files move? (KEEP patterns)"
                )
        ff = facts["frameworks"][fw]
        block = {
            "naming": ff["naming"],
            # argparse's default; False only if some release passes allow_abbrev=False
            "allow_abbrev": all(releases[v].allow_abbrev for v in order),
            "versions": order,
            "flags": merge(releases, order),
        }
        env = env_table(releases, order)
        block["env_read_from"] = env["read_from"]  # releases that have an environment table
        block["env"] = env["vars"]
        _attach_facts(fw, block, ff)
        aliases, read = dtype_aliases(releases, order)
        if aliases:
            if "--dtype" in block["value_aliases"]:
                raise BuildError(f"data/flag_facts.json: {fw} value_aliases: --dtype is generated")
            block["value_aliases"] = {**block["value_aliases"], "--dtype": aliases}
            block["value_aliases_read_from"] = {
                "--dtype": {"table": "_STR_DTYPE_TO_TORCH_DTYPE", "versions": read}
            }
        for k in ("env_prefixes", "env_prefix_aliases", "packages", "images"):
            block[k] = ff[k]
        frameworks[fw] = block
    trt = facts["frameworks"]["tensorrt-llm"]
    frameworks["tensorrt-llm"] = {
        "naming": trt["naming"],
        "allow_abbrev": trt["allow_abbrev"],
        "versions": [],
        "hand_kept": trt["why_not_generated"],
        # where the second spellings of some options (--config, --tensor_parallel_size) were read
        **({"aliases_source": trt["aliases_source"]} if "aliases_source" in trt else {}),
        "flags": trt["flags"],
        "config": {k: {"doc": v} for k, v in trt["config"].items()},
        "unregistered": {},
        "value_aliases": trt.get("value_aliases", {}),
        "env_read_from": [],
        "env": {},
        **{k: trt[k] for k in ("env_prefixes", "env_prefix_aliases", "packages", "images")},
    }
    return {
        "_doc": (
            "deploykb flag registry, GENERATED by scripts/build_flag_registry.py from the released "
            "wheels (see _provenance) and data/flag_facts.json; do not edit. Per framework: "
            "'versions' (releases read), 'flags' keyed by the setting's newest canonical name, "
            "each with 'versions' ([first, last] runs of releases that accept it), 'removed_in', "
            "'choices' per release run, and 'spellings': every option string with the releases "
            "that accept it, 'canonical' runs (where it is the primary name), 'alias_of', "
            "'deprecated' runs, 'use_instead' and 'removed_in'; 'env' per release; "
            "'unregistered' spellings people write that no release accepts; 'value_aliases' (two "
            "values of one flag that mean the same; those of --dtype read from the releases' "
            "_STR_DTYPE_TO_TORCH_DTYPE, see 'value_aliases_read_from'); 'equivalents' across "
            "frameworks (approximate ones carry a caveat)."
        ),
        "_provenance": {
            "facts": "data/flag_facts.json",
            "extractor": "scripts/flag_extract.py",
            **provenance,
            "tensorrt-llm": trt["why_not_generated"],
        },
        "frameworks": frameworks,
        "common_env": {k: {"doc": v} for k, v in facts["common_env"].items()},
        "equivalents": facts["equivalents"],
    }


def _dump(obj: object, depth: int, indent: str = "") -> str:
    """JSON with one line per entry below ``depth`` levels (a setting, a spelling run, an
    environment variable), so the file stays small and a change shows as one line in a diff."""
    if depth <= 0 or not isinstance(obj, dict) or not obj:
        if isinstance(obj, list) and depth > 0 and obj and all(isinstance(x, dict) for x in obj):
            inner = indent + " "
            items = [inner + _dump(x, 0) for x in obj]
            return "[\n" + ",\n".join(items) + "\n" + indent + "]"
        return json.dumps(obj, ensure_ascii=False)
    inner = indent + " "
    items = [
        f"{inner}{json.dumps(k, ensure_ascii=False)}: {_dump(v, depth - 1, inner)}"
        for k, v in obj.items()
    ]
    return "{\n" + ",\n".join(items) + "\n" + indent + "}"


def render(data: dict) -> str:
    return _dump(data, 4) + "\n"


def load_facts(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BuildError(f"{path}: {exc}") from None


def collect(cache: Path, facts: dict, offline: bool) -> dict[str, dict[str, Path]]:
    out: dict[str, dict[str, Path]] = {}
    for fw, versions in facts["releases"].items():
        for v in versions:
            folder = cache / fw / v
            if not (folder / "wheel.json").exists():
                if offline:
                    raise BuildError(f"{folder}: not extracted (run without --offline)")
                fetch(fw, v, cache)
            out.setdefault(fw, {})[v] = folder
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="regenerate and exit 1 if data/flags.json differs"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("DEPLOYKB_FLAG_CACHE", DEFAULT_CACHE)),
        help="folder of extracted releases (DEPLOYKB_FLAG_CACHE)",
    )
    parser.add_argument("--offline", action="store_true", help="never download")
    parser.add_argument("--facts", type=Path, default=FACTS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    try:
        facts = load_facts(args.facts)
        args.cache.mkdir(parents=True, exist_ok=True)
        text = render(build(facts, collect(args.cache, facts, args.offline)))
    except BuildError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run scripts/build_flag_registry.py", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date")
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} ({len(text.encode()) // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
