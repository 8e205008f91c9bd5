"""Measure the redactor on the labelled corpus in eval/redaction/.

    python scripts/redaction_eval.py            # recall on secrets.jsonl, clean lines changed
    python scripts/redaction_eval.py --size 400 # and the time on a generated log of ~400 KB

secrets.jsonl: one realistic line per case, with every substring that must not survive.
clean.txt: lines that must come out unchanged (versions, model ids, flags, SM/CUDA numbers, ...).
Every value in the corpus is made up; none is a real credential or machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "eval" / "redaction"


def load() -> tuple[list[dict], list[str]]:
    secrets = [json.loads(x) for x in (CORPUS / "secrets.jsonl").read_text().splitlines() if x]
    clean = [x for x in (CORPUS / "clean.txt").read_text().splitlines() if x.strip()]
    return secrets, clean


def evaluate() -> dict:
    from kb.redact import redact

    secrets, clean = load()
    total = caught = 0
    missed: list[str] = []
    for case in secrets:
        out, _ = redact(case["line"])
        for secret in case["secrets"]:
            total += 1
            if secret in out:
                missed.append(f"{case['kind']}: {secret!r} survives in {out!r}")
            else:
                caught += 1
    changed = []
    for line in clean:
        out, found = redact(line)
        if out != line or found:
            changed.append(f"{line!r} -> {out!r}")
    return {
        "cases": len(secrets),
        "secrets": total,
        "caught": caught,
        "recall": caught / total if total else 1.0,
        "clean": len(clean),
        "clean_changed": len(changed),
        "missed": missed,
        "changed": changed,
    }


def timing(kb: int) -> tuple[int, float]:
    """Seconds to redact a generated log of about ``kb`` KB: the corpus lines, repeated."""
    from kb.redact import redact

    secrets, clean = load()
    block = "\n".join([c["line"] for c in secrets] + clean) + "\n"
    text = block * max(1, kb * 1000 // len(block))
    start = time.perf_counter()
    redact(text)
    return len(text), time.perf_counter() - start


def main() -> int:
    sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=0, help="also time a log of SIZE KB")
    args = parser.parse_args()
    r = evaluate()
    for line in r["missed"]:
        print(f"missed   {line}")
    for line in r["changed"]:
        print(f"changed  {line}")
    print(
        f"secrets: {r['caught']}/{r['secrets']} caught in {r['cases']} lines "
        f"(recall {r['recall']:.1%}); clean lines changed: {r['clean_changed']}/{r['clean']}"
    )
    if args.size:
        size, seconds = timing(args.size)
        print(f"time: {size / 1000:.0f} KB in {seconds:.2f} s ({size / 1e6 / seconds:.2f} MB/s)")
    return 0 if not r["missed"] and not r["changed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
