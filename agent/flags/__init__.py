"""Launch commands and flag diffs: read what the user runs, say what a finding changes, apply it.

Pure functions over text and records, in the order a command goes through them:

* :mod:`agent.flags.launch` reads a launch command once into a canonical ``LaunchConfig`` (its
  shell and Python forms in :mod:`~agent.flags.scan` and :mod:`~agent.flags.pycall`, words in
  :mod:`~agent.flags.tokens`, positions in :mod:`~agent.flags.layout`);
* :mod:`agent.flags.fixitems` reads a finding's fix items into ``FlagChange`` records;
* :mod:`agent.flags.diff` says what a fix changes in a command, across frameworks and releases;
* :mod:`agent.flags.apply` writes the corrected command in the user's own layout;
* :mod:`agent.flags.spelling` types a setting as a flag, a keyword argument or a config key.

The flag registry (:mod:`agent.registry`) is the one source of names: every flag is compared in
its canonical spelling, so a finding's ``--fp4-gemm-runner-backend flashinfer_cudnn`` matches a
user's ``--fp4-gemm-backend=...``.
"""

from agent.flags.apply import apply_changes
from agent.flags.diff import diff, diff_changes, diff_with_notes
from agent.flags.fixitems import parse_fix_item
from agent.flags.launch import docker_image, flags_in, parse_command
from agent.flags.spelling import render_flag

__all__ = [
    "apply_changes",
    "diff",
    "diff_changes",
    "diff_with_notes",
    "docker_image",
    "flags_in",
    "parse_command",
    "parse_fix_item",
    "render_flag",
]
