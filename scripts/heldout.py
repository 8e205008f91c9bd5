"""The held-out evaluation set: real public failure reports, split into dev and test by finding.

Reports live in ``eval/heldout/reports-*.jsonl`` (format in ``eval/heldout/README.md``). The split
is fixed by a seed: every report expecting the same finding (or a finding linked to it through a
report that expects both) lands in the same part, so no finding's reports are spread over dev and
test; negatives are split one by one. Groups are put in the order of ``sha256(SEED + group key)``
and taken into test in that order until test holds at least ``TEST_SHARE`` of the positives (and,
separately, of the negatives); the rest is dev.

The line statistics and the ranking weights and thresholds are fitted on the parts already read
(``scripts/fit_ranking.py`` ``TRAIN_PARTS``: dev, test and FRESH to FRESH11). A sealed part is read
by ``scripts/eval.py`` only, never by a fitting script.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HELDOUT = ROOT / "eval" / "heldout"
# collected 2026-12-01; a training part since 2026-12-02
FRESH = ROOT / "eval" / "fresh"
# collected 2026-12-02 after the first and the second refit; training parts since
FRESH2 = ROOT / "eval" / "fresh2"
FRESH3 = ROOT / "eval" / "fresh3"
# collected 2026-12-02 after the third refit; a training part since its first run
FRESH4 = ROOT / "eval" / "fresh4"
# collected 2026-12-02 after the third refit, merged after the fourth; a training part since its
# first run
FRESH5 = ROOT / "eval" / "fresh5"
# collected 2026-12-02 after the fourth refit, merged after the fifth; a training part since its
# first run
FRESH6 = ROOT / "eval" / "fresh6"
# collected 2026-12-02 after the sixth refit; a training part since its first run
FRESH7 = ROOT / "eval" / "fresh7"
# collected 2026-12-02 while the seventh refit was made, merged after it; a training part since
# its first run
FRESH8 = ROOT / "eval" / "fresh8"
# collected 2026-12-02 while the eighth refit was made, merged after it; a training part since
# its first run
FRESH9 = ROOT / "eval" / "fresh9"
# collected 2026-12-03 after the ninth refit (commit 0835c48), merged after it; a training part
# since its first run
FRESH10 = ROOT / "eval" / "fresh10"
# collected 2026-12-03 while the tenth refit was made, merged after it (commit a0fcd87); a
# training part since its first run
FRESH11 = ROOT / "eval" / "fresh11"
# the parts that are folders of their own, by the name scripts/eval.py gives them, oldest first
FRESH_PARTS = {
    "fresh": FRESH,
    "fresh2": FRESH2,
    "fresh3": FRESH3,
    "fresh4": FRESH4,
    "fresh5": FRESH5,
    "fresh6": FRESH6,
    "fresh7": FRESH7,
    "fresh8": FRESH8,
    "fresh9": FRESH9,
    "fresh10": FRESH10,
    "fresh11": FRESH11,
}
PARTS = ("dev", "test", *FRESH_PARTS)  # every part, in the order tables are printed
SEED = "deploykb-heldout-2026-12-01"
TEST_SHARE = 0.4


def read_jsonl(path: Path) -> list[tuple[int, dict]]:
    """``(line number, object)`` for every non-blank line; a bad line stops with ``path:line``."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}:{n}: invalid JSON ({exc.msg})") from None
    return out


def load_reports(folder: Path = HELDOUT) -> list[dict]:
    reports: list[dict] = []
    seen: set[str] = set()
    for path in sorted(folder.glob("reports-*.jsonl")):
        for n, r in read_jsonl(path):
            rid = r.get("id")
            if not rid or rid in seen:
                raise SystemExit(f"{path}:{n}: missing or duplicate report id {rid!r}")
            if r.get("kind") not in ("positive", "negative"):
                raise SystemExit(f"{path}:{n}: kind must be positive or negative")
            seen.add(rid)
            r["_file"] = f"{path.name}:{n}"
            reports.append(r)
    return reports


def _fraction(key: str) -> float:
    return int(hashlib.sha256((SEED + key).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def group_keys(reports: list[dict]) -> dict[str, str]:
    """Report id -> group key: findings linked by a shared report form one group (union-find)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r in reports:
        ids = r.get("expect") or []
        for other in ids[1:]:
            a, b = find(ids[0]), find(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    keys = {}
    for r in reports:
        ids = r.get("expect") or []
        keys[r["id"]] = ("finding:" + find(ids[0])) if ids else ("negative:" + r["id"])
    return keys


def split(reports: list[dict]) -> dict[str, str]:
    """Report id -> 'dev' or 'test'."""
    keys = group_keys(reports)
    parts: dict[str, str] = {}
    for kind in ("positive", "negative"):
        members: dict[str, list[str]] = {}
        for r in reports:
            if r["kind"] == kind:
                members.setdefault(keys[r["id"]], []).append(r["id"])
        total = sum(len(v) for v in members.values())
        taken = 0
        for key in sorted(members, key=lambda k: (_fraction(k), k)):
            part = "test" if taken < TEST_SHARE * total else "dev"
            if part == "test":
                taken += len(members[key])
            for rid in members[key]:
                parts[rid] = part
    return parts


def part(reports: list[dict], name: str) -> list[dict]:
    parts = split(reports)
    return [r for r in reports if parts[r["id"]] == name]
