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
import struct
import subprocess
import time
import zlib
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_export import seed_findings  # the four seed deployments, shared

from kb.export import build_table
from kb.export_html import to_html
from kb.records import Finding, Fix, Framework, Hardware, Performance

REPO = Path(__file__).resolve().parent.parent
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
    for word in ("works", "works-with-flags", "partial", "broken", "untested", "conflicting"):
        assert f'<span class="badge s-{word.replace(" ", "-")}">{word}</span>' in html
    assert 'data-copy="--disable-cuda-graph"' in html
    assert 'data-copy="--fp8-gemm-backend cutlass"' not in html  # a dead end in the seeds
    assert '759</span> <span class="unit">tok/s</span>' in html


def test_grid_comes_first_then_rows_grouped_by_family(page):
    html = page.read_text()
    assert html.index('id="grid"') < html.index('id="compat"') < html.index('class="legend"')
    groups = re.findall(r'<tr class="group" data-family="([^"]+)">', html)
    assert groups == ["DeepSeek", "GLM-5", "Kimi K2", "Qwen3.5", "(other)"]
    assert 'Kimi K2 <span class="gcount">2 rows · 2 findings</span>' in html
    # each grid cell counts the findings behind it and links to them
    kimi = re.search(r'<a class="mcell s-works" href="#family=Kimi%20K2&amp;gpu=sm120"[^>]*>', html)
    assert kimi and "findings: kimi-k2-thinking-nvfp4-sm120, kimi-k25-int4-eagle3-sm120" in kimi[0]
    assert '<span class="mword">works</span><span class="mn">2 findings</span>' in html
    assert 'href="#family=DeepSeek&amp;gpu=sm90"' in html
    assert '<span class="mword">conflicting</span><span class="mn">2 findings</span>' in html


def test_one_word_for_disagreement_in_grid_rows_and_legend(page):
    html = page.read_text()
    assert "mixed" not in html.lower()
    legend = html[html.index('class="legend"') :]
    assert legend.count('<span class="badge s-conflicting">conflicting</span>') == 1


def test_links_work_wherever_the_page_is_opened(tmp_path):
    """Findings known by their file link to it by absolute file:// URI, not a relative path."""
    team = tmp_path / "team"
    shipped = [replace(f, path=str(tmp_path / "shipped" / f"{f.id}.md")) for f in seed_findings()]
    ours = replace(findings()[4], path=str(team / "ds-fp8-h100-works.md"))
    html = to_html(build_table([*shipped, ours]))
    hrefs = re.findall(r'<a href="([^"]+)" class="fid"', html)
    assert len(hrefs) == 5 and all(h.startswith("file:///") for h in hrefs)
    assert (team / "ds-fp8-h100-works.md").as_uri() in hrefs


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
        "works-with-flags",
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
    linked = browser.open(f"{page.as_uri()}#status=works-with-flags")
    assert linked.visible_models() == ["nvidia/Qwen3.5-397B-A17B-NVFP4"]
    assert linked.js("document.getElementById('f-status').value") == "works-with-flags"


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


# --- the screenshot: the grid first --------------------------------------------------------------


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and rows of RGB(A) bytes of an 8-bit, non-interlaced PNG (what Chromium
    writes), decoded with the standard library."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, idat = 8, {}, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IDAT":
            idat += body
        chunks.setdefault(kind, body)
        pos += 12 + length
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, interlace) == (8, 0) and color in (2, 6)
    bpp = 3 if color == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, [row[i : i + 3] for row in rows for i in range(0, stride, bpp)]


