"""The one JSON reader: every failure is one line naming the file, in the caller's error class."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb.dataload import load_json_data, read_json
from kb.errors import DeployKBError, InputError


def test_reads_json(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"a": [1, 2]}', encoding="utf-8")
    assert read_json(path) == {"a": [1, 2]}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "{path}: no such file"),
        (b"\xff\xfe{", "{path}: not UTF-8 text"),
        (b'{\n  "a": ,\n}', "{path}:2: invalid JSON: Expecting value"),
    ],
)
def test_each_failure_is_one_line_naming_the_file(tmp_path: Path, content, message) -> None:
    path = tmp_path / "x.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(DeployKBError) as exc:
        read_json(path)
    assert str(exc.value) == message.format(path=path)


def test_a_folder_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(DeployKBError) as exc:
        read_json(tmp_path)
    assert str(exc.value).startswith(f"{tmp_path}: cannot read (")


def test_the_caller_chooses_the_error_the_origin_and_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "answer.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_json(path, error=InputError, origin="--from-ask answer.json", not_json="not JSON")
    assert str(exc.value) == "--from-ask answer.json:1: not JSON"


def test_shipped_data_is_read_once() -> None:
    assert load_json_data("components.json") is load_json_data("components.json")
