"""A change as a setting: its newest canonical name, the components it touches, and whether two
changes do the same thing (a release's older spelling is the same setting)."""

from __future__ import annotations

from kb.records import FlagChange


def canonical_name(change: FlagChange, framework: str | None) -> str:
    """The setting's newest canonical name (a release's older spelling resolved)."""
    from agent.registry import load_registry

    reg = load_registry()
    if change.kind == "flag" and framework:
        return reg.canonical(change.name, framework)
    if change.kind == "env":
        return reg.canonical_env(change.name, framework)
    return change.name


def change_components(change: FlagChange, framework: str | None = None) -> frozenset[str]:
    """The components a change touches (``--kv-cache-dtype`` -> ``fp8-kv-cache``), whatever
    release's spelling it has."""
    from agent.components import from_flags

    return from_flags([(canonical_name(change, framework), change.value)])


def same_change(a: FlagChange, b: FlagChange, framework: str | None) -> bool:
    """Does change ``b`` (tried, or a case's fix) do what ``a`` does? Names are compared as
    settings (a release's older spelling is the same setting), values through the registry."""
    from agent.registry import load_registry

    if a.kind != b.kind:
        return False
    if a.name != b.name and canonical_name(a, framework) != canonical_name(b, framework):
        return False
    if a.action == "remove" or b.action == "remove":
        return a.action == b.action
    if a.kind == "flag":
        name = canonical_name(a, framework)
        return load_registry().same_value(name, a.value, b.value, framework)
    return (a.value or "") == (b.value or "")
