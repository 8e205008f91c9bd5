"""Every class of bad input in the README's table: the exact one line a user sees, and the exit code.

Each case builds its input in a fresh folder, runs the real CLI there (``findings/`` beside it,
the index at ``state/kb.db``, the hash embedder) and checks the line and the code; no case may
print a traceback. ``test_readme_table_is_these_cases`` keeps the README table equal to this list:
print it with ``python tests/test_bad_input.py``.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GOOD = (REPO / "findings" / "glm5-nvfp4-sm120-deepgemm-ue8m0-nan.md").read_text()
GOOD_ID = "glm5-nvfp4-sm120-deepgemm-ue8m0-nan"
FRONT = "---\nid: x\ntitle: t\nstatus: works\n"


def team(text: str, name: str = "x.md") -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (tmp / "findings").mkdir(exist_ok=True)
        data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
        (tmp / "findings" / name).write_bytes(data)

    return make


def good_as(fid: str) -> str:
    return GOOD.replace(f"id: {GOOD_ID}", f"id: {fid}", 1)


BOMB = (
    "---\na: &a [x,x,x,x,x,x,x,x,x]\n"
    + "".join(
        f"{b}: &{b} [{', '.join(['*' + a] * 9)}]\n"
        for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "id: x\ntitle: t\nstatus: works\n---\n"
)


ESCAPED = '---\nid: x\ntitle: "t \\e]0;pwned\\a\\e[2J"\nstatus: works\n---\n'


def index_and(then: Callable[[Path], None]) -> Callable[[Path], None]:
    """Build the index of the shipped findings and findings/, then spoil something."""

    def make(tmp: Path) -> None:
        (tmp / "findings").mkdir(exist_ok=True)
        (tmp / "findings" / "team-one.md").write_text(good_as("team-one"))
        code, _, err = invoke(["ingest", "--findings", "findings"])
        assert code == 0, err
        then(tmp)

    return make


def spoil_vector(tmp: Path) -> None:
    con = sqlite3.connect(tmp / "state" / "kb.db")
    con.execute("UPDATE embeddings SET vector = substr(vector, 1, 100) WHERE finding_id = ?",
                ["team-one"])  # fmt: skip
    con.commit()
    con.close()


def spoil_pages(tmp: Path) -> None:
    db = tmp / "state" / "kb.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(db.read_bytes())
    for i in range(4096, len(data), 4096):  # every page but the first, the header, zeroed
        data[i + 8 : i + 4000] = bytes(3992)
    db.write_bytes(bytes(data))


def old_schema(tmp: Path) -> None:
    con = sqlite3.connect(tmp / "state" / "kb.db")
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.commit()
    con.close()


def move_team(tmp: Path) -> None:
    (tmp / "findings").rename(tmp / "moved")


def make_read_only(tmp: Path) -> None:
    (tmp / "findings" / "team-one.md").write_text(good_as("team-one") + "\nEdited.\n")
    os.chmod(tmp / "state" / "kb.db", 0o444)


def folder_read_only(tmp: Path) -> None:
    os.chmod(tmp / "state", 0o555)  # SQLite can make no -wal or -shm file there


def delete_team(tmp: Path) -> None:
    import shutil

    shutil.rmtree(tmp / "findings")


def delete_team_read_only(tmp: Path) -> None:
    delete_team(tmp)
    os.chmod(tmp / "state" / "kb.db", 0o444)


@dataclass(frozen=True)
class Case:
    name: str  # the class of bad input, as the README table says it
    args: tuple[str, ...]  # the command, run in the case's folder
    code: int  # exit code
    line: str  # the exact line the user sees (stderr, or stdout for lint/export data)
    setup: Callable[[Path], None] | None = None
    stdin: str | None = None
    prefix: bool = False  # the line starts with ``line`` (the rest depends on the ranking)
    absent: tuple[str, ...] = ()  # what must appear nowhere in the output


CASES = [
    # --- a finding file (ingest names it and indexes the others; ask warns once; lint says error)
    Case("recursive YAML alias", ("ingest", "findings"), 1,
         "findings/x.md:2: invalid YAML in front matter: alias '*a' is not allowed; write the value out",
         team("---\nid: &a [*a]\ntitle: x\nstatus: works\n---\n")),
    Case("YAML alias bomb (billion laughs, 407 bytes)", ("ingest", "findings"), 1,
         "findings/x.md:3: invalid YAML in front matter: alias '*a' is not allowed; write the value out",
         team(BOMB)),
    Case("ESC (control) byte in front matter", ("ingest", "findings"), 1,
         "findings/x.md:3: invalid YAML in front matter: control character U+001B is not allowed; remove it",
         team("---\nid: x\ntitle: t\x1b[31m\nstatus: works\n---\n")),
    Case("5,000 nested `[`", ("ingest", "findings"), 1,
         "findings/x.md:5: invalid YAML in front matter: exceeded maximum nesting depth",
         team(FRONT + "tags: " + "[" * 5000 + "\n---\n")),
    Case("30 nested lists `[[[...]]]`", ("ingest", "findings"), 1,
         "findings/x.md:5: invalid YAML in front matter: nested deeper than 20 levels",
         team(FRONT + "tags: " + "[" * 30 + "]" * 30 + "\n---\n")),
    Case("front matter over 100 KB", ("ingest", "findings"), 1,
         "findings/x.md:1: front matter is 120,036 characters; the limit is 100,000 (long logs belong in the body)",
         team(FRONT + "notes: " + "x" * 120_000 + "\n---\n")),
    Case("YAML tag that names Python code", ("ingest", "findings"), 1,
         "findings/x.md:5: invalid YAML in front matter: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object/apply:os.system'",
         team(FRONT + "model: !!python/object/apply:os.system ['id']\n---\n")),
    Case("invalid YAML", ("ingest", "findings"), 1,
         "findings/x.md:3: invalid YAML in front matter: mapping values are not allowed in this context",
         team("---\nid: x\ntitle: a: b: c\nstatus: works\n---\n")),
    Case("duplicate key", ("ingest", "findings"), 1,
         "findings/x.md:5: duplicate key 'status' (first on line 4)",
         team(FRONT + "status: broken\n---\n")),
    Case("front matter not closed", ("ingest", "findings"), 1,
         "findings/x.md:1: front matter is not closed: add a '---' line after the fields",
         team(FRONT)),
    Case("empty front matter", ("ingest", "findings"), 1,
         "findings/x.md:1: front matter is empty; it needs at least id, title and status",
         team("---\n---\nbody\n")),
    Case("empty file", ("ingest", "findings"), 1, "findings/x.md: empty file", team("\n\n")),
    Case("NUL byte (a binary file)", ("ingest", "findings"), 1,
         "findings/x.md: binary file, not Markdown", team(FRONT + "---\n\x00\n")),
    Case("bytes that are not UTF-8", ("ingest", "findings"), 1,
         "findings/x.md:3: not UTF-8 text (invalid byte 0xff at offset 20)",
         team(b"---\nid: x\ntitle: caf\xff\nstatus: works\n---\n")),  # type: ignore[arg-type]
    Case("file over 1 MB", ("ingest", "findings"), 1,
         "findings/x.md: file is 2.0 MB; a finding must be under 1 MB",
         team(FRONT + "---\n" + "y" * 2_000_000)),
    Case("missing required field", ("ingest", "findings"), 1,
         "findings/x.md:1: missing required field 'status'",
         team("---\nid: x\ntitle: t\n---\n")),
    Case("unknown status", ("ingest", "findings"), 1,
         "findings/x.md:4: status 'fine' is not one of: works, works-with-flags, broken, partial",
         team("---\nid: x\ntitle: t\nstatus: fine\n---\n")),
    Case("unknown symptom class", ("ingest", "findings"), 1,
         "findings/x.md:6: symptom class 'boom' is not one of: nan, garbage-output, empty-output, accuracy, device-assert, illegal-memory-access, crash, hang, oom, slow, warning",
         team(FRONT + "symptoms:\n  - class: boom\n    text: x\n---\n")),
    Case("impossible date", ("ingest", "findings"), 1,
         "findings/x.md:5: 'date' 2026-13-45 is not a real date",
         team(FRONT + "date: 2026-13-45\n---\n")),
    Case("notes file with no front matter and no sections", ("ingest", "findings"), 1,
         "findings/x.md:1: no front matter and no '## ' sections, so nothing to read; see findings/README.md for the format",
         team("just some words\n")),
    Case("the same id in two files", ("ingest", "findings"), 1,
         "findings/y.md:2: duplicate id 'x' (already in findings/x.md)",
         lambda tmp: (team(good_as("x"))(tmp), team(good_as("x"), "y.md")(tmp))),
    Case("a bad file while asking: warned once, the others answered", ("ask", "NaN probability tensor", "--findings", "findings", "--gpu", "sm120"), 0,
         "warning: findings/x.md:2: invalid YAML in front matter: alias '*a' is not allowed; write the value out",
         team("---\nid: &a [*a]\ntitle: x\nstatus: works\n---\n")),
    Case("52 MB file given to lint (refused before any scan)", ("lint", "findings/x.md"), 1,
         "findings/x.md: error: file is 52.0 MB; a finding must be under 1 MB",
         team(FRONT + "---\n" + "hf_" + "a" * 52_000_000)),
    Case("unredacted secret in a finding (lint)", ("lint", "findings/x.md"), 1,
         "findings/x.md:7: error: unredacted hf-token '…(37 chars)': replace it with <hf-token> (`deploykb add` redacts automatically)",
         team(FRONT + "---\n\nexport HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEF12\n")),
    Case("finding id that is not a slug (lint)", ("lint", "findings/x.md"), 1,
         "findings/x.md:2: error: id '../../etc/passwd' is not a slug: use lower-case letters, digits, '-', '_' and '.', starting with a letter or digit",
         team("---\nid: ../../etc/passwd\ntitle: t\nstatus: works\n---\n")),
    Case("a 5,000-digit number in front matter (lint)", ("lint", "findings/x.md"), 1,
         "findings/x.md:5: error: invalid YAML in front matter: a number of 5,000 digits; the limit is 100 (put it in quotes if it is text)",
         team(FRONT + "gpu_count: " + "9" * 5000 + "\n---\n")),
    Case("symbolic link to a file outside the folder (lint)", ("lint", "findings"), 1,
         "findings/p.md: error: symbolic link to secret.md, outside the folders checked: not followed (commit the file, not a link)",
         lambda tmp: ((tmp / "findings").mkdir(), (tmp / "secret.md").write_text(good_as("p")),
                      (tmp / "findings" / "p.md").symlink_to(tmp / "secret.md"))),
    Case("symbolic link to a file outside the folder (ingest)", ("ingest", "findings"), 1,
         "findings/p.md: symbolic link to secret.md, outside the findings folders: not read (commit the file, not a link)",
         lambda tmp: ((tmp / "findings").mkdir(), (tmp / "secret.md").write_text(good_as("p")),
                      (tmp / "findings" / "p.md").symlink_to(tmp / "secret.md"))),
    Case("terminal escapes written as YAML escapes (lint)", ("lint", "findings/x.md"), 1,
         "findings/x.md:3: error: 'title': control characters U+001B, U+0007 (written as a YAML escape) are not allowed (a terminal acts on them); remove them",
         team(ESCAPED)),
    Case("raw ESC and BEL bytes in the body (lint)", ("lint", "findings/x.md"), 1,
         "findings/x.md:7: error: control characters U+001B, U+0007 are not allowed (a terminal acts on them); remove them",
         team(FRONT + "---\n\nRaw \x1b]0;pwned\x07 and \x1b[2J in the body.\n")),
    Case("terminal escapes in a finding are written out, not run (show)", ("show", "x", "--json"), 0,
         '  "title": "t \\\\x1b]0;pwned\\\\x07\\\\x1b[2J",',
         lambda tmp: (team(ESCAPED)(tmp), invoke(["ingest", "--findings", "findings"])),
         absent=("\x1b", "\x07")),
    # --- the index file
    Case("index path holds a file that is not SQLite", ("ask", "x"), 3,
         "Error: state/kb.db: not a deploykb index (file is not a database); delete it or pass --db",
         lambda tmp: ((tmp / "state").mkdir(), (tmp / "state" / "kb.db").write_text("notes\n" * 50))),
    Case("index path holds another program's SQLite file", ("ask", "x"), 3,
         "Error: state/kb.db: not a deploykb index (it holds other tables: cookies); delete it or pass --db",
         lambda tmp: ((tmp / "state").mkdir(),
                      sqlite3.connect(tmp / "state" / "kb.db").execute("CREATE TABLE cookies (x)"))),
    Case("damaged index (pages overwritten)", ("ask", "x", "--findings", "findings"), 3,
         "Error: state/kb.db: not a deploykb index or a damaged one (malformed database schema (?)); delete it and run `deploykb ingest`, or pass --db",
         index_and(spoil_pages)),
    Case("a stored vector of the wrong length: rebuilt", ("ask", "NaN probability tensor", "--findings", "findings", "--gpu", "sm120"), 0,
         "deploykb: index at state/kb.db holds 4 damaged vector(s); building it from 2 findings folder(s)...",
         index_and(spoil_vector)),
    Case("index of an older schema: rebuilt in one transaction", ("ask", "NaN probability tensor", "--findings", "findings", "--gpu", "sm120"), 0,
         "deploykb: index at state/kb.db was built by schema 1, parser {parser}, model hash-64; building it from 2 findings folder(s)...",
         index_and(old_schema)),
    Case("read-only index while findings changed", ("ask", "NaN probability tensor", "--findings", "findings", "--gpu", "sm120"), 0,
         "warning: findings changed since the index at state/kb.db was built, but it is read-only: answering from it as it is. To refresh: `deploykb ingest --db state/kb.db` as a user who can write it",
         index_and(make_read_only)),
    Case("index in a read-only folder, nothing changed (read, nothing written)", ("ingest", "--findings", "findings"), 0,
         "{findings} findings unchanged; nothing to embed", index_and(folder_read_only)),
    Case("team folder deleted: its rows are pruned", ("ask", "NaN probability tensor", "--gpu", "sm120", "--json"), 0,
         "deploykb: re-indexed changed findings (0 added, 0 updated, 1 removed)",
         index_and(delete_team), absent=('"id": "team-one"',)),
    Case("read-only index, team folder deleted: its findings are not served", ("ask", "NaN probability tensor", "--gpu", "sm120", "--json"), 0,
         "warning: 1 finding(s) in the index at state/kb.db come from files that are gone (findings): not served. To remove them: `deploykb ingest --db state/kb.db` as a user who can write it",
         index_and(delete_team_read_only), absent=('"id": "team-one"',)),
    Case("team folder moved: its old rows are pruned", ("ask", "NaN probability tensor", "--findings", "moved", "--gpu", "sm120"), 0,
         "deploykb: re-indexed changed findings (1 added, 0 updated, 1 removed)",
         index_and(move_team)),
    Case("findings folder that does not exist", ("ask", "x", "--findings", "nope"), 2,
         "Error: nope: no such findings folder"),
    # --- what is typed or piped
    Case("empty input", ("ask", "-"), 2,
         "Error: empty input: paste an error, a log, or a question", stdin="\n\n"),
    Case("no input at all", ("ask",), 2, "Error: no input: pass TEXT, - to read stdin, or --log FILE"),
    Case("--log file that does not exist", ("ask", "--log", "nope.log"), 2,
         "Error: --log nope.log: no such file"),
    Case("--log that is a folder", ("ask", "--log", "findings"), 2, "Error: --log findings: not a file",
         lambda tmp: (tmp / "findings").mkdir()),
    Case("unknown GPU name (answered without it)", ("ask", "x", "--gpu", "Voodoo5"), 0,
         "warning: --gpu 'Voodoo5': unknown GPU; use a name like 'B200' or a compute capability like 'sm120'; matching without the GPU"),
    Case("--model path that does not exist", ("ask", "x", "--model", "./no-such-model"), 4,
         "Error: ./no-such-model: no such file or directory; pass a local model directory or --arch"),
    Case("secret and private host in --cmd (never echoed)", ("ask", "NaN probability tensor contains either inf", "--gpu", "sm120", "--cmd",
         "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8 --api-key sk-proj-aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI --host gpu07.acme-ml.com", "--json"), 0,
         '      "command": "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8 --api-key <api-key> --host <host> --',
         prefix=True, absent=("sk-proj-aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI", "gpu07.acme-ml.com")),
    Case("quoted secret of several words in --cmd (never echoed)", ("ask", "NaN probability tensor contains either inf", "--gpu", "sm120", "--cmd",
         "vllm serve Qwen/Qwen3-8B --api-key 'my secret value' --port 8000", "--json"), 0,
         '''    "command": "vllm serve Qwen/Qwen3-8B --api-key '<redacted>' --port 8000"''',
         absent=("my secret value", "secret value")),
    Case("export format that does not exist", ("export", "--format", "pdf"), 2,
         "Error: --format 'pdf': choose md, csv, json or html"),
    Case("export --link-base to a javascript: address", ("export", "--link-base", "findings=javascript:alert(1)//"), 2,
         "Error: --link-base 'findings=javascript:alert(1)//': 'javascript:alert(1)//' is not an http://, https:// or file:// address; a link may point only to a web page or a file",
         lambda tmp: (tmp / "findings").mkdir()),
    # --- add
    Case("add --id that is not a slug", ("add", "--no-input", "--id", "Bad Id!", "--title", "t"), 2,
         "Error: --id 'Bad Id!': not a slug; use lower-case letters, digits, '-', '_' and '.'",
         lambda tmp: (tmp / "findings").mkdir()),
    Case("add --status that is not a status", ("add", "--no-input", "--status", "fine", "--title", "t"), 2,
         "Error: --status 'fine' is not one of: works, works-with-flags, broken, partial"),
    Case("add --symptom without a class", ("add", "--no-input", "--title", "t", "--symptom", "it broke"), 2,
         "Error: --symptom 'it broke': start it with its class, e.g. 'crash: it broke' (classes: nan, garbage-output, empty-output, accuracy, device-assert, illegal-memory-access, crash, hang, oom, slow, warning)",
         lambda tmp: (tmp / "findings").mkdir()),
    Case("add --id of a file that exists", ("add", "--no-input", "--id", "x", "--title", "t"), 2,
         "Error: findings/x.md already exists; use --force to replace it (the old file is kept as x.md.bak)",
         team(good_as("x"))),
    Case("add with an --api-key and a URL password (report masks them)",
         ("add", "--no-input", "--title", "t", "--model", "acme/M-7B", "--gpu", "sm120",
          "--symptom", "crash: boom", "--failing-cmd",
          "vllm serve acme/M-7B --api-key s3cretKeyValue99 --download-dir https://bob:hunter2pass@files.acme-ml.com/x"), 0,
         "  failing_command: api-key-flag …(26 chars) -> <redacted>",
         lambda tmp: (tmp / "findings").mkdir(), absent=("s3cretKeyValue99", "hunter2pass")),
    Case("add with an e-mail and an address (report names the kind, not the value)",
         ("add", "--no-input", "--title", "t", "--model", "acme/M-7B", "--gpu", "sm120",
          "--symptom", "crash: NCCL peer 10.1.1.1 closed; mail bob@gpu-box.acmecorp.ai"), 0,
         "  symptoms[1]: email …(23 chars) -> <email>",
         lambda tmp: (tmp / "findings").mkdir(), absent=("bob@", "gpu-box", "10.1.1.1")),
]  # fmt: skip


def invoke(args: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    import agent.cli  # noqa: F401  (registers every command)
    from agent.cli.app import app

    result = CliRunner().invoke(app, args, input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback: a bug, whatever the case expects
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def where(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEPLOYKB_DB", "state/kb.db")
    monkeypatch.setenv("DEPLOYKB_EMBEDDER", "hash")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("COLUMNS", "300")
    monkeypatch.delenv("DEPLOYKB_FINDINGS", raising=False)
    monkeypatch.setattr("agent.context.detect_gpu", lambda *a, **k: None)
    return tmp_path


def expected(case: Case, readme: bool = False) -> str:
    """The line a user sees; ``{findings}`` (the shipped findings and the one team file) is
    written ``N`` in the README, whose table would otherwise change with every new finding."""
    from kb.resources import shipped_findings_dir
    from kb.versions import PARSER_VERSION

    shipped = sum(1 for p in shipped_findings_dir().glob("*.md") if p.name != "README.md")
    line = case.line.replace("{parser}", PARSER_VERSION)
    return line.replace("{findings}", "N" if readme else str(shipped + 1))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_line_and_an_exit_code(case, where, monkeypatch):
    if case.setup is not None:
        case.setup(where)
    if "read-only" in case.name and os.geteuid() == 0:
        # root writes any file: make the index look read-only the way a user's would be
        import kb.store

        real = os.access
        monkeypatch.setattr(
            kb.store.os, "access",
            lambda p, mode: False if (str(p).endswith("kb.db") or "folder" in case.name and str(p).endswith("state")) and mode & os.W_OK else real(p, mode),
        )  # fmt: skip
    code, out, err = invoke(list(case.args), case.stdin)
    shown = (out + err).replace(f"{where}/", "").replace(f"{where.resolve()}/", "")
    lines = shown.splitlines()
    if case.prefix:
        assert any(x.startswith(expected(case)) for x in lines), shown
    else:
        assert expected(case) in lines, shown
    for secret in case.absent:
        assert secret not in shown
    assert code == case.code, shown
    assert "Traceback" not in shown
    if case.code != 0:
        errors = [x for x in err.splitlines() if x.startswith("Error:")]
        assert len(errors) <= 1, err  # one line, not a cascade


def table() -> str:
    """The README table, from ``CASES``."""
    rows = ["| bad input | what the user sees (one line) | exit |", "|---|---|---|"]
    for c in CASES:
        command = " ".join(a if " " not in a and len(a) < 40 else f'"{a[:37]}..."' for a in c.args)
        line = expected(c, readme=True).replace("|", "\\|").strip()
        rows.append(f"| {c.name} (`deploykb {command}`) | `{line}` | {c.code} |")
    return "\n".join(rows)


def test_readme_table_is_these_cases():
    readme = (REPO / "README.md").read_text()
    assert table() in readme, "run `python tests/test_bad_input.py` and paste its table"
    assert len(CASES) >= 30


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    print(table())
