"""Differential diagnosis: the user's failing deployment against the nearest one that works.

When the best matching case is unresolved, or its fix is already in the user's command, or the
user says it was tried, the useful question is no longer "what fixed this error last time" but
"what does a deployment that works on this hardware do differently". This package answers it,
in the order :func:`~agent.differential.diagnosis.differential` goes through it:

* :mod:`agent.differential.nearest` ranks the recorded working deployments by closeness to the
  user's context (same GPU generation first, then architecture traits, quantization, framework
  and version as one score, then the same model, the same GPU, a quoted command, ``works``);
* :mod:`agent.differential.comparison` diffs the user's command against a working command
  through the flag registry, in the user's release, and splits descriptive settings (model,
  layout, endpoint, parsers, logging, device selection) from behavioural ones;
* :mod:`agent.differential.tried` reads what was tried without effect (flags, and dead ends
  written as prose, read through the phrases of ``data/differential.json``);
* :mod:`agent.differential.evidence` gives each behavioural difference the knowledge base's
  evidence and adds the changes the evidence points at;
* :mod:`agent.differential.plan` orders them into experiments, ranked by that evidence and by
  architecture-trait couplings, minus what was already tried;
* :mod:`agent.differential.diagnosis` puts the answer's section together and says whether it
  leads; :mod:`~agent.differential.facts` and :mod:`~agent.differential.changes` hold the data
  and the comparison of two changes as settings that all of them read.

Pure functions over records. The facts (descriptive settings, checkpoint-format flags, nearness
weights, prose phrases, trait couplings) live in ``data/differential.json``; nothing here names
a model, a flag value or a story.
"""

from agent.differential.changes import same_change
from agent.differential.comparison import UNLISTED, command_diff
from agent.differential.diagnosis import differential, lead_reason
from agent.differential.facts import rules
from agent.differential.nearest import nearest_working, working_command
from agent.differential.plan import make_plan
from agent.differential.tried import parse_tried, read_tried

__all__ = [
    "UNLISTED",
    "command_diff",
    "differential",
    "lead_reason",
    "make_plan",
    "nearest_working",
    "parse_tried",
    "read_tried",
    "rules",
    "same_change",
    "working_command",
]
