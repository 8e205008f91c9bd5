"""The held-out evaluation set is valid, large enough, split as documented, and kept apart from the
knowledge base: no report's thread is the source of a finding."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from scripts.heldout import (  # noqa: E402
    FRESH5,
    FRESH6,
    FRESH7,
    FRESH8,
    FRESH9,
    FRESH10,
    FRESH11,
    FRESH_PARTS,
    load_reports,
    split,
)

_THREAD = re.compile(r"github\.com/([\w.-]+)/([\w.-]+)/(?:issues|pull|discussions)/(\d+)", re.I)
_SHORT = re.compile(r"^([\w.-]+)/([\w.-]+)#(\d+)$")


def _thread(text: str) -> str | None:
    m = _THREAD.search(text) or _SHORT.match(text.strip())
    return f"{m.group(1).lower()}/{m.group(2).lower()}#{m.group(3)}" if m else None


def _finding_sources() -> dict[str, str]:
    from kb.parse import parse_file

    out = {}
    for path in sorted((ROOT / "findings").glob("*.md")):
        if path.name == "README.md":
            continue
        for f in parse_file(path).findings:
            for src in f.sources:
                key = _thread(src)
                if key:
                    out[key] = f.id
    return out


def test_reports_are_well_formed_and_expect_real_findings():
    reports = load_reports()
    shipped = {p.stem for p in (ROOT / "findings").glob("*.md")}
    for r in reports:
        assert r["text"].strip(), r["id"]
        assert r["url"].startswith("https://"), r["id"]
        if r["kind"] == "positive":
            assert r["expect"], r["id"]
            for fid in r["expect"]:
                assert fid in shipped, (r["id"], fid)
        else:
            assert r["expect"] == [], r["id"]
    urls = [_thread(r["url"]) or r["url"] for r in reports]
    dup = [u for u, n in Counter(urls).items() if n > 1]
    assert not dup, dup


def _every_report() -> list[dict]:
    """DEV, TEST and every part of FRESH_PARTS."""
    return [*load_reports(), *(r for p in FRESH_PARTS.values() for r in load_reports(p))]


def test_no_report_thread_is_a_finding_source():
    sources = _finding_sources()
    leaks = [
        (r["id"], sources[_thread(r["url"])])
        for r in _every_report()
        if _thread(r["url"]) in sources
    ]
    assert not leaks, leaks


# every part of scripts/heldout.py FRESH_PARTS, against DEV/TEST (None) and the parts before it
_FOLDERS = list(FRESH_PARTS.values())


@pytest.mark.parametrize(
    "folder, earlier",
    [(folder, [None, *_FOLDERS[:i]]) for i, folder in enumerate(_FOLDERS)],
    ids=list(FRESH_PARTS),
)
def test_a_fresh_part_is_well_formed_and_apart_from_the_earlier_parts(folder, earlier):
    fresh = load_reports(folder)
    shipped = {p.stem for p in (ROOT / "findings").glob("*.md")}
    # at least the sizes eval/fresh*/README.md state: FRESH5 to FRESH11 are smaller (the stored
    # threads that match a finding and no earlier part had run short: eval/fresh5/README.md)
    least = {
        FRESH5: (14, 17),
        FRESH6: (13, 20),
        FRESH7: (10, 18),
        FRESH8: (12, 12),
        FRESH9: (15, 16),
        FRESH10: (10, 9),
        FRESH11: (18, 34),
    }.get(folder, (20, 20))
    assert sum(r["kind"] == "positive" for r in fresh) >= least[0]
    assert sum(r["kind"] == "negative" for r in fresh) >= least[1]
    for r in fresh:
        assert r["text"].strip() and r["url"].startswith("https://"), r["id"]
        assert r.get("checked_by"), r["id"]  # every report went through a second reader
        assert r["checked_by"] != r["collected_by"], r["id"]
        assert all(fid in shipped for fid in r["expect"]), r["id"]
        assert bool(r["expect"]) == (r["kind"] == "positive"), r["id"]
    threads = {
        _thread(r["url"]) or r["url"]
        for part in earlier
        for r in (load_reports() if part is None else load_reports(part))
    }
    assert not [r["id"] for r in fresh if (_thread(r["url"]) or r["url"]) in threads]
    ids = {
        r["id"]
        for part in earlier
        for r in (load_reports() if part is None else load_reports(part))
    }
    assert not [r["id"] for r in fresh if r["id"] in ids]


def test_size_and_split_as_documented():
    reports = load_reports()
    pos = [r for r in reports if r["kind"] == "positive"]
    neg = [r for r in reports if r["kind"] == "negative"]
    assert len(pos) >= 80
    assert len({r["expect"][0] for r in pos}) >= 30
    assert len(neg) >= 30
    parts = split(reports)
    for group in (pos, neg):
        test = [r for r in group if parts[r["id"]] == "test"]
        assert len(test) >= 0.4 * len(group)
        assert len(test) < len(group)
    # a finding's reports never straddle the split
    by_finding: dict[str, set[str]] = {}
    for r in pos:
        for fid in r["expect"]:
            by_finding.setdefault(fid, set()).add(parts[r["id"]])
    assert all(len(p) == 1 for p in by_finding.values()), by_finding


def test_the_split_is_fixed_by_the_seed():
    reports = load_reports()
    assert split(reports) == split(list(reversed(reports)))


def _claims() -> dict[str, set[str]]:
    import csv

    claims: dict[str, set[str]] = {}
    with open(ROOT / "eval" / "heldout" / "claims.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            claims.setdefault(_thread(row["url"]) or row["url"], set()).add(row["role"])
    return claims


def test_every_thread_used_is_claimed_once_for_its_role():
    """claims.tsv is the register the split rests on: every thread a finding cites and every
    report's thread is in it, each with exactly one role."""
    claims = _claims()
    assert not {k: v for k, v in claims.items() if len(v) > 1}
    unclaimed = sorted(k for k in _finding_sources() if claims.get(k) != {"finding"})
    assert not unclaimed, unclaimed
    wrong = [
        r["id"]
        for r in _every_report()
        if claims.get(_thread(r["url"]) or r["url"]) != {f"eval-{r['kind']}"}
    ]
    assert not wrong, wrong
