"""Read launch flags and environment variables out of a framework's source with ``ast``.

Used by ``scripts/build_flag_registry.py``. Nothing here imports the framework: each function
takes a folder of extracted ``.py`` files (one release) and returns plain records.

SGLang (``sglang/srt/server_args.py`` and ``sglang/srt/arg_groups/``):
  * ``parser.add_argument("--name", "--alias", action=..., nargs=..., choices=..., dest=...)``;
  * dataclass/struct fields annotated ``A[T, Arg(cli_name=..., aliases=..., choices=..., ...)]``
    or ``A[T, "help"]`` (the rules of ``arg_groups/arg_utils.add_cli_args_from_dataclass``:
    ``--field-name`` unless ``cli_name``; ``bool`` is a switch; ``List[..]`` takes several values;
    ``Literal[..]`` gives the choices; ``no_cli=True`` has no flag);
  * ``Deprecated*Action`` registrations: ``DeprecatedAliasStoreAction``/``DeprecatedStoreTrueAction``
    with ``dest`` are deprecated spellings of that setting; ``DeprecatedStoreConstAction`` and
    ``DeprecatedAction`` are deprecated switches of their own;
  * environment variables: the ``Env*`` attributes of ``class Envs`` in ``sglang/srt/environ.py``.

vLLM (``vllm/engine/arg_utils.py``, ``vllm/entrypoints/{openai,common}/cli_args.py``, ``config``):
  * ``group.add_argument("--name", "-x", **model_kwargs["field"], deprecated=True)`` where
    ``model_kwargs = get_kwargs(ModelConfig)``; the field's annotation decides the rest as vLLM's
    ``_compute_kwargs`` does (a dataclass takes JSON, ``bool`` is a ``--name/--no-name`` switch,
    ``Literal`` gives choices, ``list``/``tuple``/``set`` take several values);
  * ``for key, value in frontend_kwargs.items(): add_argument(f"--{key...}")`` adds every field
    of the class (less the keys the function deletes);
  * environment variables: the keys of ``environment_variables`` in ``vllm/envs.py``.

Choices are resolved through module-level constants of the same release (lists, tuples,
``Literal`` aliases, ``list(DICT.keys())``, concatenations, ``X.extend([...])`` at module level,
``Enum`` members). A choice list that cannot be resolved statically is left out (``None``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

DEPRECATED_ALIAS_ACTIONS = {"DeprecatedAliasStoreAction", "DeprecatedStoreTrueAction"}
SWITCH_ACTIONS = {"store_true", "store_false", "store_const", "count"}


@dataclass
class Reg:
    """One registration: the option strings of one add_argument call (or one field)."""

    names: list[str]
    dest: str
    takes_value: bool = True
    nargs: str | None = None
    negatable: bool = False
    choices: list[str] | None = None
    deprecated: bool = False
    # "alias": a deprecated spelling of ``dest``'s setting; "own": a deprecated switch of its own
    deprecated_kind: str | None = None
    new_flag: str | None = None
    where: str = ""


@dataclass
class Release:
    regs: list[Reg] = field(default_factory=list)
    env: list[str] = field(default_factory=list)
    allow_abbrev: bool = True
    # the ``--dtype`` strings and the torch dtype each names (``{"half": "float16", ...}``), from
    # the release's module-level ``_STR_DTYPE_TO_TORCH_DTYPE`` table; empty where it has none
    dtype_names: dict[str, str] = field(default_factory=dict)


# --- the name table of one release ---------------------------------------------------------


class Names:
    """Module-level assignments, classes and list extensions of every file of one release."""

    def __init__(self, files: dict[str, ast.Module]) -> None:
        self.assign: dict[str, ast.expr] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.extend: dict[str, list[ast.expr]] = {}
        for tree in files.values():
            for node in tree.body:
                self._top(node)

    def _top(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.assign.setdefault(t.id, node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            self.assign.setdefault(node.target.id, node.value)
        elif isinstance(node, ast.ClassDef):
            self.classes.setdefault(node.name, node)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            self.extend.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            f = node.value.func
            if (
                isinstance(f, ast.Attribute)
                and f.attr in ("extend", "append")
                and isinstance(f.value, ast.Name)
                and node.value.args
            ):
                arg = node.value.args[0]
                if f.attr == "append":
                    arg = ast.List(elts=[arg], ctx=ast.Load())
                self.extend.setdefault(f.value.id, []).append(arg)
        elif isinstance(node, ast.If | ast.Try):
            for sub in node.body:
                self._top(sub)

    def enum_members(self, cls: ast.ClassDef, attr: str = "value") -> list[str] | None:
        out = []
        for st in cls.body:
            if (
                isinstance(st, ast.Assign)
                and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Name)
            ):
                name = st.targets[0].id
                if name.startswith("_"):
                    continue
                v = st.value
                if attr == "name":
                    out.append(name)
                elif isinstance(v, ast.Constant) and isinstance(v.value, str):
                    out.append(v.value)
                elif isinstance(v, ast.Call):  # auto() / enum_value(): the member name
                    out.append(name)
                else:
                    return None
        return out or None

    def is_enum(self, cls: ast.ClassDef) -> bool:
        for b in cls.bases:
            text = ast.unparse(b)
            if "Enum" in text:
                return True
            if isinstance(b, ast.Name) and b.id in self.classes and b.id != cls.name:
                if self.is_enum(self.classes[b.id]):
                    return True
        return False

    def strings(self, node: ast.expr | None, depth: int = 0) -> list[str] | None:
        """The string list an expression evaluates to, or None when it cannot be known."""
        if node is None or depth > 12:
            return None
        d = depth + 1
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return [node.value]
            if node.value is None:
                return []
            return [str(node.value)]
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            out: list[str] = []
            for e in node.elts:
                part = self.strings(e.value if isinstance(e, ast.Starred) else e, d)
                if part is None:
                    return None
                out += part
            return out
        if isinstance(node, ast.Dict):
            out = []
            for k in node.keys:
                part = self.strings(k, d) if k is not None else None
                if part is None:
                    return None
                out += part
            return out
        if isinstance(node, ast.Name):
            if node.id in self.assign:
                base = self.strings(self.assign[node.id], d)
                if base is None:
                    return None
                for ext in self.extend.get(node.id, []):
                    more = self.strings(ext, d)
                    if more is None:
                        return None
                    base = base + more
                return base
            cls = self.classes.get(node.id)
            if cls is not None and self.is_enum(cls):
                return self.enum_members(cls)
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.BitOr):
            a, b = self.strings(node.left, d), self.strings(node.right, d)
            return None if a is None or b is None else a + b
        if isinstance(node, ast.Call):
            fn = ast.unparse(node.func)
            if fn in ("list", "tuple", "sorted", "set", "frozenset") and node.args:
                return self.strings(node.args[0], d)
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("keys", "copy"):
                return self.strings(node.func.value, d)
            if fn in ("get_args", "typing.get_args") and node.args:
                return self.strings(node.args[0], d)
            return None
        if isinstance(node, ast.Subscript):
            head = ast.unparse(node.value)
            if head.endswith("Literal"):
                return self.strings(node.slice, d)
            return None
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id in self.classes:
                cls = self.classes[node.value.id]
                for st in cls.body:
                    if (
                        isinstance(st, ast.Assign)
                        and isinstance(st.targets[0], ast.Name)
                        and st.targets[0].id == node.attr
                    ):
                        return self.strings(st.value, d)
            return None
        if isinstance(node, ast.ListComp | ast.SetComp) and len(node.generators) == 1:
            gen = node.generators[0]
            if gen.ifs:
                return None
            it = gen.iter
            if isinstance(it, ast.Name) and it.id in self.classes:
                cls = self.classes[it.id]
                if self.is_enum(cls) and isinstance(node.elt, ast.Attribute):
                    return self.enum_members(cls, "name" if node.elt.attr == "name" else "value")
            if (
                isinstance(node.elt, ast.Name)
                and isinstance(gen.target, ast.Name)
                and node.elt.id == gen.target.id
            ):
                return self.strings(it, d)
            return None
        return None


def parse_files(root: Path, rels: list[str]) -> dict[str, ast.Module]:
    out = {}
    for rel in rels:
        path = root / rel
        try:
            out[rel] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (OSError, SyntaxError, ValueError):
            continue
    return out


def dtype_names(files: dict[str, ast.Module]) -> dict[str, str]:
    """``{"half": "float16", "float": "float32", ...}`` from a module-level
    ``_STR_DTYPE_TO_TORCH_DTYPE = {"half": torch.float16, ...}`` in any of ``files``."""
    out: dict[str, str] = {}
    for tree in files.values():
        for node in tree.body:
            if not (
                isinstance(node, (ast.Assign, ast.AnnAssign))
                and isinstance(node.value, ast.Dict)
                and any(
                    isinstance(t, ast.Name) and t.id == "_STR_DTYPE_TO_TORCH_DTYPE"
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                )
            ):
                continue
            for k, v in zip(node.value.keys, node.value.values, strict=True):
                if (
                    isinstance(k, ast.Constant)
                    and isinstance(k.value, str)
                    and isinstance(v, ast.Attribute)
                    and isinstance(v.value, ast.Name)
                    and v.value.id == "torch"
                ):
                    out[k.value] = v.attr
    return out


def _kw(call: ast.Call) -> dict[str, ast.expr]:
    return {k.arg: k.value for k in call.keywords if k.arg}


def _const(node: ast.expr | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _action_name(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return str(node.value)
    return ast.unparse(node).rsplit(".", 1)[-1]


def _option_names(call: ast.Call) -> list[str]:
    names = []
    for a in call.args:
        v = _const(a)
        if isinstance(v, str) and v.startswith("-"):
            names.append(v)
        else:
            break
    return names


def _dest_of(names: list[str]) -> str:
    longs = [n for n in names if n.startswith("--")] or names
    return longs[0].lstrip("-").replace("-", "_")


def _argparse_reg(
    call: ast.Call, names: list[str], names_tab: Names, where: str, base: Reg | None = None
) -> Reg:
    """A Reg from add_argument keywords (on top of ``base`` from a ``**kwargs`` field)."""
    kw = _kw(call)
    reg = base or Reg(names=names, dest=_dest_of(names), where=where)
    reg.names = names
    if "dest" in kw and isinstance(_const(kw["dest"]), str) and base is None:
        reg.dest = str(_const(kw["dest"]))
    action = _action_name(kw.get("action"))
    if action in SWITCH_ACTIONS:
        reg.takes_value, reg.nargs, reg.negatable = False, None, False
    elif action == "BooleanOptionalAction":
        reg.takes_value, reg.nargs, reg.negatable = False, None, True
    elif action and action.startswith("Deprecated"):
        reg.deprecated = True
        nargs = _const(kw.get("nargs"))
        if action == "DeprecatedAliasStoreAction":
            reg.deprecated_kind = "alias" if "dest" in kw else "own"
            reg.takes_value = nargs != 0
        elif action == "DeprecatedStoreTrueAction":
            reg.deprecated_kind = "alias" if "dest" in kw else "own"
            reg.takes_value = False
        else:  # DeprecatedAction (no effect / error), DeprecatedStoreConstAction (sets a value)
            reg.deprecated_kind = "own"
            reg.takes_value = nargs not in (None, 0) and action != "DeprecatedStoreConstAction"
            if action == "DeprecatedAction" and nargs is None:
                reg.takes_value = False
        nf = _const(kw.get("new_flag"))
        if isinstance(nf, str):
            reg.new_flag = nf
    if _const(kw.get("deprecated")) is True:
        reg.deprecated = True
        reg.deprecated_kind = reg.deprecated_kind or "alias"
    if "nargs" in kw:
        n = _const(kw["nargs"])
        if n in ("+", "*"):
            reg.nargs, reg.takes_value = "+", True
        elif n == "?":
            reg.nargs = "?"
        elif n == 0:
            reg.takes_value = False
        elif isinstance(n, int) and n > 1:
            reg.nargs = "+"
    if "choices" in kw:
        reg.choices = names_tab.strings(kw["choices"])
    return reg


# --- SGLang ---------------------------------------------------------------------------------


def _split_annotated(ann: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    if isinstance(ann, ast.Subscript) and ast.unparse(ann.value) in (
        "A",
        "Annotated",
        "typing.Annotated",
    ):
        sl = ann.slice
        if isinstance(sl, ast.Tuple) and len(sl.elts) >= 2:
            return sl.elts[0], sl.elts[1]
    return None


def _unwrap_optional(tp: ast.expr) -> ast.expr:
    if isinstance(tp, ast.Subscript) and ast.unparse(tp.value).endswith("Optional"):
        return tp.slice
    if isinstance(tp, ast.BinOp) and isinstance(tp.op, ast.BitOr):
        parts = [p for p in (tp.left, tp.right) if ast.unparse(p) != "None"]
        if len(parts) == 1:
            return parts[0]
    if isinstance(tp, ast.Subscript) and ast.unparse(tp.value).endswith("Union"):
        sl = tp.slice
        if isinstance(sl, ast.Tuple):
            parts = [p for p in sl.elts if ast.unparse(p) != "None"]
            if len(parts) == 1:
                return parts[0]
    return tp


def _sglang_field(name: str, tp: ast.expr, meta: ast.expr, tab: Names, where: str) -> Reg | None:
    kw: dict[str, ast.expr] = {}
    if isinstance(meta, ast.Call) and ast.unparse(meta.func).endswith("Arg"):
        kw = _kw(meta)
    elif not (isinstance(meta, ast.Constant) and isinstance(meta.value, str)):
        return None
    if _const(kw.get("no_cli")) is True:
        return None
    cli = _const(kw.get("cli_name"))
    names = [cli if isinstance(cli, str) else "--" + name.replace("_", "-")]
    aliases = tab.strings(kw["aliases"]) if "aliases" in kw else []
    names += aliases or []
    reg = Reg(names=names, dest=name, where=where)
    inner = _unwrap_optional(tp)
    head = ast.unparse(inner.value) if isinstance(inner, ast.Subscript) else ast.unparse(inner)
    if "action" in kw:
        call = ast.Call(
            func=ast.Name("add_argument"),
            args=[],
            keywords=[ast.keyword(arg="action", value=kw["action"])],
        )
        _argparse_reg(call, names, tab, where, base=reg)
        if kw.get("action_kwargs") is not None and isinstance(kw["action_kwargs"], ast.Dict):
            extra = ast.Call(
                func=ast.Name("add_argument"),
                args=[],
                keywords=[
                    ast.keyword(arg=_const(k), value=v)
                    for k, v in zip(
                        kw["action_kwargs"].keys, kw["action_kwargs"].values, strict=False
                    )
                    if isinstance(_const(k), str)
                ],
            )
            _argparse_reg(extra, names, tab, where, base=reg)
        reg.dest = name
        return reg
    if head.endswith("Literal"):
        reg.choices = tab.strings(kw["choices"]) if "choices" in kw else tab.strings(inner)
    elif head in ("List", "list", "typing.List") and "type_parser" not in kw:
        reg.nargs = _const(kw.get("nargs")) or "+"
        if reg.nargs == "*":
            reg.nargs = "+"
        if "choices" in kw:
            reg.choices = tab.strings(kw["choices"])
    elif head == "bool":
        reg.takes_value = False
    else:
        if "choices" in kw:
            reg.choices = tab.strings(kw["choices"])
        n = _const(kw.get("nargs"))
        if n in ("+", "*", "?"):
            reg.nargs = "+" if n == "*" else n
    return reg


def extract_sglang(root: Path) -> Release:
    """Flags and environment variables of one SGLang release extracted under ``root``."""
    base = root / "sglang" / "srt"
    rels = []
    if (base / "server_args.py").exists():
        rels.append("sglang/srt/server_args.py")
    if (base / "arg_groups").is_dir():
        rels += sorted(str(p.relative_to(root)) for p in (base / "arg_groups").rglob("*.py"))
    files = parse_files(root, rels)
    tab = Names(files)
    rel = Release()
    rel.dtype_names = dtype_names(parse_files(root, ["sglang/srt/configs/model_config.py"]))
    field_files = {r for r in files if r.endswith("server_args.py") or "/arg_groups/fields/" in r}
    for path, tree in files.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and path in field_files:
                for st in node.body:
                    if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
                        continue
                    if st.target.id.startswith("_"):
                        continue
                    parts = _split_annotated(st.annotation)
                    if parts is None:
                        continue
                    reg = _sglang_field(st.target.id, parts[0], parts[1], tab, path)
                    if reg is not None:
                        rel.regs.append(reg)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"
            ):
                names = _option_names(node)
                if names:
                    rel.regs.append(_argparse_reg(node, names, tab, path))
            elif isinstance(node, ast.keyword) and node.arg == "allow_abbrev":
                if _const(node.value) is False:
                    rel.allow_abbrev = False
    env_file = base / "environ.py"
    if env_file.exists():
        tree = ast.parse(env_file.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == "Envs":
                for st in node.body:
                    target = None
                    if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
                        target, value = st.targets[0].id, st.value
                    elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                        target, value = st.target.id, st.value
                    if (
                        target
                        and isinstance(value, ast.Call)
                        and ast.unparse(value.func).startswith("Env")
                    ):
                        rel.env.append(target)
    return rel


# --- vLLM -----------------------------------------------------------------------------------


def _class_fields(tab: Names, cls_name: str, seen: set[str] | None = None) -> dict[str, ast.expr]:
    """Annotated fields of a class and its bases (base first), ClassVar and private ones out."""
    seen = seen or set()
    cls = tab.classes.get(cls_name)
    if cls is None or cls_name in seen:
        return {}
    seen.add(cls_name)
    out: dict[str, ast.expr] = {}
    for b in cls.bases:
        if isinstance(b, ast.Name):
            out.update(_class_fields(tab, b.id, seen))
    for st in cls.body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            ann = ast.unparse(st.annotation)
            if st.target.id.startswith("_") or "ClassVar" in ann or "InitVar" in ann:
                continue
            out[st.target.id] = st.annotation
    return out


def _flatten_types(tp: ast.expr, tab: Names, depth: int = 0) -> list[ast.expr]:
    """The members of a union annotation, aliases followed (``X | None``, ``Optional[X]``)."""
    if depth > 8:
        return [tp]
    d = depth + 1
    if isinstance(tp, ast.Constant) and isinstance(tp.value, str):
        try:
            return _flatten_types(ast.parse(tp.value, mode="eval").body, tab, d)
        except SyntaxError:
            return [tp]
    if isinstance(tp, ast.BinOp) and isinstance(tp.op, ast.BitOr):
        return _flatten_types(tp.left, tab, d) + _flatten_types(tp.right, tab, d)
    if isinstance(tp, ast.Subscript):
        head = ast.unparse(tp.value).rsplit(".", 1)[-1]
        if head in ("Optional", "Union"):
            elts = tp.slice.elts if isinstance(tp.slice, ast.Tuple) else [tp.slice]
            return [x for e in elts for x in _flatten_types(e, tab, d)]
        if head == "Annotated" and isinstance(tp.slice, ast.Tuple):
            return _flatten_types(tp.slice.elts[0], tab, d)
        return [tp]
    if isinstance(tp, ast.Name) and tp.id in tab.assign and tp.id not in tab.classes:
        val = tab.assign[tp.id]
        if isinstance(val, ast.Subscript | ast.BinOp | ast.Name):
            return _flatten_types(val, tab, d)
        if isinstance(val, ast.Call) and ast.unparse(val.func).endswith("TypeAliasType"):
            if len(val.args) >= 2:
                return _flatten_types(val.args[1], tab, d)
    return [tp]


def _vllm_field_reg(
    names: list[str], owner: str, fname: str, ann: ast.expr, tab: Names, where: str
) -> Reg:
    # the setting is the config class's field: dest names alone collide across classes
    reg = Reg(names=names, dest=f"{owner}.{fname}", where=where)
    parts = _flatten_types(ann, tab)
    heads = []
    for p in parts:
        heads.append(ast.unparse(p.value if isinstance(p, ast.Subscript) else p).rsplit(".", 1)[-1])

    def is_dataclass(h: str) -> bool:
        cls = tab.classes.get(h)
        if cls is None or tab.is_enum(cls):
            return False
        decos = " ".join(ast.unparse(x) for x in cls.decorator_list)
        return "dataclass" in decos or "config" in decos

    if any(is_dataclass(h) for h in heads):
        return reg  # JSON value
    if "bool" in heads:
        reg.takes_value, reg.negatable = False, True
        return reg
    literal = [p for p, h in zip(parts, heads, strict=True) if h == "Literal"]
    if literal:
        vals: list[str] = []
        for p in literal:
            got = tab.strings(p)
            if got is None:
                vals = None  # type: ignore[assignment]
                break
            vals += got
        reg.choices = vals
        return reg
    for p, h in zip(parts, heads, strict=True):
        if h in ("list", "List", "tuple", "Tuple", "set", "Set"):
            reg.nargs = "+"
            if isinstance(p, ast.Subscript):
                inner = p.slice.elts[0] if isinstance(p.slice, ast.Tuple) else p.slice
                inner_parts = _flatten_types(inner, tab)
                if any(
                    ast.unparse(getattr(x, "value", x)).endswith("Literal") for x in inner_parts
                ):
                    reg.choices = tab.strings(inner_parts[0])
            return reg
    for h in heads:
        cls = tab.classes.get(h)
        if cls is not None and tab.is_enum(cls) and "str" not in heads:  # Enum | str: any text
            reg.choices = tab.enum_members(cls, "name")
            return reg
    return reg


def _field_of(
    expr: ast.expr, field_vars: dict[str, tuple[str, str]], kw_vars: dict[str, str]
) -> tuple[str, str] | None:
    """(config class, field) behind ``kwargs["field"]`` or a variable holding it."""
    if isinstance(expr, ast.Name) and expr.id in field_vars:
        var, fname = field_vars[expr.id]
    elif (
        isinstance(expr, ast.Subscript)
        and isinstance(expr.value, ast.Name)
        and isinstance(_const(expr.slice), str)
    ):
        var, fname = expr.value.id, str(_const(expr.slice))
    else:
        return None
    return (kw_vars[var], fname) if var in kw_vars else None


def extract_vllm(root: Path) -> Release:
    """Flags and environment variables of one vLLM release extracted under ``root``."""
    pkg = root / "vllm"
    rels = [str(p.relative_to(root)) for p in sorted(pkg.rglob("*.py"))]
    files = parse_files(root, rels)
    tab = Names(files)
    rel = Release()
    rel.dtype_names = dtype_names(files)
    arg_files = [
        r for r in files if r.endswith(("engine/arg_utils.py", "/cli_args.py", "cli/serve.py"))
    ]
    for path in arg_files:
        tree = files[path]
        owner_of: dict[int, str] = {}  # id(method) -> its class (for get_kwargs(cls))
        for cls in ast.walk(tree):
            if isinstance(cls, ast.ClassDef):
                for st in cls.body:
                    if isinstance(st, ast.FunctionDef):
                        owner_of[id(st)] = cls.name
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            kw_vars: dict[str, str] = {}
            field_vars: dict[str, tuple[str, str]] = {}  # x = model_kwargs["field"]
            deleted: dict[str, set[str]] = {}
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Subscript)
                    and isinstance(node.value.value, ast.Name)
                    and isinstance(node.targets[0], ast.Name)
                    and isinstance(_const(node.value.slice), str)
                ):
                    field_vars[node.targets[0].id] = (
                        node.value.value.id,
                        str(_const(node.value.slice)),
                    )
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Call)
                    and ast.unparse(node.value.func).endswith("get_kwargs")
                    and node.value.args
                    and isinstance(node.targets[0], ast.Name)
                ):
                    cls_name = ast.unparse(node.value.args[0])
                    if cls_name == "cls" and id(fn) in owner_of:
                        cls_name = owner_of[id(fn)]  # a classmethod: it and its subclasses
                    kw_vars[node.targets[0].id] = cls_name
                elif isinstance(node, ast.Delete):
                    for t in node.targets:
                        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                            key = _const(t.slice)
                            if isinstance(key, str):
                                deleted.setdefault(t.value.id, set()).add(key)
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.For)
                    and isinstance(node.iter, ast.Call)
                    and isinstance(node.iter.func, ast.Attribute)
                    and node.iter.func.attr == "items"
                    and isinstance(node.iter.func.value, ast.Name)
                    and node.iter.func.value.id in kw_vars
                ):
                    var = node.iter.func.value.id
                    adds = [
                        c
                        for c in ast.walk(node)
                        if isinstance(c, ast.Call)
                        and isinstance(c.func, ast.Attribute)
                        and c.func.attr == "add_argument"
                    ]
                    if not adds:
                        continue
                    fields = _class_fields(tab, kw_vars[var])
                    for sub in tab.classes.values():
                        if any(isinstance(b, ast.Name) and b.id == kw_vars[var] for b in sub.bases):
                            fields = {**fields, **_class_fields(tab, sub.name)}
                    for fname, ann in fields.items():
                        if fname in deleted.get(var, set()):
                            continue
                        flag = "--" + fname.replace("_", "-")
                        rel.regs.append(
                            _vllm_field_reg([flag], kw_vars[var], fname, ann, tab, path)
                        )
                if not (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "add_argument"
                ):
                    continue
                names = _option_names(node)
                if not names:
                    continue
                base = None

                extra: list[ast.keyword] = []
                for k in node.keywords:
                    if k.arg is not None:
                        continue
                    sources = [k.value]
                    if isinstance(k.value, ast.Dict):  # **{**kwargs["x"], "default": None}
                        sources = [
                            v
                            for key, v in zip(k.value.keys, k.value.values, strict=True)
                            if key is None
                        ]
                        extra += [
                            ast.keyword(arg=_const(key), value=v)
                            for key, v in zip(k.value.keys, k.value.values, strict=True)
                            if isinstance(_const(key), str)
                        ]
                    for src in sources:
                        got = _field_of(src, field_vars, kw_vars)
                        if got is None:
                            continue
                        fields = _class_fields(tab, got[0])
                        if got[1] in fields:
                            base = _vllm_field_reg(names, got[0], got[1], fields[got[1]], tab, path)
                if extra:
                    node = ast.Call(
                        func=node.func, args=node.args, keywords=[*node.keywords, *extra]
                    )
                rel.regs.append(_argparse_reg(node, names, tab, path, base=base))
    for path, tree in files.items():
        if "argparse" in path or path.endswith(("arg_utils.py", "cli_args.py")):
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.keyword)
                    and node.arg == "allow_abbrev"
                    and _const(node.value) is False
                ):
                    rel.allow_abbrev = False
    envs = files.get("vllm/envs.py")
    if envs is not None:
        for node in envs.body:
            target = None
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                target, value = node.targets[0].id, node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                target, value = node.target.id, node.value
            if target == "environment_variables" and isinstance(value, ast.Dict):
                rel.env = [
                    k.value
                    for k in value.keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)
                ]
    return rel
