"""The HTML export: self-contained and escaped (static checks), and working in headless Chromium.

The browser tests drive Debian's ``chromium`` over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: JSON messages separated by NUL bytes on fds 3 and 4), with the
standard library only: they type in the filter box, click headers and copy buttons like a user.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_export import seed_findings  # the four seed deployments, shared

from kb.export import build_table
from kb.export_html import to_html
from kb.records import Finding, Fix, Framework, Hardware, Performance

H100 = Hardware(gpu="NVIDIA H100", count=4, sm="sm90")


def findings() -> list[Finding]:
    """The seed deployments, a regression (works, then broken) and a finding full of markup."""
    return [
        *seed_findings(),
        Finding(
            id="ds-fp8-h100-works",
            title="DeepSeek FP8 on H100 works",
            status="works",
            date="2026-01",
            model="deepseek-ai/DeepSeek-V3",
            quantization="fp8",
            hardware=H100,
            framework=Framework("vllm", "0.9.0"),
            performance=Performance(throughput_tok_s=1200, concurrency=64),
        ),
        Finding(
            id="ds-fp8-h100-regressed",
            title="DeepSeek FP8 on H100 broken after upgrade",
            status="broken",
            date="2026-05",
            model="deepseek-ai/DeepSeek-V3",
            quantization="fp8",
            hardware=H100,
            framework=Framework("vllm", "0.10.0"),
        ),
        Finding(
            id="markup",
            title='<script>alert("x")</script> & "quotes"',
            status="partial",
            model="evil/<b>Model</b>",
            hardware=H100,
            framework=Framework("vllm", "<i>1.0</i>"),
            fix=Fix(add=('--arg "<img src=x onerror=alert(1)>"',)),
            sources=("https://example.com/a?b=1&c=<2>",),
        ),
    ]


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("html") / "compat.html"
    path.write_text(to_html(build_table(findings(), generated="2026-06-01")), encoding="utf-8")
    return path


# --- static checks -------------------------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_page_is_self_contained(page):
    html = page.read_text()
    parser = _Tags()
    parser.feed(html)
    names = {tag for tag, _ in parser.tags}
    assert {"style", "script", "table"} <= names
    assert not names & {"link", "img", "iframe", "object", "embed", "video", "audio", "base"}
    assert all("src" not in attrs for _, attrs in parser.tags)  # inline script, nothing fetched
    assert not re.search(r"@import|url\(", html)
    hrefs = [attrs["href"] for tag, attrs in parser.tags if "href" in attrs]
    assert hrefs and {tag for tag, attrs in parser.tags if "href" in attrs} == {"a"}


def test_all_text_is_escaped(page):
    html = page.read_text()
    assert "<script>alert" not in html
    assert "<b>Model</b>" not in html and "<i>1.0</i>" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quotes&quot;" in html
    assert 'href="https://example.com/a?b=1&amp;c=&lt;2&gt;"' in html


def test_page_shows_counts_date_legend_and_links(page):
    html = page.read_text()
    assert "generated 2026-06-01 · 6 rows from 7 findings" in html
    assert 'href="findings/glm5-nvfp4-sm120.md"' in html
    assert 'href="https://github.com/sgl-project/sglang/issues/14311"' in html
    for word in ("works", "works with flags", "partial", "broken", "untested", "conflicting"):
        assert f'<span class="badge s-{word.replace(" ", "-")}">{word}</span>' in html
    assert 'data-copy="--disable-cuda-graph"' in html
    assert 'data-copy="--fp8-gemm-backend cutlass"' not in html  # a dead end in the seeds
    assert '759</span> <span class="unit">tok/s</span>' in html


# --- in the browser ------------------------------------------------------------------------------

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)"
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


class Browser:
    """A minimal DevTools-protocol client over ``--remote-debugging-pipe``."""

    def __init__(self, profile: Path) -> None:
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()

        def wire_fds() -> None:  # in the child: fd 3 is read by Chromium, fd 4 written
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe"],
            preexec_fn=wire_fds,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        msg: dict = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self._w, data) :]
        while True:
            reply = self._read()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def _read(self, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buf:
            ready, _, _ = select.select([self._r], [], [], max(0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def open(self, url: str) -> Tab:
        target = self.send("Target.createTarget", {"url": url})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        tab = Tab(self, session["sessionId"])
        deadline = time.monotonic() + 30
        page = json.dumps(url.split("#")[0])
        # At first the new tab may still show about:blank, "complete" as well: wait for ours.
        loaded = f"document.readyState === 'complete' && location.href.split('#')[0] === {page}"
        while not tab.js(loaded):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not load")
            time.sleep(0.05)
        return tab

    def close(self) -> None:
        try:
            self.send("Browser.close")
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        finally:
            os.close(self._w)
            os.close(self._r)


class Tab:
    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def send(self, method: str, params: dict | None = None) -> dict:
        return self.browser.send(method, params, self.session)

    def js(self, expression: str):
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element."""
        box = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1},
            )

    def type(self, selector: str, text: str) -> None:
        self.js(f"document.querySelector({json.dumps(selector)}).focus()")
        self.send("Input.insertText", {"text": text})

    def visible_models(self) -> list[str]:
        return self.js(
            "[...document.querySelectorAll('#compat tbody tr.row')]"
            ".filter(r => !r.hidden && r.offsetParent !== null)"
            ".map(r => r.querySelector('.model').textContent)"
        )


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    b = Browser(tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


ALL = [
    "deepseek-ai/DeepSeek-V3",
    "nvidia/GLM-5-NVFP4",
    "nvidia/Kimi-K2-Thinking-NVFP4",
    "moonshotai/Kimi-K2.5",
    "nvidia/Qwen3.5-397B-A17B-NVFP4",
    "evil/<b>Model</b>",
]


@pytest.mark.browser
@needs_chromium
def test_dump_dom_applies_a_filter_from_the_url_hash(page, tmp_path):
    """The plain ``--dump-dom`` route: the page reads ``#filter=`` before the DOM is dumped."""
    out = subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={tmp_path}",
            "--dump-dom",
            f"{page.as_uri()}#filter=GLM",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    rows = re.findall(r'<tr class="row[^"]*"([^>]*)>.*?<div class="model">(.*?)</div>', out)
    assert len(rows) == 6
    shown = [re.sub(r"<[^>]+>", "", model) for attrs, model in rows if " hidden" not in attrs]
    assert shown == ["nvidia/GLM-5-NVFP4"]
    assert '<span class="shown" id="shown" aria-live="polite">1 of 6 rows</span>' in out


@pytest.mark.browser
@needs_chromium
def test_table_renders_every_row(browser, page):
    tab = browser.open(page.as_uri())
    assert tab.visible_models() == ALL
    assert tab.js("document.getElementById('shown').textContent") == "6 of 6 rows"
    status = tab.js(
        "[...document.querySelectorAll('#compat tbody tr.row')]"
        ".map(r => r.querySelector('.c-status .badge').textContent)"
    )
    # GLM-5 is unresolved in the seeds (broken); Kimi K2-Thinking is a working configuration
    assert status == [
        "broken",
        "broken",
        "works",
        "works",
        "works with flags",
        "partial",
    ]
    history = tab.js(
        "[...document.querySelectorAll('tr.conflicted .conflict li')]"
        ".map(li => [li.title, li.innerText.trim()])"
    )
    assert history == [
        ["ds-fp8-h100-regressed", "broken 2026-05"],
        ["ds-fp8-h100-works", "works 2026-01"],
    ]


@pytest.mark.browser
@needs_chromium
def test_typing_in_the_filter_hides_other_rows(browser, page):
    tab = browser.open(page.as_uri())
    tab.type("#q", "kimi")
    assert tab.visible_models() == ["nvidia/Kimi-K2-Thinking-NVFP4", "moonshotai/Kimi-K2.5"]
    assert tab.js("document.getElementById('shown').textContent") == "2 of 6 rows"
    assert tab.js("location.hash") == "#filter=kimi"
    tab.type("#q", " cuda-graph")  # every word must match; flags are searchable
    assert tab.visible_models() == ["nvidia/Kimi-K2-Thinking-NVFP4"]
    tab.type("#q", "zzz")
    assert tab.visible_models() == []
    assert tab.js("document.querySelector('tr.empty').hidden") is False


@pytest.mark.browser
@needs_chromium
def test_select_filters_and_the_hash_link(browser, page):
    tab = browser.open(page.as_uri())
    tab.js(
        "const s = document.getElementById('f-gpu'); s.value = 'sm90';"
        " s.dispatchEvent(new Event('change'))"
    )
    assert tab.visible_models() == ["deepseek-ai/DeepSeek-V3", "evil/<b>Model</b>"]
    tab.js(
        "const t = document.getElementById('f-status'); t.value = 'conflicting';"
        " t.dispatchEvent(new Event('change'))"
    )
    assert tab.visible_models() == ["deepseek-ai/DeepSeek-V3"]
    assert tab.js("location.hash") == "#status=conflicting&gpu=sm90"
    linked = browser.open(f"{page.as_uri()}#status=works%20with%20flags")
    assert linked.visible_models() == ["nvidia/Qwen3.5-397B-A17B-NVFP4"]
    assert linked.js("document.getElementById('f-status').value") == "works with flags"


@pytest.mark.browser
@needs_chromium
def test_clicking_headers_sorts(browser, page):
    tab = browser.open(page.as_uri())
    tab.click('#compat th[data-key="throughput"] button')
    assert tab.visible_models()[:2] == ["deepseek-ai/DeepSeek-V3", "moonshotai/Kimi-K2.5"]
    assert tab.js(
        "document.querySelector('th[data-key=throughput]').getAttribute('aria-sort')"
    ) == ("descending")
    tab.click('#compat th[data-key="throughput"] button')
    # Ascending: rows without a figure stay at the bottom.
    assert tab.visible_models()[:2] == ["moonshotai/Kimi-K2.5", "deepseek-ai/DeepSeek-V3"]
    tab.click('#compat th[data-key="model"] button')
    assert tab.visible_models() == [
        "deepseek-ai/DeepSeek-V3",
        "nvidia/GLM-5-NVFP4",
        "moonshotai/Kimi-K2.5",
        "nvidia/Kimi-K2-Thinking-NVFP4",
        "nvidia/Qwen3.5-397B-A17B-NVFP4",
        "evil/<b>Model</b>",  # no known family: last
    ]
    tab.click('#compat th[data-key="model"] button')
    assert tab.visible_models()[:2] == ["evil/<b>Model</b>", "nvidia/Qwen3.5-397B-A17B-NVFP4"]
    assert tab.js("location.hash") == "#sort=model:desc"


@pytest.mark.browser
@needs_chromium
def test_copy_button_puts_the_flag_on_the_clipboard(browser, page):
    browser.send(
        "Browser.grantPermissions",
        {"permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
    )
    tab = browser.open(page.as_uri())
    tab.send("Emulation.setFocusEmulationEnabled", {"enabled": True})
    tab.js("window.prompt = (m, v) => { window.prompted = v; }")
    tab.click('button.copy[data-copy="--disable-cuda-graph"]')
    deadline = time.monotonic() + 5
    while not tab.js("document.querySelector('button.copy.done') !== null"):
        assert time.monotonic() < deadline, tab.js("window.prompted")
        time.sleep(0.05)
    assert tab.js("navigator.clipboard.readText()") == "--disable-cuda-graph"
