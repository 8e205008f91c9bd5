"""How generic each finding is (kb.hubs): the values, what ingest keeps of them, what a query reads."""

from __future__ import annotations

import numpy as np
import pytest

from kb import hubs
from kb.ingest import ingest

QWEN = "qwen-moe-nvfp4-sm120-garbage"
LLAMA = "llama-fp8-h100-startup-oom"


def _unit(*rows):
    m = np.asarray(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_a_finding_close_to_many_others_has_the_higher_value(monkeypatch):
    monkeypatch.setattr(hubs, "K", 2)
    vectors = {
        "a": _unit([1, 0, 0], [1, 0.1, 0]),  # a document and a symptom vector
        "b": _unit([1, 0.05, 0]),
        "c": _unit([0.9, 0.1, 0]),
        "lone": _unit([0, 0, 1]),
    }
    values = hubs.hub_values(vectors, sorted(vectors), sorted(vectors))
    # by hand: for each other finding the best cosine between any two of their vectors, the
    # finding itself left out, the K best averaged
    for fid, own in vectors.items():
        best = sorted(
            (float((own @ other.T).max()) for o, other in vectors.items() if o != fid),
            reverse=True,
        )[:2]
        assert values[fid] == pytest.approx(sum(best) / 2, abs=1e-6)
    assert min(values["a"], values["b"], values["c"]) > values["lone"]


def test_ingest_keeps_one_current_value_per_finding(tmp_db, findings_dir, embedder_factory):
    ingest(tmp_db, [findings_dir], embedder_factory)
    rows = dict(tmp_db.execute("SELECT finding_id, hub FROM finding_hubs").fetchall())
    assert len(rows) == 4 and all(v is not None for v in rows.values())
    assert hubs.build(tmp_db, None) == 0  # nothing changed: nothing computed

    path = findings_dir / f"{QWEN}.md"
    path.write_text(path.read_text().replace("garbage", "garbled output"))
    (findings_dir / f"{LLAMA}.md").unlink()
    ingest(tmp_db, [findings_dir], embedder_factory)
    current = set(tmp_db.execute("SELECT id, content_hash FROM findings").fetchall())
    kept = set(tmp_db.execute("SELECT finding_id, content_hash FROM finding_hubs").fetchall())
    assert kept == current and LLAMA not in {fid for fid, _ in kept}


def test_with_the_shipped_findings_as_reference_a_new_team_finding_costs_one_value(
    tmp_db, findings_dir, embedder_factory, tmp_path
):
    team = tmp_path / "team"
    team.mkdir()
    text = (findings_dir / f"{QWEN}.md").read_text().replace(f"id: {QWEN}", "id: ours")
    (team / "ours.md").write_text(text)
    ingest(tmp_db, [findings_dir, team], embedder_factory)
    # the fixture folder plays the shipped knowledge base: another reference, all computed again
    assert hubs.build(tmp_db, findings_dir) == 5
    tmp_db.execute("DELETE FROM finding_hubs WHERE finding_id = 'ours'")
    assert hubs.build(tmp_db, findings_dir) == 1  # the same reference: only the new one
    values = dict(tmp_db.execute("SELECT finding_id, hub FROM finding_hubs").fetchall())
    # the team's copy of the Qwen case has that case among its references; the case itself
    # does not (a finding is never its own neighbour, and team findings are not references)
    assert values["ours"] == max(values.values()) and values["ours"] > values[QWEN]


def test_an_index_written_before_the_values_gets_them_on_the_next_ingest(
    tmp_db, findings_dir, embedder_factory
):
    ingest(tmp_db, [findings_dir], embedder_factory)
    tmp_db.execute("DROP TABLE finding_hubs")
    tmp_db.execute("DELETE FROM meta WHERE key LIKE 'hub_%'")
    tmp_db.conn.commit()
    assert not hubs.ready(tmp_db)
    assert hubs.standardised(tmp_db, [QWEN]) == {}  # a query reads nothing: the feature is 0
    ingest(tmp_db, [findings_dir], embedder_factory)
    assert hubs.ready(tmp_db)
    values = hubs.standardised(tmp_db, [QWEN, LLAMA, "no-such-finding"])
    assert set(values) == {QWEN, LLAMA} and all(-1 <= v <= 3 for v in values.values())


def test_every_candidate_carries_its_hub_value_and_report_rank(
    tmp_db, findings_dir, embedder_factory
):
    from agent.answer import build_context
    from agent.logs import triage
    from agent.rank import FEATURES
    from agent.search import Searcher

    ingest(tmp_db, [findings_dir], embedder_factory)
    searcher = Searcher(tmp_db, embedder_factory)
    text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    ctx = build_context(detect=False, warnings=[])
    cands, _ = searcher.candidates(text, triage(text.splitlines(keepends=True)), ctx)
    assert cands
    hub_at, rank_at = FEATURES.index("hub"), FEATURES.index("report_rank")
    expected = hubs.standardised(tmp_db, [c.fid for c in cands])
    for c in cands:
        assert len(c.features) == len(FEATURES)
        assert c.features[hub_at] == pytest.approx(expected.get(c.fid, 0.0))
    ranks = sorted((c.features[rank_at] for c in cands), reverse=True)
    assert ranks[0] == 1.0  # the best BM25 match among the candidates
    assert all(r == 0 or 1 / r == round(1 / r) for r in ranks)  # reciprocal ranks


def test_the_vectors_of_a_few_findings_are_the_same_read_alone(
    tmp_db, findings_dir, embedder_factory
):
    # an ingest adding a few findings to a large index reads only the vectors it needs
    ingest(tmp_db, [findings_dir], embedder_factory)
    every = hubs._vectors(tmp_db)
    some = hubs._vectors(tmp_db, {QWEN, LLAMA})
    assert set(some) == {QWEN, LLAMA}
    for fid in some:
        assert np.array_equal(some[fid], every[fid]) and len(some[fid]) >= 2  # doc + symptoms
