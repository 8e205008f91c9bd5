"""Coverage: findings per failure family, GPU generation and framework (`deploykb list --families`)."""

from __future__ import annotations

from agent.coverage import coverage, families_of
from kb.records import Finding, Framework, Hardware, Symptom


def _f(fid, **kw) -> Finding:
    return Finding(id=fid, title=fid, status=kw.pop("status", "broken"), **kw)


def test_families_from_components_symptoms_and_hardware():
    oom = _f("a", symptoms=(Symptom("oom", "CUDA out of memory"),), components=("cuda-graph",))
    assert families_of(oom) == {"oom", "cuda-graph"}
    amd = _f("b", hardware=Hardware(gpu="AMD Instinct MI300X", sm="gfx942"), components=("rocm",))
    assert families_of(amd) == {"rocm"}
    two_nodes = _f("c", hardware=Hardware(count=16), components=("deepep",))
    assert families_of(two_nodes) == {"moe-ep", "multi-node"}


def test_counts_generations_frameworks_and_working_deployments():
    findings = [
        _f(
            "a",
            hardware=Hardware(sm="sm120"),
            framework=Framework("sglang"),
            components=("deepgemm",),
        ),
        _f(
            "b",
            hardware=Hardware(gpu="H100"),
            framework=Framework("vLLM 0.11"),
            components=("deepgemm",),
        ),
        _f("c", status="works", working_command="vllm serve x", framework=Framework("vllm")),
    ]
    cov = coverage(findings)
    fam = {f: n for f, _, n in cov.families}
    assert fam["deepgemm"] == 2 and fam["nccl-p2p"] == 0
    assert dict(cov.generations) == {"blackwell sm120": 1, "hopper": 1, "unknown": 1}
    assert dict(cov.frameworks) == {"vllm": 2, "sglang": 1}
    assert cov.working_deployments == 1 and cov.total == 3
    assert "deepgemm" not in cov.gaps(minimum=2) and "nccl-p2p" in cov.gaps(minimum=2)


def test_the_shipped_knowledge_base_covers_every_family_with_five():
    from pathlib import Path

    from kb.parse import parse_file

    root = Path(__file__).resolve().parent.parent / "findings"
    findings = [
        f
        for p in sorted(root.glob("*.md"))
        if p.name != "README.md"
        for f in parse_file(p).findings
    ]
    cov = coverage(findings)
    assert cov.total >= 150
    assert cov.gaps(minimum=5) == ()
    assert cov.working_deployments >= 30


def test_a_gpu_named_only_by_its_generation_is_counted_there():
    findings = [
        _f("a", hardware=Hardware(gpu="NVIDIA Ampere")),
        _f("b", hardware=Hardware(gpu="Blackwell")),
        _f("c", hardware=Hardware(gpu="AMD (ROCm 7.0)")),
        _f("d", hardware=Hardware(gpu="AMD Instinct (CDNA3)")),
        _f("e", hardware=Hardware(gpu="Tesla P40")),
        _f("f", hardware=Hardware(gpu="some accelerator")),
    ]
    assert dict(coverage(findings).generations) == {
        "ampere": 1,
        "blackwell (sm not stated)": 1,
        "amd (model not stated)": 1,
        "instinct": 1,
        "pascal": 1,
        "unknown": 1,
    }
