"""Launch commands in, canonical records out: the one reading of a command.

Forms understood by :func:`parse_command`:

* ``python[3] -m sglang.launch_server ...``, ``sglang serve ...``, ``vllm serve MODEL ...``,
  ``python -m vllm.entrypoints.openai.api_server ...``, ``trtllm-serve [serve] MODEL ...``,
  ``lm_eval --model vllm --model_args k=v,...`` (:mod:`agent.flags.scan`);
* Python calls ``sgl.Engine(...)``, ``LLM(...)``, ``EngineArgs(...)`` (keyword arguments,
  :mod:`agent.flags.pycall`);
* a bare list of flags (``--tp 8 --quantization fp8``), one line or many;
* around them: ``NAME=value`` prefixes, ``env``, ``export X=1 &&``, systemd ``ExecStart=`` and
  ``Environment=`` lines, ``docker run -e X=1 ... image:tag CMD``, line continuations, comments.

Every flag is named through the registry once, when the command is read: what comes after (the
diff, applying changes, rendering) works on the canonical records and the layout they carry.
"""

from __future__ import annotations

from agent.flags.pycall import PY_CALL, scan_python
from agent.flags.scan import scan_shell
from agent.registry import Registry, load_registry
from kb.errors import CommandParseError
from kb.records import Flag, LaunchConfig


def parse_command(
    text: str,
    framework: str | None = None,
    *,
    source: str = "--cmd",
    registry: Registry | None = None,
) -> LaunchConfig:
    """Parse a launch command (or a bare list of flags) into a :class:`LaunchConfig`.

    ``framework`` is a hint used when the text names no program (a bare flag list); a recognised
    program always decides. ``flags`` hold canonical names (see :meth:`Registry.canonical`) and
    exclude the flag that names the model, which goes to ``model``. A switch reads ``value=None``
    when on and ``"false"`` when turned off (``--no-x``, ``--x false``, ``x=False``).
    ``source`` prefixes error messages: ``--cmd: unbalanced quote in "..."``.
    """
    reg = registry or load_registry()
    if not text or not text.strip():
        raise CommandParseError(f"{source}: empty launch command")
    m = PY_CALL.search(text)
    if m and "=" in text[m.end() :]:
        return scan_python(text, m, framework, reg, source)
    return scan_shell(text, framework, reg, source)


def docker_image(text: str, *, registry: Registry | None = None) -> str | None:
    """The image of a ``docker run ... image:tag CMD`` launch command, else None."""
    return parse_command(text, registry=registry).image


def flags_in(config: LaunchConfig, framework: str | None, registry: Registry) -> dict[str, Flag]:
    """The command's flags by canonical name (the last of a name wins), as ``framework`` names
    them. They were named when the command was parsed; only a command read without a known
    framework (a bare flag list no registry claims) or for another framework than ``framework``
    has its names resolved again here, in ``framework``: its own was not known when it was read."""
    if framework == config.framework:
        return {f.name: f for f in config.flags}
    return {registry.canonical(f.name, framework): f for f in config.flags}
