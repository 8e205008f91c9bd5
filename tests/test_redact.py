"""Secrets and private addresses never reach a finding."""

from __future__ import annotations

import re

import pytest

from kb.redact import find_secrets, redact

SEED_COMMANDS = [
    "ssh root@10.1.230.174 'journalctl -u sglang-qwen -o cat --no-pager | grep -i \"fp4\\|NaN\" | head -15'",
    "ssh 10.1.230.175 'grep -B3 \"Scheduler hit an exception\" ~/sglang-glm5.log | head -15'",
]


def test_seed_ssh_commands_lose_user_host_and_addresses():
    out, found = redact(SEED_COMMANDS[0])
    assert "10.1.230.174" not in out and "root@" not in out
    assert out.startswith("ssh <user>@<host> 'journalctl -u sglang-qwen")
    assert [r.kind for r in found] == ["ssh-user-host"]
    out, found = redact(SEED_COMMANDS[1])
    assert out.startswith("ssh <ip> 'grep -B3")
    assert [(r.kind, r.original) for r in found] == [("ipv4", "10.1.230.175")]


@pytest.mark.parametrize(
    "text, secret, kind",
    [
        (
            "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEF12",
            "hf_abcdefghijklmnopqrstuvwxyzABCDEF12",
            "hf-token",
        ),
        (
            "OPENAI_API_KEY=sk-proj-aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI",
            "sk-proj-aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI",
            "openai-key",
        ),
        ("aws key AKIAIOSFODNN7EXAMPLE in env", "AKIAIOSFODNN7EXAMPLE", "aws-key"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws-secret",
        ),
        ("curl -H 'Authorization: Bearer abc123def456ghi'", "abc123def456ghi", "bearer-token"),
        ("contact ops.team+gpu@company.io now", "ops.team+gpu@company.io", "email"),
        ("--dist-init-addr 192.168.7.21:5000", "192.168.7.21", "ipv4"),
        ("peer fe80::1ff:fe23:4567:890a joined", "fe80::1ff:fe23:4567:890a", "ipv6"),
        (
            "nccl: connect to gpu-node-07.cluster.internal:29500 failed",
            "gpu-node-07.cluster.internal",
            "hostname",
        ),
        ('File "/home/alice/venv/lib/python3.12/site-packages/x.py"', "alice", "home-path"),
        ("/Users/bob/models/glm5", "bob", "home-path"),
        ("python -m sglang.launch_server --host gpubox3 --port 30000", "gpubox3", "hostname"),
        ("vllm serve m --api-key mysecretkey123", "mysecretkey123", "api-key-flag"),
    ],
)
def test_each_kind_is_replaced(text, secret, kind):
    out, found = redact(text)
    assert secret not in out
    assert kind in {r.kind for r in found}


def test_placeholders_lists_every_placeholder_a_rule_writes():
    """``PLACEHOLDERS`` (what lint refuses where a value must stand) is in step with the rules:
    every ``<name>`` in a string of kb/redact.py but regex group names is in it, and each of
    its entries is written by a rule."""
    import io
    import tokenize
    from pathlib import Path

    import kb.redact
    from kb.redact import PLACEHOLDERS, placeholders_in

    source = Path(kb.redact.__file__).read_text()
    head, rest = source.split("\nPLACEHOLDERS = (", 1)
    source = head + rest.split("\n)\n", 1)[1]  # the rules, without the list itself
    written: set[str] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            text = re.sub(r"\(\?P[<=][a-z]+>?", "", tok.string)  # (?P<q> and (?P=q) are groups
            written |= set(re.findall(r"<[a-z][a-z0-9-]*>", text))
    assert written - set(PLACEHOLDERS) - {"<user>@", "<host>:"} == set()
    assert set(PLACEHOLDERS) <= written
    assert placeholders_in("<redacted>/Model-<ip> and <ip>") == ("<redacted>", "<ip>")


