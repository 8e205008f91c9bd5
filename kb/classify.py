"""Symptom classes of an error line, by the class rules of ``data/triage.json``.

One rule set serves both sides of a match: the log triage of ``ask`` (``agent.logs``) and the
free-form findings parser (``kb.parse``), so a line gets the same class wherever it comes from.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from kb.errors import DeployKBError
from kb.records import SYMPTOM_CLASSES

ClassRules = tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]


def compile_classes(entries: Any, origin: str = "data/triage.json") -> ClassRules:
    """Validate and compile the ``classes`` list; a defect raises ``DeployKBError`` naming it."""
    if not isinstance(entries, list) or not entries:
        raise DeployKBError(f"{origin}: 'classes' must be a non-empty list")
    out = []
    for i, entry in enumerate(entries):
        where = f"{origin}: classes[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("patterns"), list):
            raise DeployKBError(f"{where}: needs 'cls' and a 'patterns' list")
        cls = entry.get("cls")
        if cls not in SYMPTOM_CLASSES:
            raise DeployKBError(
                f"{where}: unknown class {cls!r}; use one of {', '.join(SYMPTOM_CLASSES)}"
            )
        patterns = []
        for j, pattern in enumerate(entry["patterns"]):
            if not isinstance(pattern, str) or not pattern:
                raise DeployKBError(f"{where}.patterns[{j}]: 'pattern' must be a non-empty string")
            try:
                patterns.append(re.compile(pattern, re.IGNORECASE))
            except re.error as exc:
                raise DeployKBError(
                    f"{where}.patterns[{j}]: bad regular expression {pattern!r}: {exc}"
                ) from None
        out.append((cls, tuple(patterns)))
    return tuple(out)


@lru_cache(maxsize=1)
def class_rules() -> ClassRules:
    from kb.dataload import load_json_data
    from kb.resources import data_file

    raw = load_json_data("triage.json")
    path = data_file("triage.json")
    return compile_classes(raw.get("classes"), str(path))


def classify_symptom(text: str, rules: ClassRules | None = None) -> str | None:
    """The first class whose patterns match (illegal memory access before device assert before
    nan ...), or None."""
    for cls, patterns in rules if rules is not None else class_rules():
        if any(p.search(text) for p in patterns):
            return cls
    return None
