"""The facts the differential reads: ``data/differential.json`` as records (descriptive settings,
checkpoint-format flags, nearness weights, prose phrases, trait couplings), and the statuses of a
deployment that works."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from kb.records import FlagChange

WORKING = ("works", "works-with-flags")


@dataclass(frozen=True)
class Coupling:
    id: str
    trait: str
    framework: str | None
    flags: frozenset[str]
    reason: str


@dataclass(frozen=True)
class Phrase:
    """Prose for a change ("disabling CUDA graphs") and the change, in ``framework``'s terms."""

    pattern: re.Pattern[str]
    framework: str | None
    change: str  # "--disable-cuda-graph", "--attention-backend {value}"


@dataclass(frozen=True)
class Nearness:
    """The weights of quantization, framework and version next to the trait similarity."""

    quantization: float
    framework: float
    version: float


@dataclass(frozen=True)
class Rules:
    descriptive: dict[str, frozenset[str]]
    descriptive_env: dict[str, frozenset[str]]
    checkpoint_format: dict[str, frozenset[str]]
    nearness: Nearness
    phrases: tuple[Phrase, ...]
    couplings: tuple[Coupling, ...]
    max_steps: int

    def is_descriptive(self, change: FlagChange, framework: str | None) -> bool:
        """Does the change only name the model or the service (``data/differential.json``)?"""
        if change.kind == "flag":
            return change.name in self.descriptive.get(framework or "", frozenset())
        if change.kind != "env":
            return False
        from agent.registry import load_registry

        names = self.descriptive_env.get("any", frozenset()) | self.descriptive_env.get(
            framework or "", frozenset()
        )
        return load_registry().canonical_env(change.name, framework) in names


@lru_cache(maxsize=1)
def rules() -> Rules:
    """``data/differential.json`` as records."""
    from kb.dataload import load_json_data as load_data

    raw = load_data("differential.json")
    near = raw["nearness"]

    def sets(block: dict) -> dict[str, frozenset[str]]:
        return {k: frozenset(v) for k, v in block.items() if not k.startswith("_")}

    return Rules(
        descriptive=sets(raw["descriptive"]),
        descriptive_env=sets(raw["descriptive_env"]),
        checkpoint_format=sets(raw["checkpoint_format"]),
        nearness=Nearness(
            float(near["quantization"]), float(near["framework"]), float(near["version"])
        ),
        phrases=tuple(
            Phrase(re.compile(ph["pattern"]), ph.get("framework"), ph["change"])
            for ph in raw["tried_phrases"]["phrases"]
        ),
        couplings=tuple(
            Coupling(
                id=c["id"],
                trait=c["trait"],
                framework=c.get("framework"),
                flags=frozenset(c["flags"]),
                reason=c["reason"],
            )
            for c in raw["couplings"]
        ),
        max_steps=int(raw["ranking"]["max_steps"]),
    )
