"""``--server``: the version a running SGLang or vLLM server reports is the framework version.

SGLang's ``/server_info`` (and the older ``/get_server_info``) carry ``version`` beside the server
arguments; vLLM answers ``/version`` with ``{"version": ...}`` and ``/v1/models`` with the model it
serves. Tested over ``httpx.MockTransport`` and, end to end through the CLI, against a server on
127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

import agent.cli  # noqa: F401  (registers the commands)
from agent.answer import build_context
from agent.cli.app import app
from agent.hub import fetch_server
from kb.errors import ConfigFetchError

REPO = Path(__file__).resolve().parent.parent

SGLANG_INFO = {"model_path": "nvidia/GLM-5-NVFP4", "tp_size": 8, "version": "0.5.9"}
VLLM_ROUTES = {
    "/version": {"version": "0.11.0"},
    "/v1/models": {
        "object": "list",
        "data": [
            {"id": "glm", "object": "model", "root": "zai-org/GLM-4.6-FP8", "max_model_len": 8192}
        ],
    },
}


def mock_client(routes: dict[str, object], seen: list[str] | None = None) -> httpx.Client:
    """Paths in ``routes`` answer 200 with their JSON; the rest 404 (the Hub's config.json too)."""

    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request.url.path)
        if request.url.path in routes:
            return httpx.Response(200, json=routes[request.url.path])
        return httpx.Response(404, json={"detail": "Not Found"})

    return httpx.Client(transport=httpx.MockTransport(handler))


def context(routes, **kw):
    warnings: list[str] = []
    ctx = build_context(
        server="http://127.0.0.1:30000", client=mock_client(routes), detect=False,
        warnings=warnings, **kw,
    )  # fmt: skip
    return ctx, warnings


def test_sglang_server_info_version_is_the_framework_version():
    ctx, warnings = context({"/server_info": SGLANG_INFO})
    assert (ctx.framework, ctx.framework_version) == ("sglang", "0.5.9")
    assert ctx.command is not None and "--tp-size 8" in ctx.command.raw


def test_older_sglang_get_server_info_version():
    seen: list[str] = []
    client = mock_client({"/get_server_info": SGLANG_INFO}, seen)
    info = fetch_server("127.0.0.1:30000", client=client)
    assert seen == ["/server_info", "/get_server_info"]
    assert (info.framework, info.version, info.model) == ("sglang", "0.5.9", "nvidia/GLM-5-NVFP4")


def test_vllm_version_and_model():
    seen: list[str] = []
    info = fetch_server("http://127.0.0.1:8000/", client=mock_client(VLLM_ROUTES, seen))
    assert seen == ["/server_info", "/get_server_info", "/version", "/v1/models"]
    assert (info.framework, info.version, info.model) == ("vllm", "0.11.0", "zai-org/GLM-4.6-FP8")
    assert info.args == {}  # vLLM does not report its launch arguments


def test_vllm_server_sets_framework_version_and_model_but_no_command():
    ctx, _ = context(VLLM_ROUTES)
    assert (ctx.framework, ctx.framework_version) == ("vllm", "0.11.0")
    assert ctx.model == "zai-org/GLM-4.6-FP8"
    assert ctx.command is None  # no arguments reported: nothing to diff against


def test_a_version_given_by_the_user_wins():
    ctx, warnings = context({"/server_info": SGLANG_INFO}, framework="sglang 0.5.8")
    assert (ctx.framework, ctx.framework_version) == ("sglang", "0.5.8")
    assert not [w for w in warnings if "--server" in w]


def test_another_framework_given_by_the_user_is_kept_with_a_warning():
    ctx, warnings = context(VLLM_ROUTES, framework="sglang")
    assert ctx.framework == "sglang" and ctx.framework_version is None
    assert [w for w in warnings if "--server" in w] == [
        "--server reports vllm 0.11.0, but the framework given is sglang; using sglang"
    ]


def test_vllm_version_that_is_not_a_version_is_an_error():
    with pytest.raises(ConfigFetchError) as err:
        fetch_server("http://127.0.0.1:8000", client=mock_client({"/version": {"v": 1}}))
    assert str(err.value) == (
        "http://127.0.0.1:8000/version: the answer has no 'version'; is this a vLLM server?"
    )


def test_nothing_answers():
    with pytest.raises(ConfigFetchError) as err:
        fetch_server("http://127.0.0.1:8000", client=mock_client({}))
    assert str(err.value) == (
        "http://127.0.0.1:8000/get_server_info: HTTP 404; expected an SGLang server answering "
        "/server_info or /get_server_info (or vLLM answering /version)"
    )


# --- end to end: `deploykb ask --server` against a server on 127.0.0.1 --------------------------


@contextmanager
def serve(routes: dict[str, object]) -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(self.path)
            status, body = (200, routes[self.path]) if self.path in routes else (404, {})
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def hash_index(tmp_path_factory) -> Path:
    """The shipped findings indexed with the hash embedder (no model load)."""
    from kb.embed import HashEmbedder
    from kb.ingest import ingest
    from kb.store import open_db

    path = tmp_path_factory.mktemp("server-version") / "kb.db"
    db = open_db(path)
    report = ingest(db, [REPO / "findings"], HashEmbedder, embedder_name=HashEmbedder().name)
    assert not report.errors
    db.close()
    return path


@pytest.fixture
def offline(monkeypatch, tmp_path):
    import agent.context

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("HF_ENDPOINT", "HF_TOKEN", "DEPLOYKB_DB", "DEPLOYKB_FINDINGS",
                 "DEPLOYKB_EMBEDDER", "DEPLOYKB_EMBED_MODEL"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(agent.context, "detect_gpu", lambda: None)


@pytest.mark.parametrize(
    ("routes", "framework", "version"),
    [({"/server_info": SGLANG_INFO}, "sglang", "0.5.9"), (VLLM_ROUTES, "vllm", "0.11.0")],
    ids=["sglang", "vllm"],
)
def test_ask_json_reports_the_servers_version(hash_index, offline, routes, framework, version):
    with serve(routes) as (url, seen):
        result = CliRunner().invoke(
            app,
            ["ask", "NaN in the probability tensor", "--server", url, "--db", str(hash_index),
             "--embedder", "hash", "--json"],
            catch_exceptions=False,
        )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["context"]["framework"], doc["context"]["framework_version"]) == (
        framework,
        version,
    )
    assert not [w for w in doc["warnings"] if "--server" in w]
