"""A report opened in headless Chromium (Debian's, driven by Playwright): console errors,
failed loads, each figure's rendered size, the page's width against its viewport (and the
elements that stick out), a full-page screenshot.

``make test`` installs Chromium and names it in ``BENCHLIB_CHROMIUM``: then a missing browser
fails the test. Run by hand without it, the test uses ``/usr/bin/chromium`` or is skipped."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

#: what the machine's closed network needs (no background fetches) and root needs (no sandbox)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    named = os.environ.get("BENCHLIB_CHROMIUM")
    if named:
        assert Path(named).is_file(), f"BENCHLIB_CHROMIUM={named} does not exist"
        return named
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("no Chromium (make test installs Debian's)")
    return found


@dataclass
class Opened:
    """What the browser saw."""

    errors: list[str] = field(default_factory=list)
    figures: dict[str, int] = field(default_factory=dict)  # id → rendered width (px)
    title: str = ""
    text: str = ""
    viewport_width: int = 0
    #: the document's scrollable width: over viewport_width means a horizontal scroll
    scroll_width: int = 0
    #: elements whose right edge passes the viewport: "tag#id.class (right edge px)"
    overflowing: list[str] = field(default_factory=list)


def open_report(page_path: Path, screenshot: Path, figures: tuple[str, ...]) -> Opened:
    """Open ``page_path`` from disk (offline), as a reader would."""
    from playwright.sync_api import sync_playwright

    seen = Opened()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error"
                    else None)
            page.on("pageerror", lambda e: seen.errors.append(str(e)))
            page.on("requestfailed", lambda r: seen.errors.append(f"failed: {r.url}"))
            page.goto(page_path.resolve().as_uri(), wait_until="load")
            for fig in figures:
                width = page.evaluate(
                    "id => { const i = document.querySelector(`#fig-${id} img`);"
                    " return i && i.complete ? i.naturalWidth : 0 }", fig)
                seen.figures[fig] = int(width)
            seen.viewport_width = int(page.evaluate("window.innerWidth"))
            seen.scroll_width = int(page.evaluate(
                "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"))
            seen.overflowing = list(page.evaluate(
                "w => [...document.querySelectorAll('body *')].filter(e => "
                "e.getBoundingClientRect().right > w + 0.5).slice(0, 20).map(e => "
                "`${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}"
                "${e.className ? '.' + e.className : ''} "
                "(${Math.round(e.getBoundingClientRect().right)})`)",
                seen.viewport_width))
            seen.title = page.title()
            seen.text = page.inner_text("body")
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return seen


_PATH = re.compile(r"(?<![\w:/+.=\-~])/(?:[\w.@+~\-]+/){3,}[\w.@+~\-]*")
_SYSTEM = ("/usr/", "/bin/", "/sbin/", "/lib", "/opt/", "/etc/", "/dev/", "/proc/", "/sys/")


def machine_paths(page: str) -> list[str]:
    """Absolute paths of four parts or more in a page (figures' data: URIs aside) that name a
    machine's layout rather than its system: what a report must not show."""
    text = re.sub(r"data:[\w/+.\-]+;base64,[A-Za-z0-9+/=]+", "", page)
    return [p for p in _PATH.findall(text) if not p.startswith(_SYSTEM)]
