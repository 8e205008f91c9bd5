"""What was tried without effect: the user's ``--tried`` entries and a case's dead ends (flags,
variables and pins as written, or prose read through the phrases of ``data/differential.json``)
as changes, and the list of them shown once each."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from agent.differential.changes import same_change
from agent.differential.facts import Phrase, rules
from kb.errors import CommandParseError, InputError
from kb.records import Finding, Fix, FlagChange


def parse_tried(
    items: Sequence[str],
    framework: str | None,
    *,
    origin: str = "--tried",
    version: str | None = None,
) -> tuple[FlagChange, ...]:
    """The user's ``--tried`` entries as changes: ``--flag [value]``, ``remove --flag``,
    ``NAME=value``, ``pkg==1.2`` (as release ``version`` takes them, when given). A bad entry is
    an input error naming it."""
    return tuple(c for item in items for c in tried_item(item, framework, origin, version))


def tried_item(
    item: str, framework: str | None, origin: str, version: str | None
) -> tuple[FlagChange, ...]:
    """One ``--tried`` entry as changes (see :func:`parse_tried`)."""
    from agent.flags import diff_changes, parse_fix_item

    text = " ".join(item.split())
    removing = text.lower().startswith("remove ")
    body = text.split(None, 1)[1] if removing else text
    try:
        changes = parse_fix_item(body, framework, action="remove" if removing else "add")
    except CommandParseError:
        raise InputError(
            f"{origin} '{item}': not a change; write '--flag value', 'remove --flag', "
            "NAME=value or pkg==1.2"
        ) from None
    if version is None:
        return changes
    adds = [c for c in changes if c.action == "add"]
    removes = [c for c in changes if c.action == "remove"]
    return diff_changes(
        None,
        adds,
        removes,
        source_framework=framework,
        target_framework=framework,
        target_version=version,
    )[0]


def read_tried(
    item: str,
    finding_framework: str | None,
    framework: str | None,
    version: str | None = None,
) -> tuple[FlagChange, ...]:
    """A case's ``tried_without_effect`` entry as the changes it names, in ``framework``'s
    terms (and ``version``'s): a flag, variable or pin as written, else the change its prose
    describes (``disabling CUDA graphs`` is ``--disable-cuda-graph``, see ``tried_phrases`` in
    ``data/differential.json``); empty when it names none."""
    from agent.flags import diff

    text = " ".join(item.split())
    removing = text.lower().startswith("remove ") and " " in text
    fix = Fix(remove=(text.split(None, 1)[1],)) if removing else Fix(add=(text,))
    options = {"target_framework": framework, "target_version": version}
    try:
        return diff(None, fix, finding_framework=finding_framework, **options)
    except CommandParseError:
        pass
    for phrase in rules().phrases:
        change = _phrase_change(phrase, text.lower())
        if change is None:
            continue
        try:
            found = diff(None, Fix(add=(change,)), finding_framework=phrase.framework, **options)
        except CommandParseError:
            continue
        if found:
            return found
    return ()


def _phrase_change(phrase: Phrase, text: str) -> str | None:
    """The change ``phrase`` reads in ``text``, or None (a ``{value}`` must be a choice of the
    flag in the phrase's framework)."""
    from agent.registry import load_registry

    m = phrase.pattern.search(text)
    if m is None:
        return None
    if "{value}" not in phrase.change:
        return phrase.change
    value = m.groupdict().get("value")
    flag = phrase.change.split()[0]
    spec = load_registry().spec(flag, phrase.framework)
    if not value or spec is None:
        return None
    if spec.choices and value not in spec.choices:
        return None
    return phrase.change.replace("{value}", value)


@lru_cache(maxsize=4096)
def case_tried(
    finding: Finding, framework: str | None, version: str | None = None
) -> tuple[FlagChange, ...]:
    """A case's dead ends as changes (flags as written, prose read through the phrases)."""
    fw = (finding.framework.name or "").lower() or None
    return tuple(
        c for item in finding.tried_without_effect for c in read_tried(item, fw, framework, version)
    )


def _tried_text(change: FlagChange) -> str:
    text = change.text or (change.name if change.value is None else f"{change.name} {change.value}")
    return f"remove {text}" if change.action == "remove" else text


def tried_list(
    entries: Sequence[tuple[str, tuple[FlagChange, ...]]], framework: str | None
) -> tuple[str, ...]:
    """What was tried, each change once: an entry that names changes is shown as them in the
    user's terms (``disabling CUDA graphs`` and ``--disable-cuda-graph`` are one line); prose
    that names none is shown as written."""
    seen: list[FlagChange] = []
    out: list[str] = []
    for text, changes in entries:
        fresh = [c for c in changes if not any(same_change(c, s, framework) for s in seen)]
        seen += fresh
        shown = [_tried_text(c) for c in fresh] if changes else [" ".join(text.split())]
        out += [t for t in shown if t not in out]
    return tuple(out)