@pytest.mark.parametrize(
    "text",
    [
        "[2026-02-19 00:13:33 TP5] Scheduler hit an exception",
        "python -m sglang.launch_server --host 0.0.0.0 --port 30000 --tp 8",
        "curl http://127.0.0.1:30000/v1/chat/completions",
        "flashinfer-python==0.6.16rc4 and vllm 0.23.1rc1.dev552+g4559c43a9",
        "https://github.com/sgl-project/sglang/issues/29954",
        "lmsysorg/sglang:v0.5.11-cu130",
        "block: [0,7,0], thread: [1,0,0] Assertion failed",
        "/data/models/Qwen3.5-397B-A17B-NVFP4 at 10:21:13",
        "--mem-fraction-static 0.80 --speculative-eagle-topk 1",
    ],
)
def test_ordinary_log_text_is_left_alone(text):
    out, found = redact(text)
    assert out == text and found == ()


def test_replacements_report_lines_and_mask_secret_previews():
    text = "line one\nssh root@10.0.0.5 'x'\nHF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789"
    out, found = redact(text)
    by_kind = {r.kind: r for r in found}
    assert by_kind["ssh-user-host"].line == 2
    assert by_kind["hf-token"].line == 3
    secret = next(r for r in found if r.kind in ("hf-token", "env-secret"))
    assert "abcdefghijklmnop" not in secret.preview()
    assert find_secrets(out) == ()


@pytest.mark.parametrize(
    "text",
    [
        "vLLM 0.25.1, torch 2.11.0+cu130 (bundles cuDNN 9.19.0.56), FlashInfer 0.6.13",
        "TensorRT 10.0.1.6 with NCCL version 2.21.5",
        "pip install nvidia-cudnn-cu12==9.1.0.70",
        "pip install git+https://github.com/sgl-project/sglang.git@v0.5.9#subdirectory=python",
        "built from vllm-project/vllm@4559c43a9",
        "docker pull lmsysorg/sglang:v0.5.9-cu129@sha256:0123abcd",
        "uv pip install torch@2.9.1",
    ],
)
def test_versions_and_pinned_revisions_are_not_addresses(text):
    out, found = redact(text)
    assert out == text and found == ()


@pytest.mark.parametrize(
    "text, secret",
    [
        ("MASTER_ADDR=10.0.0.1 torchrun train.py", "10.0.0.1"),
        ("cuDNN 9.1.0.70 loaded; peer 10.1.2.3 refused", "10.1.2.3"),
        ("ssh ubuntu@gpu-node-3 'nvidia-smi'", "ubuntu@gpu-node-3"),
        ("ssh admin@10.1.230.174", "10.1.230.174"),
    ],
)
def test_addresses_next_to_versions_are_still_redacted(text, secret):
    out, _ = redact(text)
    assert secret not in out


@pytest.mark.parametrize(
    "text, secret",
    [
        ("export GITHUB_TOKEN=abcdef1234567890abcdef", "abcdef1234567890abcdef"),
        ("vllm serve m --hf-token myTokenValue123", "myTokenValue123"),
        ("LLM(model=m, hf_token=abcdefghijklmn)", "abcdefghijklmn"),
        ('sgl.Engine(model_path=p, api_key="sk9abc123def456ghi")', "sk9abc123def456ghi"),
        (
            "NGC key nvapi-abcdefghijklmnopqrstuvwxyz012345",
            "nvapi-abcdefghijklmnopqrstuvwxyz012345",
        ),
        ("git clone https://alice:s3cr3tpass@git.mycorp.com/x.git", "s3cr3tpass"),
    ],
)
def test_tokens_in_other_spellings_are_replaced(text, secret):
    out, found = redact(text)
    assert secret not in out and found


@pytest.mark.parametrize(
    "text", ["max_new_token=512", "pad_token=<|endoftext|>", "--max-num-batched-tokens 2048"]
)
def test_token_counts_are_not_secrets(text):
    assert redact(text) == (text, ())


