"""A report opened in headless Chromium (Debian's, driven by Playwright): console errors,
failed loads, where the first screen's parts lie as the page opens (its sections folded),
then with every section unfolded: each figure's rendered size, the page's width against its
viewport (and the elements that stick out), its text, a full-page screenshot.

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
    #: as the page opened, sections folded: selector → (top, bottom) in px from the page's
    #: top, of the first element it matches (missing: none matched)
    boxes: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: as the page opened: how many sections were folded, and how many open
    folded: int = 0
    unfolded: int = 0


#: the first screen's parts (issue 40): the headline table and the figure
FIRST_SCREEN = ("#headline", "#fig-pareto img")
#: a laptop's window: what a reader sees before scrolling
FOLD_PX = 900


def open_report(page_path: Path, screenshot: Path, figures: tuple[str, ...],
                boxes: tuple[str, ...] = FIRST_SCREEN) -> Opened:
    """Open ``page_path`` from disk (offline), as a reader would: ``boxes``' places and a
    screenshot of the first screen (``screenshot`` named ``-first``) as it opens, then every
    folded section opened for the rest."""
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
            for selector in boxes:
                box = page.evaluate(
                    "s => { const e = document.querySelector(s); if (!e) return null;"
                    " const r = e.getBoundingClientRect();"
                    " return [r.top + window.scrollY, r.bottom + window.scrollY] }", selector)
                if box is not None:
                    seen.boxes[selector] = (float(box[0]), float(box[1]))
            seen.folded = int(page.evaluate(
                "document.querySelectorAll('details:not([open])').length"))
            seen.unfolded = int(page.evaluate("document.querySelectorAll('details[open]').length"))
            page.screenshot(path=str(screenshot.with_stem(screenshot.stem + "-first")))
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
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


def check_first_screen(seen: Opened) -> None:
    """What a reader sees before scrolling: the table and the figure, the rest folded; and
    the whole page, unfolded, no wider than the window."""
    assert seen.errors == [], seen.errors
    for selector in FIRST_SCREEN:
        assert selector in seen.boxes, (selector, seen.boxes)
        top, bottom = seen.boxes[selector]
        assert 0 < top < bottom <= FOLD_PX, (selector, seen.boxes)
    assert seen.folded >= 10 and seen.unfolded == 0, (seen.folded, seen.unfolded)
    assert seen.scroll_width <= seen.viewport_width == 1280, seen.overflowing
    assert all(w > 300 for w in seen.figures.values()), seen.figures


_PATH = re.compile(r"(?<![\w:/+.=\-~])/(?:[\w.@+~\-]+/){3,}[\w.@+~\-]*")
_SYSTEM = ("/usr/", "/bin/", "/sbin/", "/lib", "/opt/", "/etc/", "/dev/", "/proc/", "/sys/")


def machine_paths(page: str) -> list[str]:
    """Absolute paths of four parts or more in a page (figures' data: URIs aside) that name a
    machine's layout rather than its system: what a report must not show."""
    text = re.sub(r"data:[\w/+.\-]+;base64,[A-Za-z0-9+/=]+", "", page)
    return [p for p in _PATH.findall(text) if not p.startswith(_SYSTEM)]
