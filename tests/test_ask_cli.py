"""``deploykb ask`` end to end through typer's CliRunner, on an index of the shipped findings.

The index is built once for the module with the bundled model; each test works on its own copy.
Network: only servers this module starts on 127.0.0.1 (a Hub that answers 404, a closed port, a
fake SGLang server answering ``/server_info``).
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agent.cli  # noqa: F401  (registers the commands)
from agent.cli.app import app

pytestmark = pytest.mark.model

LOGS = Path(__file__).parent / "fixtures" / "logs"
GLM5_LOG = LOGS / "glm5_nvfp4_sglang_tp8.log"
GLM5 = "glm5-nvfp4-sm120-deepgemm-ue8m0-nan"
QWEN = "qwen35-397b-nvfp4-sm120-nan-moe-runner"
ASSERT = "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed."


@pytest.fixture(scope="module")
def built_index(shipped_index_path) -> Path:
    """The shipped findings indexed once per test session, as `ask` would build them."""
    return shipped_index_path


@pytest.fixture
def db(built_index, tmp_path) -> Path:
    """A private copy of the built index (tests may make it stale)."""
    target = tmp_path / "index" / "kb.db"
    target.parent.mkdir()
    shutil.copy(built_index, target)
    return target


@pytest.fixture(autouse=True)
def env(monkeypatch, tmp_path):
    """Offline, no GPU detection, no settings or config cache from the user's environment."""
    import agent.context

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "220")
    for name in ("HF_ENDPOINT", "HF_TOKEN", "DEPLOYKB_DB", "DEPLOYKB_FINDINGS",
                 "DEPLOYKB_EMBEDDER", "DEPLOYKB_EMBED_MODEL"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(agent.context, "detect_gpu", lambda: None)


def ask(*args: object, input: str | bytes | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["ask", *map(str, args)], input=input, catch_exceptions=False)


def ask_json(*args: object, input: str | bytes | None = None) -> dict:
    result = ask(*args, "--json", input=input)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


# --- a local HTTP server ------------------------------------------------------------------------


@contextmanager
def serve(
    routes: dict[str, tuple[int, object]],
    missing: tuple[int, dict[str, str]] = (404, {}),
) -> Iterator[tuple[str, list[str]]]:
    """Serve ``path -> (status, JSON body)`` on 127.0.0.1; other paths get ``missing`` (status,
    headers). Yields the base URL and the paths asked."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(self.path)
            headers: dict[str, str] = {}
            if self.path in routes:
                status, body = routes[self.path]
            else:
                (status, headers), body = missing, {"error": "Repository not found"}
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
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
        thread.join()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- output --------------------------------------------------------------------------------------

CHANGE_KEYS = {"kind": str, "action": str, "name": str, "text": str}
MATCH_KEYS = {
    "id": str,
    "title": str,
    "score": float,
    "reasons": list,
    "sources": list,
    "changes": list,
    "tried_without_effect": list,
}


def test_json_schema(db):
    failing = "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8"
    doc = ask_json("--log", GLM5_LOG, "--cmd", failing, "--db", db)
    assert type(doc["confident"]) is bool
    assert isinstance(doc["matches"], list) and len(doc["matches"]) == 3
    for m in doc["matches"]:
        for key, kind in MATCH_KEYS.items():
            assert isinstance(m[key], kind), (key, m[key])
        assert isinstance(m["root_cause"], (str, type(None)))
        assert isinstance(m["command"], str)  # a command was given: each match corrects it
        assert all(isinstance(x, str) for x in m["reasons"] + m["sources"])
        assert all(isinstance(x, str) for x in m["tried_without_effect"])
        for c in m["changes"]:
            for key, kind in CHANGE_KEYS.items():
                assert isinstance(c[key], kind), (key, c)
            assert c["kind"] in ("flag", "env", "pin")
            assert c["action"] in ("add", "change", "remove")
            assert isinstance(c["value"], (str, type(None)))
    scores = [m["score"] for m in doc["matches"]]
    assert scores == sorted(scores, reverse=True)  # best first

    best = doc["matches"][0]
    assert best["id"] == GLM5
    assert best["reasons"][0].startswith("shares the error line: ")
    assert "https://github.com/sgl-project/sglang/issues/14311" in best["sources"]
    assert best["root_cause"].startswith("Unknown; the reports end")
    # the unconfirmed plan of seed 004; the user's command has no FP8 KV cache to drop
    assert best["changes"] == [
        {"kind": "flag", "action": "add", "name": "--disable-cuda-graph", "value": None,
         "text": "--disable-cuda-graph"}
    ]  # fmt: skip
    assert best["command"] == f"{failing} --disable-cuda-graph"
    assert "--fp8-gemm-backend cutlass" in best["tried_without_effect"]


def test_without_a_command_there_is_no_corrected_command(db):
    doc = ask_json("--log", GLM5_LOG, "--db", db)
    assert doc["matches"][0]["id"] == GLM5
    assert all(m["command"] is None for m in doc["matches"])
    # without a current command the whole fix is proposed
    assert {c["text"] for c in doc["matches"][0]["changes"]} == {
        "--disable-cuda-graph",
        "--kv-cache-dtype fp8_e4m3",
    }


def test_top_one(db):
    doc = ask_json(ASSERT, "--top", "1", "--db", db)
    assert len(doc["matches"]) == 1 and _records_the_assertion(doc["matches"][0]["id"])


def test_stdin_dash_reads_the_log(db):
    from_file = ask_json("--log", LOGS / "qwen35_nvfp4_nan_response.txt", "--db", db)
    from_stdin = ask_json(
        "-", "--db", db, input=(LOGS / "qwen35_nvfp4_nan_response.txt").read_text()
    )
    assert from_stdin["matches"][0]["id"] == QWEN
    assert from_stdin["matches"] == from_file["matches"]
    assert from_stdin["triage"] == from_file["triage"]


def test_human_output(db):
    from kb.store import get_finding, open_db

    title = get_finding(open_db(db), GLM5).title
    result = ask("--log", GLM5_LOG, "--model", "nvidia/GLM-5-NVFP4", "--gpu", "sm120", "--db", db)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    # the right case is shown first, as "Best match" when the calibrated probability reaches the
    # threshold and as "Nearest" (not a diagnosis) when it does not
    assert f"Best match  {title}" in out or f"Nearest: {title}" in " ".join(out.split())
    assert "What to change" in out
    assert "add  --disable-cuda-graph" in out
    assert "Tried without effect" in out
    for dead_end in (
        "--fp8-gemm-backend cutlass",
        "disabling CUDA graphs",
        "attention backend triton",
    ):
        assert f"✗ {dead_end}" in out
    assert "Also close" in out
    # the answer says how often an answer this probable was right on the reports it was fitted on
    track = ask_json("--log", GLM5_LOG, "--model", "nvidia/GLM-5-NVFP4", "--gpu", "sm120",
                     "--db", db)["track_record"]  # fmt: skip
    low, high = track["probability_band"]
    from agent.rank import load_ranker

    assert (low, high, track["right"], track["reports"]) in load_ranker().track_record
    assert (
        f"a top answer scoring {low:.1f}–{high:.1f} was right for {track['right']} of "
        f"{track['reports']} real reports it was fitted on (out-of-fold)"
    ) in " ".join(out.split())
    assert "\x1b[" not in out  # no colour codes in a pipe
    # the offline Hub is no error, and the model's name gives the architecture: one note on
    # stderr (no warning), so stdout holds the answer alone
    assert (
        "note: architecture glm_moe_dsa read from the model's name (HF_HUB_OFFLINE is set and "
        "config.json for 'nvidia/GLM-5-NVFP4' is not cached)" in result.stderr.splitlines()
    )
    assert "warning:" not in result.stderr
    assert "warning:" not in out and "note:" not in out


def test_human_output_when_nothing_is_close(db):
    result = ask("Address already in use: port 8000", "--db", db)
    assert result.exit_code == 0
    assert "No close match." in result.stdout
    assert "Best match" not in result.stdout


# --- bad input -----------------------------------------------------------------------------------


def test_an_unknown_gpu_is_a_warning_not_the_end_of_the_answer(db):
    result = ask(ASSERT, "--gpu", "voodoo 9000", "--db", db, "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["warnings"][0] == (
        "--gpu 'voodoo 9000': unknown GPU; use a name like 'B200' or a compute capability "
        "like 'sm120'; matching without the GPU"
    )


def _records_the_assertion(fid: str) -> bool:
    """The bare probability-tensor assertion is recorded by several findings; any is right."""
    from kb.parse import parse_file
    from kb.resources import shipped_findings_dir

    (f,) = parse_file(shipped_findings_dir() / f"{fid}.md").findings
    return any("probability tensor contains" in s.text for s in f.symptoms)


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (("",), None, "empty input: paste an error, a log, or a question"),
        (("-",), "\n \n", "empty input: paste an error, a log, or a question"),
        (("-",), b"\x7fELF\x02\x01\x01\x00\x00\x00", "input looks binary (stdin); pass a text log"),
        ((), None, "no input: pass TEXT, - to read stdin, or --log FILE"),
        (
            (ASSERT, "--cmd", "python -m sglang.launch_server --model-path 'nvidia/GLM-5 --tp 8"),
            None,
            '--cmd: unbalanced quote in "\'nvidia/GLM-5 --tp 8"',
        ),
    ],
    ids=["empty", "empty-stdin", "binary-stdin", "no-input", "unbalanced-quote"],
)
def test_bad_input(db, args, stdin, message):
    result = ask(*args, "--db", db, input=stdin)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {message}\n"
    assert result.stdout == ""


def test_binary_log_file(db, tmp_path):
    log = tmp_path / "core.dump"
    log.write_bytes(b"[2026-02-19 00:13:33 TP5] Scheduler hit\x00\x00\x01\x02 an exception")
    result = ask("--log", log, "--db", db)
    assert (result.exit_code, result.stderr) == (
        2,
        f"Error: input looks binary ({log}); pass a text log\n",
    )


@pytest.mark.parametrize(
    "missing",
    [
        (404, {}),
        # the Hub answers an anonymous request for a repository that does not exist with 401
        (401, {"X-Error-Code": "RepoNotFound"}),
    ],
    ids=["404", "401-repo-not-found"],
)
def test_model_the_hub_does_not_know(db, monkeypatch, missing):
    with serve({}, missing) as (url, seen):
        monkeypatch.setenv("HF_ENDPOINT", url)
        monkeypatch.delenv("HF_HUB_OFFLINE")
        result = ask(ASSERT, "--model", "nvidia/No-Such-Model", "--db", db)
    assert seen == ["/nvidia/No-Such-Model/resolve/main/config.json"]
    assert result.exit_code == 4
    assert result.stderr == (
        f"Error: model 'nvidia/No-Such-Model' not found on {url} (HTTP {missing[0]}); check the id, or pass --arch\n"
    )
    assert result.stdout == ""


def test_hub_that_cannot_be_reached_only_degrades_the_answer(db, monkeypatch):
    endpoint = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    doc = ask_json("--log", GLM5_LOG, "--model", "nvidia/GLM-5-NVFP4", "--db", db)
    # without config.json the model's name still says its type, and the one warning says so
    assert doc["warnings"] == [
        f"cannot reach {endpoint} to fetch config.json for 'nvidia/GLM-5-NVFP4' (ConnectError); "
        "the architecture glm_moe_dsa is read from the model's name"
    ]
    assert doc["matches"][0]["id"] == GLM5
    assert doc["context"]["model"] == "nvidia/GLM-5-NVFP4"
    assert doc["context"]["architecture"] == "glm_moe_dsa"
    assert not any("architecture" in n for n in doc["notices"])
    human = ask("--log", GLM5_LOG, "--model", "nvidia/GLM-5-NVFP4", "--db", db)
    assert human.exit_code == 0
    assert f"warning: cannot reach {endpoint}" in human.stderr
    assert "warning:" not in human.stdout
    assert "Best match" in human.stdout or "Nearest:" in human.stdout


def test_with_arch_a_config_that_cannot_be_read_is_no_warning(db, monkeypatch):
    endpoint = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    cmd = "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8"
    for offline in ("1", None):  # not cached offline; the Hub cannot be reached online
        if offline is None:
            monkeypatch.delenv("HF_HUB_OFFLINE")
        result = ask("--log", GLM5_LOG, "--arch", "glm_moe_dsa", "--cmd", cmd, "--db", db)
        assert result.exit_code == 0, result.stderr
        assert "--arch" not in result.stderr and "warning:" not in result.stderr
        doc = ask_json("--log", GLM5_LOG, "--model", "nvidia/GLM-5-NVFP4", "--arch",
                       "glm_moe_dsa", "--db", db)  # fmt: skip
        assert doc["warnings"] == [] and doc["context"]["architecture"] == "glm_moe_dsa"


def test_hub_config_gives_the_architecture_and_is_cached(db, monkeypatch, tmp_path):
    config = json.loads((Path(__file__).parent / "fixtures/configs/glm-5.json").read_text())
    routes = {"/nvidia/GLM-5-NVFP4/resolve/main/config.json": (200, config)}
    monkeypatch.delenv("HF_HUB_OFFLINE")
    with serve(routes) as (url, seen):
        monkeypatch.setenv("HF_ENDPOINT", url)
        first = ask_json(ASSERT, "--model", "nvidia/GLM-5-NVFP4", "--db", db)
        second = ask_json(ASSERT, "--model", "nvidia/GLM-5-NVFP4", "--db", db)
    assert len(seen) == 1  # the second query was answered from the cache
    assert first["warnings"] == [] and first["context"] == second["context"]
    assert first["context"]["architecture"] == "glm_moe_dsa"
    assert "dsa" in first["context"]["traits"]
    glm5 = next(m for m in first["matches"] if m["id"] == GLM5)
    assert any("same architecture (glm_moe_dsa)" in r for r in glm5["reasons"])


# --- the index -----------------------------------------------------------------------------------


def test_missing_index_is_built(tmp_path, monkeypatch):
    # the plumbing, not the model: the hash embedder builds the index in a fraction of a second
    monkeypatch.setenv("DEPLOYKB_EMBEDDER", "hash")
    path = tmp_path / "fresh" / "kb.db"
    result = ask(ASSERT, "--db", path, "--json")
    assert result.exit_code == 0
    assert (
        result.stderr == f"deploykb: no index at {path}; building it from 1 findings folder(s)...\n"
    )
    assert _records_the_assertion(json.loads(result.stdout)["matches"][0]["id"])
    again = ask(ASSERT, "--db", path, "--json")
    assert again.stderr == ""  # current now: no second build


@pytest.mark.parametrize("key", ["parser_version", "schema_version"])
def test_stale_index_is_rebuilt(db, key):
    from kb.store import INDEX_SCHEMA_VERSION, check_index, index_status, open_db
    from kb.versions import PARSER_VERSION

    stale = open_db(db)
    with stale.atomic():
        stale.execute("UPDATE meta SET value = '0' WHERE key = ?", [key])
        stale.execute("UPDATE findings SET content_hash = 'from-an-older-parser'")
    model = index_status(stale)["model"]
    stale.close()
    before = {"parser_version": PARSER_VERSION, "schema_version": INDEX_SCHEMA_VERSION, key: "0"}

    result = ask(ASSERT, "--db", db, "--json")
    assert result.exit_code == 0
    assert result.stderr == (
        f"deploykb: index at {db} was built by schema {before['schema_version']}, parser "
        f"{before['parser_version']}, model {model}; building it from 1 findings folder(s)...\n"
    )
    assert _records_the_assertion(json.loads(result.stdout)["matches"][0]["id"])
    rebuilt = open_db(db)
    check_index(rebuilt, model)
    status = index_status(rebuilt)
    assert (status["parser_version"], status["schema_version"]) == (
        PARSER_VERSION,
        INDEX_SCHEMA_VERSION,
    )
    assert status["count"] > 40


def test_not_an_index(tmp_path):
    import sqlite3

    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (x)")
    result = ask(ASSERT, "--db", path)
    assert result.exit_code == 3
    assert result.stderr == (
        f"Error: {path}: not a deploykb index (it holds other tables: notes); "
        "delete it or pass --db\n"
    )


# --- a live server -------------------------------------------------------------------------------

SERVER_INFO = {
    "model_path": "nvidia/GLM-5-NVFP4",
    "tp_size": 8,
    "quantization": "modelopt_fp4",
    "kv_cache_dtype": "fp8_e4m3",
    "attention_backend": "flashinfer",
    "moe_runner_backend": "auto",
    "disable_cuda_graph": False,
    "host": "0.0.0.0",
    "port": 30000,
    "version": "0.5.9",
    "internal_states": [{"last_gen_throughput": 0.0}],
}


def test_server_arguments_are_the_current_command(db):
    with serve({"/server_info": (200, SERVER_INFO)}) as (url, seen):
        doc = ask_json("--log", GLM5_LOG, "--server", url, "--db", db)
    assert seen == ["/server_info"]
    best = doc["matches"][0]
    assert best["id"] == GLM5
    assert best["command"] == (
        "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp-size 8 "
        "--quantization modelopt_fp4 --attention-backend flashinfer --disable-cuda-graph"
    )
    assert doc["context"]["framework"] == "sglang"
    assert doc["context"]["model"] == "nvidia/GLM-5-NVFP4"
    assert doc["context"]["quantization"] == "modelopt_fp4"


def test_server_that_cannot_be_reached_is_a_warning(db):
    url = f"http://127.0.0.1:{closed_port()}"
    doc = ask_json("--log", GLM5_LOG, "--server", url, "--db", db)
    assert doc["warnings"] == [
        f"--server: cannot reach {url} (ConnectError); is the SGLang server running and is the "
        "URL right?; continuing without the live server's arguments"
    ]
    assert doc["matches"][0]["id"] == GLM5
    assert doc["matches"][0]["command"] is None


# --- a framework version -------------------------------------------------------------------------

QWEN_CMD = (
    "python -m sglang.launch_server --model-path /data/models/Qwen3.5-397B-A17B-NVFP4 --tp 8 "
    "--quantization modelopt_fp4 --attention-backend triton"
)


def test_qwen_seed_on_sglang_059_proposes_spellings_059_accepts(db):
    from agent.registry import load_registry

    doc = ask_json(
        "--log",
        LOGS / "qwen35_nvfp4_nan_response.txt",
        "--gpu",
        "sm120",
        "--model",
        "Qwen3.5-397B-A17B-NVFP4",
        "--framework",
        "sglang 0.5.9",
        "--cmd",
        QWEN_CMD,
        "--db",
        db,
    )
    best = doc["matches"][0]
    assert best["id"] == QWEN
    assert doc["context"]["framework_version"] == "0.5.9"
    assert doc["warnings"] == []
    reg = load_registry()
    texts = [c["text"] for c in best["changes"]]
    assert texts == [
        "--moe-runner-backend flashinfer_cutlass",
        "--fp4-gemm-backend flashinfer_cudnn",
    ]
    for c in best["changes"]:
        assert reg.accepts(c["name"], "sglang", "0.5.9")
        assert c["value"] in reg.choices_in(c["name"], "sglang", "0.5.9")
    assert best["command"] == QWEN_CMD + " " + " ".join(texts)


def test_a_version_that_is_no_release_is_a_warning(db):
    doc = ask_json(
        "--log",
        LOGS / "qwen35_nvfp4_nan_response.txt",
        "--framework",
        "sglang main",
        "--cmd",
        QWEN_CMD,
        "--db",
        db,
    )
    assert doc["warnings"] == [
        "SGLang main is not a release number: flags not checked against a release"
    ]