@pytest.mark.parametrize(
    "text, shown",
    [
        # a quoted value after a secret's flag goes whole, several words and all
        ("vllm serve m --api-key 'my secret value'", "vllm serve m --api-key '<redacted>'"),
        (
            'vllm serve m --hf-token="abc def" --port 8000',
            'vllm serve m --hf-token="<redacted>" --port 8000',
        ),
        ("mysql --password 'hunter two three'", "mysql --password '<redacted>'"),
        ("export API_KEY='my secret value'", "export API_KEY='<redacted>'"),
        # JSON, Python-dict and YAML keys
        ('{"api_key": "mysecretvalue123"}', '{"api_key": "<redacted>"}'),
        ("{'password': 'hunter2pass'}", "{'password': '<redacted>'}"),
        (
            '{"token": "abcdef123456", "secret": "s3cr3tvalue"}',
            '{"token": "<redacted>", "secret": "<redacted>"}',
        ),
        ('{"hf_token": "my hub token"}', '{"hf_token": "<redacted>"}'),
        ("api_key: mysecretvalue123", "api_key: <redacted>"),
        # a user's home by name, a private machine's whole name, private blocks whatever the cue
        ("--model-path ~jdoe/models", "--model-path ~<user>/models"),
        ("gpu-node-17.corp.acme.io:30000", "<host>:30000"),
        ("version 192.168.1.10", "version <ip>"),
        ("release 172.16.5.4", "release <ip>"),
        ("build 169.254.3.7", "build <ip>"),
    ],
)
def test_quoted_values_keys_home_names_and_private_blocks(text, shown):
    assert redact(text)[0] == shown


@pytest.mark.parametrize(
    "text",
    [
        "TensorRT version 10.1.2.3",
        "release 9.10.2.21",
        "version 0.10.1.1",
        "home = Path.home() / '.cache'",
        "_LINE = threading.local()",
        '{"pad_token": "<|endoftext|>", "mask_token": "[MASK]", "max_tokens": 512}',
        'vllm serve m --api-key $VLLM_API_KEY --hf-token "$HF_TOKEN"',
        "~/.cache/huggingface, ~1.5x, vllm~=0.10.1",
    ],
)
def test_four_part_versions_placeholders_and_python_stay(text):
    assert redact(text) == (text, ())


def test_a_report_of_what_was_replaced_shows_no_part_of_it():
    _, found = redact(
        "ssh bob@gpu-box.acmecorp.ai; ping 10.1.1.1; docker login r.io -u bob -p pw123456"
    )
    shown = [f"{r.kind} {r.preview()} -> {r.placeholder}" for r in found]
    assert shown == [
        "docker-password …(36 chars) -> <redacted>",
        "email …(23 chars) -> <email>",
        "ipv4 …(8 chars) -> <ip>",
    ]
    assert not any(x in " ".join(shown) for x in ("bob", "gpu-box", "10.1.1.1", "pw123456"))


def test_a_flag_value_is_judged_with_its_name():
    from kb.records import FlagChange
    from kb.redact import redact_record

    removed = FlagChange("flag", "remove", "--api-key", "my secret value", text="--api-key 'x y'")
    assert redact_record(removed).value == "<redacted>"
    assert redact_record(FlagChange("flag", "add", "--port", "8000")).value == "8000"
    pairs = (("HF_TOKEN", "abc def ghi"), ("CUDA_VISIBLE_DEVICES", "0,1"))
    assert redact_record(pairs) == (("HF_TOKEN", "<redacted>"), ("CUDA_VISIBLE_DEVICES", "0,1"))


def test_control_characters_are_written_out_and_line_endings_kept():
    from kb.redact import neutralise, redact_record, safe_text

    text = "t \x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\nnext\x9b\tok"
    assert neutralise(text) == "t \\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mred\nnext\\x9b\tok"
    assert safe_text("ssh 10.1.1.1 \x1b[2J") == "ssh <ip> \\x1b[2J"
    assert redact_record({"a": ("\x1b", "x\x07y")}) == {"a": ("\\x1b", "x\\x07y")}
