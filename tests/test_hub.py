"""config.json from a local path or the Hub (MockTransport), and a running server's arguments
(a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from agent.hub import (
    default_cache_dir,
    fetch_server_args,
    load_model_config,
    server_args_to_command,
)
from kb.errors import ConfigFetchError

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
GLM5 = json.loads((CONFIGS / "glm-5.json").read_text())


class Hub:
    """A fake Hub: records requests, answers with ``respond``."""

    def __init__(self, respond):
        self.respond = respond
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.respond(request)

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))


def ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json=GLM5)


# --- local files ------------------------------------------------------------------------------


def test_local_directory_and_file(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(GLM5))
    assert load_model_config(str(tmp_path), env={}) == GLM5
    assert load_model_config(str(tmp_path / "config.json"), env={}) == GLM5


def test_local_directory_without_config(tmp_path):
    with pytest.raises(ConfigFetchError) as err:
        load_model_config(str(tmp_path), env={})
    assert str(err.value) == (
        f"{tmp_path}: no config.json in this directory; pass a local model directory or --arch"
    )


def test_local_bad_json_names_file_and_line(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{\n  "model_type": "llama",\n  "hidden_size": ,\n}\n')
    with pytest.raises(ConfigFetchError) as err:
        load_model_config(str(tmp_path), env={})
    assert str(err.value) == f"{bad}:3: invalid JSON: Expecting value"


def test_missing_local_path():
    with pytest.raises(ConfigFetchError) as err:
        load_model_config("./no/such/model", env={})
    assert str(err.value) == (
        "./no/such/model: no such file or directory; pass a local model directory or --arch"
    )


def test_not_a_hub_id():
    with pytest.raises(ConfigFetchError) as err:
        load_model_config("GLM-5", env={})
    assert str(err.value) == (
        "model 'GLM-5': not a local directory or a Hugging Face id like 'org/name'; "
        "pass a local model directory or --arch"
    )


# --- the Hub ----------------------------------------------------------------------------------


def test_fetch_then_serve_from_cache(tmp_path):
    hub = Hub(ok)
    with hub.client() as client:
        first = load_model_config("zai-org/GLM-5", client=client, cache_dir=tmp_path, env={})
        second = load_model_config("zai-org/GLM-5", client=client, cache_dir=tmp_path, env={})
    assert first == second == GLM5
    assert len(hub.requests) == 1
    assert (
        str(hub.requests[0].url) == "https://huggingface.co/zai-org/GLM-5/resolve/main/config.json"
    )
    assert "authorization" not in hub.requests[0].headers
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_offline_serves_the_cache_and_refuses_otherwise(tmp_path):
    hub = Hub(ok)
    with hub.client() as client:
        load_model_config("zai-org/GLM-5", client=client, cache_dir=tmp_path, env={})
        offline = {"HF_HUB_OFFLINE": "1"}
        assert (
            load_model_config("zai-org/GLM-5", client=client, cache_dir=tmp_path, env=offline)
            == GLM5
        )
        with pytest.raises(ConfigFetchError) as err:
            load_model_config("org/other", client=client, cache_dir=tmp_path, env=offline)
    assert len(hub.requests) == 1
    assert str(err.value) == (
        "HF_HUB_OFFLINE is set and config.json for 'org/other' is not cached; "
        "pass a local model directory or --arch"
    )


def test_hf_endpoint_is_honoured_and_cached_apart(tmp_path):
    hub = Hub(ok)
    mirror = {"HF_ENDPOINT": "https://hf-mirror.example/"}
    with hub.client() as client:
        load_model_config("zai-org/GLM-5", client=client, cache_dir=tmp_path, env=mirror)
        load_model_config("zai-org/GLM-5", client=client, cache_dir=tmp_path, env={})
    assert [str(r.url) for r in hub.requests] == [
        "https://hf-mirror.example/zai-org/GLM-5/resolve/main/config.json",
        "https://huggingface.co/zai-org/GLM-5/resolve/main/config.json",
    ]


def test_token_is_sent_as_bearer_header(tmp_path):
    hub = Hub(ok)
    with hub.client() as client:
        load_model_config(
            "zai-org/GLM-5", client=client, cache_dir=tmp_path, env={"HF_TOKEN": "hf_secret"}
        )
    assert hub.requests[0].headers["authorization"] == "Bearer hf_secret"


def test_redirects_are_followed(tmp_path):
    def respond(request):
        if request.url.host == "huggingface.co":
            return httpx.Response(302, headers={"location": "https://cdn-lfs.example/blob"})
        return httpx.Response(200, json=GLM5)

    hub = Hub(respond)
    with hub.client() as client:
        assert load_model_config("zai-org/GLM-5", client=client, cache_dir=tmp_path, env={}) == GLM5
    assert [r.url.host for r in hub.requests] == ["huggingface.co", "cdn-lfs.example"]


def test_default_cache_dir_follows_xdg():
    assert default_cache_dir({"XDG_CACHE_HOME": "/tmp/xdg"}) == Path("/tmp/xdg/deploykb/hf")


def fetch_error(respond, tmp_path, env=None, model="x/y") -> str:
    hub = Hub(respond)
    with hub.client() as client, pytest.raises(ConfigFetchError) as err:
        load_model_config(model, client=client, cache_dir=tmp_path, env=env or {})
    assert not list(tmp_path.glob("*.json")), "a failure must not be cached"
    return str(err.value)


def test_404(tmp_path):
    message = fetch_error(lambda r: httpx.Response(404), tmp_path)
    assert (
        message
        == "model 'x/y' not found on https://huggingface.co (HTTP 404); check the id, or pass --arch"
    )


def test_401_for_a_missing_repo_says_not_found(tmp_path):
    message = fetch_error(
        lambda r: httpx.Response(401, headers={"X-Error-Code": "RepoNotFound"}), tmp_path
    )
    assert (
        message
        == "model 'x/y' not found on https://huggingface.co (HTTP 401); check the id, or pass --arch"
    )


def test_401_without_token(tmp_path):
    message = fetch_error(lambda r: httpx.Response(401), tmp_path)
    assert message == (
        "model 'x/y' on https://huggingface.co needs a token (HTTP 401): "
        "it is private, gated or misspelt; set HF_TOKEN if you have access"
    )


def test_401_with_token_never_prints_it(tmp_path):
    message = fetch_error(lambda r: httpx.Response(401), tmp_path, env={"HF_TOKEN": "hf_secret"})
    assert message == (
        "model 'x/y' on https://huggingface.co needs a token (HTTP 401): HF_TOKEN was rejected; "
        "check it"
    )
    assert "hf_secret" not in message


def test_403_gated(tmp_path):
    message = fetch_error(
        lambda r: httpx.Response(403, headers={"X-Error-Code": "GatedRepo"}), tmp_path
    )
    assert message == (
        "model 'x/y' on https://huggingface.co is gated (HTTP 403); accept its terms on the model "
        "page and set HF_TOKEN to a token with access, or pass a local model directory or --arch"
    )


def test_timeout(tmp_path):
    def respond(request):
        raise httpx.ReadTimeout("timed out", request=request)

    assert fetch_error(respond, tmp_path) == (
        "timed out after 3.0 s fetching config.json for 'x/y' from https://huggingface.co; "
        "pass a local model directory or --arch"
    )


def test_connection_error(tmp_path):
    def respond(request):
        raise httpx.ConnectError("Name or service not known", request=request)

    assert fetch_error(respond, tmp_path, env={"HF_TOKEN": "hf_secret"}) == (
        "cannot reach https://huggingface.co to fetch config.json for 'x/y' (ConnectError); "
        "pass a local model directory or --arch"
    )


def test_server_error_and_non_json(tmp_path):
    assert fetch_error(lambda r: httpx.Response(502), tmp_path) == (
        "fetching config.json for 'x/y' from https://huggingface.co failed (HTTP 502); "
        "pass a local model directory or --arch"
    )
    assert fetch_error(lambda r: httpx.Response(200, text="<html>"), tmp_path) == (
        "config.json for 'x/y' from https://huggingface.co is not valid JSON; "
        "pass a local model directory or --arch"
    )


def test_unreadable_cache_is_fetched_again(tmp_path):
    hub = Hub(ok)
    with hub.client() as client:
        load_model_config("zai-org/GLM-5", client=client, cache_dir=tmp_path, env={})
        (cached,) = tmp_path.glob("*.json")
        cached.write_text("{truncated")
        assert load_model_config("zai-org/GLM-5", client=client, cache_dir=tmp_path, env={}) == GLM5
    assert len(hub.requests) == 2
    assert json.loads(cached.read_text()) == GLM5


# --- a running SGLang server ------------------------------------------------------------------

SERVER_INFO = {
    "model_path": "nvidia/Qwen3.5-397B-A17B-NVFP4",
    "tokenizer_path": "nvidia/Qwen3.5-397B-A17B-NVFP4",
    "host": "0.0.0.0",
    "port": 30000,
    "tp_size": 8,
    "dp_size": 1,
    "ep_size": 1,
    "enable_dp_attention": False,
    "trust_remote_code": True,
    "dtype": "auto",
    "quantization": "modelopt_fp4",
    "kv_cache_dtype": "auto",
    "attention_backend": "triton",
    "moe_runner_backend": "flashinfer_cutlass",
    "fp4_gemm_runner_backend": "flashinfer_cudnn",
    "fp8_gemm_runner_backend": "auto",
    "mem_fraction_static": 0.88,
    "chunked_prefill_size": 8192,
    "max_running_requests": None,
    "cuda_graph_max_bs": 64,
    "disable_cuda_graph": False,
    "speculative_algorithm": None,
    "speculative_num_steps": 3,
    "json_model_override_args": "{}",
    "max_total_num_tokens": 1234567,
    "internal_states": [{"avg_spec_accept_length": None}],
    "version": "0.5.9",
}


class _Handler(BaseHTTPRequestHandler):
    routes: dict[str, object] = {}
    seen: list[str] = []

    def do_GET(self):  # noqa: N802
        self.seen.append(self.path)
        body = self.routes.get(self.path)
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def sglang_server():
    """Start a tiny HTTP server on 127.0.0.1; yields (base_url, routes, seen paths)."""

    class Handler(_Handler):
        routes: dict[str, object] = {}
        seen: list[str] = []

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", Handler.routes, Handler.seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_fetch_server_args_from_server_info(sglang_server):
    url, routes, seen = sglang_server
    routes["/server_info"] = SERVER_INFO
    args = fetch_server_args(url + "/")
    assert seen == ["/server_info"]
    assert args["tp_size"] == 8
    assert args["version"] == "0.5.9"
    assert "internal_states" not in args


def test_fetch_server_args_falls_back_to_get_server_info(sglang_server):
    url, routes, seen = sglang_server
    routes["/get_server_info"] = SERVER_INFO
    args = fetch_server_args(url.removeprefix("http://"))
    assert seen == ["/server_info", "/get_server_info"]
    assert args["model_path"] == "nvidia/Qwen3.5-397B-A17B-NVFP4"


def test_fetch_server_args_rejects_other_servers(sglang_server):
    url, routes, _ = sglang_server
    routes["/server_info"] = {"status": "ready"}
    with pytest.raises(ConfigFetchError) as err:
        fetch_server_args(url)
    assert str(err.value) == (
        f"{url}/server_info: the answer has no 'model_path'; is this an SGLang server?"
    )


def test_fetch_server_args_nothing_found(sglang_server):
    url, _, _ = sglang_server
    with pytest.raises(ConfigFetchError) as err:
        fetch_server_args(url)
    assert str(err.value) == (
        f"{url}/get_server_info: HTTP 404; expected an SGLang server answering "
        "/server_info or /get_server_info (or vLLM answering /version)"
    )


def test_fetch_server_args_nothing_listening():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConfigFetchError) as err:
        fetch_server_args(f"http://127.0.0.1:{port}", timeout=1.0)
    assert str(err.value) == (
        f"cannot reach http://127.0.0.1:{port} (ConnectError); is the SGLang server running "
        "and is the URL right?"
    )


def test_server_args_to_command_keeps_what_was_set():
    assert server_args_to_command(SERVER_INFO) == (
        "python -m sglang.launch_server --model-path nvidia/Qwen3.5-397B-A17B-NVFP4 "
        "--tp-size 8 --trust-remote-code --quantization modelopt_fp4 "
        "--attention-backend triton --moe-runner-backend flashinfer_cutlass "
        "--fp4-gemm-backend flashinfer_cudnn --mem-fraction-static 0.88 "
        "--chunked-prefill-size 8192 --cuda-graph-max-bs 64"
    )


def test_server_args_to_command_switches_and_speculative():
    info = {
        "model_path": "/models/GLM 5",
        "disable_cuda_graph": True,
        "kv_cache_dtype": "fp8_e4m3",
        "fp8_gemm_runner_backend": "cutlass",
        "speculative_algorithm": "EAGLE",
        "speculative_num_steps": 3,
        "speculative_eagle_topk": 1,
    }
    assert server_args_to_command(info) == (
        "python -m sglang.launch_server --model-path '/models/GLM 5' --kv-cache-dtype fp8_e4m3 "
        "--fp8-gemm-backend cutlass --disable-cuda-graph --speculative-algorithm EAGLE "
        "--speculative-num-steps 3 --speculative-eagle-topk 1"
    )


def test_server_args_to_command_needs_a_model():
    with pytest.raises(ConfigFetchError):
        server_args_to_command({"tp_size": 2})