@pytest.mark.browser
@needs_chromium
def test_screenshot_shows_the_grid_above_the_rows(browser, page, tmp_path):
    """scripts/screenshot_export.sh takes the page's screenshot in headless Chromium; the same
    page laid out at the same size has the whole grid in view and above the first row, and the
    screenshot shows a grid cell's colour where the layout puts it."""
    width, height = 1280, 900
    out = tmp_path / "shot"
    env = {**os.environ, "CHROMIUM": CHROMIUM, "WIDTH": str(width), "HEIGHT": str(height)}
    subprocess.run(
        ["bash", str(REPO / "scripts" / "screenshot_export.sh"), "--html", str(page), str(out)],
        env=env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    png = out / "compat.png"
    w, h, pixels = png_pixels(png)
    assert (w, h) == (width, height)

    tab = browser.open(page.as_uri())
    tab.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    boxes = tab.js(
        "(() => { const box = s => { const r = document.querySelector(s).getBoundingClientRect();"
        " return {top: r.top, bottom: r.bottom, left: r.left}; };"
        " return {grid: box('#matrix'), row: box('#compat tbody tr.row'),"
        " heading: box('#rh'), cell: box('#matrix a.mcell.s-works')}; })()"
    )
    assert tab.js("window.scrollY") == 0
    assert 0 < boxes["grid"]["top"] < boxes["grid"]["bottom"] <= height  # all of it in view
    assert boxes["grid"]["bottom"] <= boxes["heading"]["top"] < boxes["row"]["top"]
    # the "works" cell's background (--ok-bg, #dafbe1) is in the screenshot where it is laid out
    cell = boxes["cell"]
    x, y = int(cell["left"]) + 3, int((cell["top"] + cell["bottom"]) / 2)
    r, g, b = pixels[y * w + x]
    assert (abs(r - 0xDA), abs(g - 0xFB), abs(b - 0xE1)) < (8, 8, 8), (r, g, b)


@pytest.mark.browser
@needs_chromium
def test_grid_is_refined_by_quantization_and_framework(browser, page):
    tab = browser.open(page.as_uri())

    def cell(family: str, sm: str) -> list[str]:
        return tab.js(
            f"(() => {{ const a = document.querySelector("
            f'\'#matrix a.mcell[data-family="{family}"][data-gpu="{sm}"]\');'
            " return [a.querySelector('.mword').textContent,"
            " a.querySelector('.mn').textContent]; })()"
        )

    assert cell("Kimi K2", "sm120") == ["works", "2 findings"]
    tab.js(
        "const s = document.getElementById('f-quant'); s.value = 'int4';"
        " s.dispatchEvent(new Event('change'))"
    )
    assert cell("Kimi K2", "sm120") == ["works", "1 finding"]
    assert cell("GLM-5", "sm120") == ["untested", ""]
    assert tab.visible_models() == ["moonshotai/Kimi-K2.5"]  # the rows follow the refinement
    assert tab.js("location.hash") == "#quant=int4"
    linked = browser.open(f"{page.as_uri()}#framework=vllm")
    assert linked.js("document.getElementById('f-framework').value") == "vllm"
    assert (
        linked.js(
            "document.querySelector('#matrix a.mcell[data-family=DeepSeek][data-gpu=sm90]')"
            ".querySelector('.mword').textContent"
        )
        == "conflicting"
    )
    assert (
        linked.js(
            "[...document.querySelectorAll('#matrix .mword')].filter(e => e.textContent !== "
            "'untested').length"
        )
        == 1
    )


@pytest.mark.browser
@needs_chromium
def test_clicking_a_grid_cell_shows_its_rows_and_findings(browser, page):
    tab = browser.open(page.as_uri())
    tab.click('#matrix a.mcell[data-family="Kimi K2"][data-gpu="sm120"]')
    assert tab.visible_models() == ["nvidia/Kimi-K2-Thinking-NVFP4", "moonshotai/Kimi-K2.5"]
    assert tab.js("location.hash") == "#gpu=sm120&family=Kimi%20K2"
    groups = tab.js(
        "[...document.querySelectorAll('#compat tr.group')].filter(g => !g.hidden)"
        ".map(g => g.dataset.family)"
    )
    assert groups == ["Kimi K2"]
    ids = tab.js(
        "[...document.querySelectorAll('#compat tr.row')].filter(r => !r.hidden)"
        ".flatMap(r => [...r.querySelectorAll('a.fid')].map(a => a.textContent))"
    )
    assert ids == ["kimi-k2-thinking-nvfp4-sm120", "kimi-k25-int4-eagle3-sm120"]


@pytest.mark.browser
@needs_chromium
def test_sorting_leaves_the_family_groups_and_reset_brings_them_back(browser, page):
    tab = browser.open(page.as_uri())
    visible_groups = (
        "[...document.querySelectorAll('#compat tr.group')].filter(g => !g.hidden).length"
    )
    assert tab.js(visible_groups) == 5
    tab.click('#compat th[data-key="date"] button')
    assert tab.js(visible_groups) == 0
    tab.click("#reset")
    assert tab.js(visible_groups) == 5
    order = tab.js(
        "[...document.querySelectorAll('#compat tbody tr')].filter(r => !r.hidden)"
        ".map(r => r.classList.contains('group') ? '#' + r.dataset.family :"
        " r.querySelector('.model').textContent)"
    )
    assert order[:4] == ["#DeepSeek", "deepseek-ai/DeepSeek-V3", "#GLM-5", "nvidia/GLM-5-NVFP4"]
