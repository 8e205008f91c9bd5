"""Facts a query needs from outside: a model's config.json and a running server's arguments.

Both functions take the ``httpx.Client`` to use (tests pass one over ``httpx.MockTransport``); when
none is given they make a short-lived one. Every failure becomes a one-line ``ConfigFetchError``
that says what to do instead. The Hugging Face token is sent as a header and never printed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.errors import ConfigFetchError, HubOfflineError, ModelNotFoundError

if TYPE_CHECKING:  # httpx is imported where a request is made, not at CLI start-up
    import httpx

    from kb.records import ArchTraits

__all__ = [
    "DEFAULT_HF_ENDPOINT",
    "is_hub_id",
    "model_context",
    "model_reference",
    "SERVER_INFO_PATHS",
    "default_cache_dir",
    "ServerInfo",
    "fetch_server",
    "fetch_server_args",
    "load_model_config",
    "server_args_to_command",
]

DEFAULT_HF_ENDPOINT = "https://huggingface.co"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")
FALLBACK = "pass a local model directory or --arch"  # what to do when config.json is unreadable


def default_cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """``$XDG_CACHE_HOME/deploykb/hf`` (``~/.cache/deploykb/hf``)."""
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "deploykb" / "hf"


def _read_json_file(path: Path) -> dict[str, Any]:
    from kb.dataload import read_json

    data = read_json(path, error=ConfigFetchError)
    if not isinstance(data, dict):
        raise ConfigFetchError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def is_hub_id(model: str) -> bool:
    """``org/name`` as the Hugging Face Hub spells a model id (the one test of it)."""
    return bool(_HUB_ID.match(model))


def model_reference(model: str) -> str:
    """What ``--model`` names: ``"local"`` (a folder or file here), ``"missing"`` (a path that
    does not exist here), ``"hub"`` (a Hugging Face id) or ``"name"`` (a bare name, nothing to
    look up)."""
    if Path(model).expanduser().exists():
        return "local"
    if model.startswith(("/", "./", "../", "~")):
        return "missing"
    return "hub" if is_hub_id(model) else "name"


_HF_CACHE_FOLDER = re.compile(r"(?:^|/)models--([\w.\-]+)--([\w.\-]+)(?:/|$)")


def hub_id_of_folder(path: str, config: Mapping[str, Any] | None) -> str | None:
    """The Hugging Face id of a model folder on this machine, when something says it: its
    ``config.json``'s ``_name_or_path`` (when that is an id, not another path), or the Hub cache's
    folder name (``.../models--nvidia--GLM-5-NVFP4/snapshots/<rev>``). None otherwise: the
    folder's own name is a name someone chose, not the model's id."""
    named = (config or {}).get("_name_or_path")
    if isinstance(named, str) and is_hub_id(named.strip()):
        return named.strip()
    m = _HF_CACHE_FOLDER.search(str(path).replace("\\", "/"))
    return f"{m.group(1)}/{m.group(2)}" if m else None


def model_context(
    model: str, *, client: httpx.Client | None = None, must_exist: bool = True
) -> ArchTraits | None:
    """The architecture traits in ``model``'s config.json (:func:`load_model_config`), for
    ``ask`` and ``add`` alike. None for a bare name, and for a path that does not exist here
    unless ``must_exist`` (a path in a launch command names a folder on the serving host).
    Raises ``ModelNotFoundError`` when the Hub has no such model and ``ConfigFetchError`` when
    the config cannot be read; what that means for the answer is the caller's to say."""
    from agent.context import traits_from_config

    kind = model_reference(model)
    if kind == "name" or (kind == "missing" and not must_exist):
        return None
    return traits_from_config(load_model_config(model, client=client))


def _looks_like_path(model: str) -> bool:
    return (
        model.startswith((".", "/", "~"))
        or model.endswith(".json")
        or "\\" in model
        or model.count("/") > 1
    )


def _cache_file(cache_dir: Path, endpoint: str, model_id: str) -> Path:
    digest = hashlib.sha256(f"{endpoint}\n{model_id}".encode()).hexdigest()[:12]
    safe = re.sub(r"[^\w.\-]+", "--", model_id)
    return cache_dir / f"{safe}--{digest}.json"


