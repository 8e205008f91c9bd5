"""The track record `ask` shows beside its top answer: how often, out-of-fold on the real reports the
ranking was fitted on, a top answer of that probability was the right case."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _raw(**extra) -> dict:
    from agent.rank import FEATURES

    raw = json.loads((ROOT / "data" / "ranking.json").read_text())
    raw = {k: v for k, v in raw.items() if k != "track_record"}
    raw["weights"] = {name: 0.0 for name in FEATURES}
    return {**raw, **extra}


def test_the_shipped_model_carries_a_record_over_every_training_report():
    from agent.rank import load_ranker
    from scripts.eval import heldout_queries
    from scripts.fit_ranking import TRAIN_PARTS

    record = load_ranker().track_record
    assert record, "data/ranking.json has no track_record"
    # the bands tile [0, 1] without a gap
    assert record[0][0] == 0.0 and record[-1][1] == 1.0
    assert all(a[1] == b[0] for a, b in zip(record, record[1:], strict=False))
    training = [q for q in heldout_queries() if q["part"] in TRAIN_PARTS]
    assert sum(n for *_, n in record) == len(training)
    positives = sum(1 for q in training if q["kind"] == "positive")
    assert sum(r for _, _, r, _ in record) <= positives


def test_a_probability_finds_its_band_and_the_edges_go_up():
    from agent.rank import ranker_from_dict

    bands = [
        {"from": 0.0, "to": 0.5, "reports": 10, "right": 2},
        {"from": 0.5, "to": 1.0, "reports": 4, "right": 3},
    ]
    ranker = ranker_from_dict(_raw(track_record={"bands": bands}))
    low = ranker.record_at(0.2)
    assert (low.low, low.high, low.right, low.reports) == (0.0, 0.5, 2, 10)
    assert ranker.record_at(0.5).right == 3  # an edge belongs to the band above it
    assert ranker.record_at(1.0).reports == 4  # 1.0 itself is in the last band


def test_a_model_without_a_record_shows_none():
    from agent.rank import ranker_from_dict

    assert ranker_from_dict(_raw()).record_at(0.7) is None


@pytest.mark.parametrize(
    "band",
    [
        {"from": 0.0, "to": 1.0, "reports": 3, "right": 4},  # more right than reports
        {"from": 0.5, "to": 0.5, "reports": 3, "right": 1},  # no width
        {"from": 0.0, "to": 1.0, "reports": "many", "right": 1},
    ],
)
def test_a_broken_record_is_refused_naming_the_file(band):
    from agent.rank import ranker_from_dict
    from kb.errors import DeployKBError

    with pytest.raises(DeployKBError, match="ranking.json"):
        ranker_from_dict(_raw(track_record={"bands": [band]}))


def _entry(i: int, positive: bool, right_first: bool) -> dict:
    # two candidates; feature 0 ranks them, feature 1 is noise
    good, bad = [1.0, 0.1 * (i % 3)], [0.0, 0.1 * ((i + 1) % 3)]
    cands = [
        {"fid": f"a{i}", "x": good if right_first else bad, "y": int(positive)},
        {"fid": f"b{i}", "x": bad if right_first else good, "y": 0},
    ]
    return {"id": f"q{i}", "group": f"g{i}", "positive": positive, "cands": cands}


def test_the_fitted_record_counts_each_training_report_once():
    from scripts.fit_ranking import track_record

    entries = [_entry(i, positive=i % 4 != 0, right_first=i % 5 != 0) for i in range(40)]
    bands = track_record(entries, 1.0, 1.0)
    assert sum(b["reports"] for b in bands) == len(entries)
    positives = sum(e["positive"] for e in entries)
    assert 0 < sum(b["right"] for b in bands) <= positives
    assert all(0 <= b["right"] <= b["reports"] for b in bands)


def test_the_evaluation_compares_the_record_with_a_part():
    from agent.rank import load_ranker
    from scripts.eval import track_table

    (low, high, right, reports), *_ = load_ranker().track_record
    rows = [
        {"band": [low, high], "hit1": True},
        {"band": [low, high], "hit1": False},
        {"band": None, "hit1": False},  # a baseline row or an empty answer: no band
    ]
    first = track_table(rows)[0]
    assert first == {
        "band": [low, high],
        "stated_right": right,
        "stated_reports": reports,
        "right": 1,
        "reports": 2,
    }


def _two_candidates(i: int, positive: bool, right_x: float, other_x: float, line: float) -> dict:
    """A report with two candidates on one feature; for a positive the first is the answer."""
    return {
        "id": f"r{i}",
        "group": f"g{i}" if positive else f"neg:r{i}",
        "positive": positive,
        "cands": [
            {"fid": "a", "x": [right_x], "y": int(positive), "line": line, "info": 1.0},
            {"fid": "b", "x": [other_x], "y": 0, "line": 0.0, "info": 0.0},
        ],
    }


def test_the_confidence_bound_counts_right_answers_no_negative_matches():
    from scripts.fit_ranking import confidence_bound

    # positives whose answer stands far out, and negatives whose top candidate stands out less
    right = [_two_candidates(i, True, 3.0 + 0.1 * i, 0.0, 0.9) for i in range(10)]
    weak = [_two_candidates(100 + i, False, 0.5, 0.4, 0.1) for i in range(10)]
    bound = confidence_bound(right + weak, 1.0, 1.0)
    assert bound["negatives"] == 10
    assert bound["separable"] == bound["right_answers"] > 0
    # one negative that looks like the strongest answer on every count leaves nothing separable
    strong = _two_candidates(200, False, 9.0, 0.0, 1.0)
    bound = confidence_bound(right + weak + [strong], 1.0, 1.0)
    assert bound["separable"] == 0 and bound["share"] == 0.0
