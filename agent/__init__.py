"""deploykb's query agent: log triage, model/GPU context, matching policy, flag diffs and the CLI."""