def _read_cache(path: Path) -> dict[str, Any] | None:
    """A cached config, or None when absent or unreadable (then it is fetched and rewritten)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_cache(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise ConfigFetchError(
            f"{path.parent}: cannot write the config cache ({exc.strerror}); "
            "set XDG_CACHE_HOME to a writable folder"
        ) from exc


def load_model_config(
    model: str,
    *,
    client: httpx.Client | None = None,
    cache_dir: Path | None = None,
    timeout: float = 3.0,
    env: Mapping[str, str] = os.environ,
) -> dict[str, Any]:
    """A model's ``config.json`` as a dict.

    ``model`` is a local directory holding ``config.json``, a path to a ``.json`` file, or a
    Hugging Face id ``org/name``. Hub configs come from
    ``{HF_ENDPOINT}/{id}/resolve/main/config.json`` (``HF_TOKEN`` sent as a bearer token) and
    are cached under ``cache_dir`` (default ``$XDG_CACHE_HOME/deploykb/hf``), keyed by endpoint
    and id; a cached config is served without a request, so repeated and offline queries work.
    ``HF_HUB_OFFLINE=1`` forbids the request.
    """
    model = str(model).strip()
    local = Path(model).expanduser()
    if local.is_dir():
        config = local / "config.json"
        if not config.is_file():
            raise ConfigFetchError(f"{local}: no config.json in this directory; {FALLBACK}")
        return _read_json_file(config)
    if local.is_file():
        return _read_json_file(local)
    if _looks_like_path(model):
        raise ConfigFetchError(f"{model}: no such file or directory; {FALLBACK}")
    if not is_hub_id(model):
        raise ConfigFetchError(
            f"model '{model}': not a local directory or a Hugging Face id like 'org/name'; "
            f"{FALLBACK}"
        )

    endpoint = (env.get("HF_ENDPOINT") or DEFAULT_HF_ENDPOINT).rstrip("/")
    cache_path = _cache_file(cache_dir or default_cache_dir(env), endpoint, model)
    cached = _read_cache(cache_path)
    if cached is not None:
        return cached
    if (env.get("HF_HUB_OFFLINE") or "").strip().lower() in ("1", "true", "yes", "on"):
        raise HubOfflineError(
            f"HF_HUB_OFFLINE is set and config.json for '{model}' is not cached; {FALLBACK}"
        )

    data = _fetch_hub_config(model, endpoint, client=client, timeout=timeout, env=env)
    _write_cache(cache_path, data)
    return data


def _fetch_hub_config(
    model: str,
    endpoint: str,
    *,
    client: httpx.Client | None,
    timeout: float,
    env: Mapping[str, str],
) -> dict[str, Any]:
    import httpx

    url = f"{endpoint}/{model}/resolve/main/config.json"
    token = (env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or "").strip()
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    own = client is None
    http = client if client is not None else httpx.Client()
    try:
        response = http.get(url, headers=headers, timeout=timeout, follow_redirects=True)
    except httpx.TimeoutException as exc:
        raise ConfigFetchError(
            f"timed out after {timeout} s fetching config.json for '{model}' from {endpoint}; "
            f"{FALLBACK}"
        ) from exc
    except httpx.TransportError as exc:
        raise ConfigFetchError(
            f"cannot reach {endpoint} to fetch config.json for '{model}' "
            f"({type(exc).__name__}); {FALLBACK}"
        ) from exc
    finally:
        if own:
            http.close()

    status = response.status_code
    error_code = response.headers.get("x-error-code", "")
    if status == 404 or error_code in ("RepoNotFound", "EntryNotFound", "RevisionNotFound"):
        what = "has no config.json" if error_code == "EntryNotFound" else "not found"
        raise ModelNotFoundError(
            f"model '{model}' {what} on {endpoint} (HTTP {status}); check the id, or pass --arch"
        )
    if status in (401, 403):
        if error_code == "GatedRepo" or status == 403:
            hint = "accept its terms on the model page and set HF_TOKEN to a token with access"
            if token:
                hint = "the HF_TOKEN given has no access; accept the model's terms on its page"
            raise ConfigFetchError(
                f"model '{model}' on {endpoint} is gated (HTTP {status}); {hint}, or {FALLBACK}"
            )
        hint = (
            "HF_TOKEN was rejected; check it"
            if token
            else "it is private, gated or misspelt; set HF_TOKEN if you have access"
        )
        raise ConfigFetchError(
            f"model '{model}' on {endpoint} needs a token (HTTP {status}): {hint}"
        )
    if status != 200:
        raise ConfigFetchError(
            f"fetching config.json for '{model}' from {endpoint} failed (HTTP {status}); {FALLBACK}"
        )
    try:
        data = response.json()
    except ValueError as exc:
        raise ConfigFetchError(
            f"config.json for '{model}' from {endpoint} is not valid JSON; {FALLBACK}"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigFetchError(
            f"config.json for '{model}' from {endpoint} is not a JSON object; {FALLBACK}"
        )
    return data


# --------------------------------------------------------------------------------------------
# A running SGLang server
# --------------------------------------------------------------------------------------------

# Newer SGLang serves /server_info and keeps /get_server_info as a deprecated alias; older
# releases have only /get_server_info (python/sglang/srt/entrypoints/http_server.py).
SERVER_INFO_PATHS = ("/server_info", "/get_server_info")


def _base_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if not re.match(r"^https?://", url):
        url = f"http://{url}"
    for path in SERVER_INFO_PATHS:
        if url.endswith(path):
            url = url[: -len(path)]
    return url


# vLLM's OpenAI-compatible server answers GET /version with {"version": "<vllm.__version__>"} and
# GET /v1/models with the served models, each with its "root" (the model path it was started
# with); it does not report its launch arguments (vllm/entrypoints/openai/api_server.py).
VLLM_VERSION_PATH = "/version"
VLLM_MODELS_PATH = "/v1/models"


@dataclasses.dataclass(frozen=True)
class ServerInfo:
    """What a running server reports about itself."""

    framework: str  # "sglang" or "vllm"
    version: str | None  # the version the server reports, as written ("0.5.9", "0.11.0")
    model: str | None  # the model path it serves
    # SGLang's ServerArgs fields; {} for vLLM
    args: dict[str, Any] = dataclasses.field(default_factory=dict)


def _get(http, target: str, base: str, headers: dict[str, str], timeout: float):
    import httpx

    try:
        return http.get(target, headers=headers, timeout=timeout, follow_redirects=True)
    except httpx.TimeoutException as exc:
        raise ConfigFetchError(
            f"timed out after {timeout} s asking {target} for the server arguments; "
            "is the server busy or still starting?"
        ) from exc
    except httpx.TransportError as exc:
        raise ConfigFetchError(
            f"cannot reach {base} ({type(exc).__name__}); is the SGLang server running "
            "and is the URL right?"
        ) from exc


def _check_answer(response) -> Any:
    if response.status_code == 401:
        raise ConfigFetchError(
            f"{response.request.url}: HTTP 401; the server was started with --api-key, "
            "pass the same key"
        )
    if response.status_code != 200:
        raise ConfigFetchError(
            f"{response.request.url}: HTTP {response.status_code}; expected an SGLang server "
            f"answering {' or '.join(SERVER_INFO_PATHS)} (or vLLM answering {VLLM_VERSION_PATH})"
        )
    try:
        return response.json()
    except ValueError as exc:
        raise ConfigFetchError(f"{response.request.url}: the answer is not JSON") from exc


def _version_text(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def fetch_server(
    url: str,
    *,
    client: httpx.Client | None = None,
    timeout: float = 3.0,
    api_key: str | None = None,
) -> ServerInfo:
    """Ask a running server what it is: SGLang's server-info endpoint (``/server_info``, then the
    older ``/get_server_info``) gives its arguments and ``version``; when neither exists, vLLM's
    ``/version`` gives the version and ``/v1/models`` the model. ``api_key`` is for servers
    started with ``--api-key``."""
    import httpx

    base = _base_url(url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    own = client is None
    http = client if client is not None else httpx.Client()
    try:
        response = None
        for path in SERVER_INFO_PATHS:
            response = _get(http, f"{base}{path}", base, headers, timeout)
            if response.status_code != 404:
                break
        assert response is not None
        if response.status_code == 404:
            version_response = _get(http, f"{base}{VLLM_VERSION_PATH}", base, headers, timeout)
            if version_response.status_code != 404:
                return _vllm_info(http, base, headers, timeout, version_response)
        data = _check_answer(response)
    finally:
        if own:
            http.close()
    if not isinstance(data, dict) or "model_path" not in data:
        raise ConfigFetchError(
            f"{response.request.url}: the answer has no 'model_path'; is this an SGLang server?"
        )
    data = dict(data)
    data.pop("internal_states", None)
    return ServerInfo(
        framework="sglang",
        version=_version_text(data.get("version")),
        model=str(data["model_path"]) if data.get("model_path") else None,
        args=data,
    )


def _vllm_info(http, base: str, headers, timeout: float, version_response) -> ServerInfo:
    data = _check_answer(version_response)
    version = _version_text(data.get("version")) if isinstance(data, dict) else None
    if version is None:
        raise ConfigFetchError(
            f"{version_response.request.url}: the answer has no 'version'; is this a vLLM server?"
        )
    model = None
    models = _get(http, f"{base}{VLLM_MODELS_PATH}", base, headers, timeout)
    if models.status_code == 200:
        try:
            listed = models.json().get("data") or []
        except (ValueError, AttributeError):
            listed = []
        first = listed[0] if listed and isinstance(listed[0], dict) else {}
        model = first.get("root") or first.get("id") or None
    return ServerInfo(framework="vllm", version=version, model=model)


def fetch_server_args(
    url: str,
    *,
    client: httpx.Client | None = None,
    timeout: float = 3.0,
    api_key: str | None = None,
) -> dict[str, Any]:
    """The arguments of a running SGLang server (``--server-url``), from its server-info endpoint.

    SGLang answers with its ``ServerArgs`` fields flattened together with scheduler facts and
    ``version``; the per-DP ``internal_states`` list is dropped. ``/server_info`` is tried first,
    then the older ``/get_server_info``. ``api_key`` is for servers started with ``--api-key``.
    """
    info = fetch_server(url, client=client, timeout=timeout, api_key=api_key)
    if info.framework != "sglang":
        raise ConfigFetchError(
            f"{_base_url(url)} is a {info.framework} server, which does not report its arguments"
        )
    return info.args


# ServerArgs field -> launch flag, in the order the command is written. Only fields that decide
# which kernels run (or how memory is split) are listed: the point of the command is to be
# compared with a finding's, not to reproduce host/port/logging. A field is written when its value
# is set and differs from the "unset" value given here (None/False are always unset).
_FLAG_OVERRIDES = {
    "fp8_gemm_runner_backend": "--fp8-gemm-backend",
    "fp4_gemm_runner_backend": "--fp4-gemm-backend",
}
_COMMAND_FIELDS: tuple[tuple[str, object], ...] = (
    ("tp_size", 1),
    ("pp_size", 1),
    ("dp_size", 1),
    ("ep_size", 1),
    ("enable_dp_attention", False),
    ("trust_remote_code", False),
    ("dtype", "auto"),
    ("quantization", None),
    ("kv_cache_dtype", "auto"),
    ("context_length", None),
    ("attention_backend", None),
    ("prefill_attention_backend", None),
    ("decode_attention_backend", None),
    ("nsa_prefill_backend", None),
    ("nsa_decode_backend", None),
    ("dsa_prefill_backend", None),
    ("dsa_decode_backend", None),
    ("moe_runner_backend", "auto"),
    ("moe_a2a_backend", "none"),
    ("fp8_gemm_runner_backend", "auto"),
    ("fp4_gemm_runner_backend", "auto"),
    ("fp4_gemm_backend", "auto"),
    ("sampling_backend", None),
    ("mem_fraction_static", None),
    ("chunked_prefill_size", None),
    ("max_running_requests", None),
    ("cuda_graph_max_bs", None),
    ("disable_cuda_graph", False),
    ("disable_radix_cache", False),
    ("disable_overlap_schedule", False),
    ("enable_torch_compile", False),
    ("disable_custom_all_reduce", False),
    ("speculative_algorithm", None),
    ("speculative_draft_model_path", None),
    ("speculative_num_steps", None),
    ("speculative_eagle_topk", None),
    ("speculative_num_draft_tokens", None),
)


def _flag(field: str) -> str:
    return _FLAG_OVERRIDES.get(field, "--" + field.replace("_", "-"))


def server_args_to_command(info: Mapping[str, Any]) -> str:
    """An equivalent ``python -m sglang.launch_server ...`` line for a server's arguments.

    Written from a fixed list of fields that matter for matching (parallelism, quantization,
    attention/MoE/GEMM backends, memory, CUDA graphs, speculative decoding); each is included
    when set to something other than its unset value, booleans as bare switches when true.
    ``speculative_*`` details are kept only when ``speculative_algorithm`` is set.
    """
    model = info.get("model_path")
    if not model:
        raise ConfigFetchError("server arguments have no 'model_path'; is this an SGLang server?")
    parts = ["python", "-m", "sglang.launch_server", "--model-path", shlex.quote(str(model))]
    speculative = bool(info.get("speculative_algorithm"))
    for field, unset in _COMMAND_FIELDS:
        value = info.get(field)
        if value is None or value is False or value == unset or value == "":
            continue
        if field.startswith("speculative_") and not speculative:
            continue
        if isinstance(value, (dict, list)):
            continue
        if value is True:
            parts.append(_flag(field))
        else:
            parts += [_flag(field), shlex.quote(str(value))]
    return " ".join(parts)
