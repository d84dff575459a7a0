"""A run folder's flamegraph SVG opened on its own (its script runs: zoom and search controls) and
seen as an image (an <img>, how GitHub shows an attached SVG: no script, so no dead controls)."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from dynaprof.render.flamegraph import flamegraph_svg
from tests.factories import seed_session

SVG_NS = "{http://www.w3.org/2000/svg}"


def _hidden_without_script(svg: str) -> dict[str, bool]:
    """Per control class: whether the markup alone (no script) hides it."""
    out = {}
    for el in ET.fromstring(svg.encode()).iter(f"{SVG_NS}text"):
        cls = el.get("class", "")
        for name in ("fg-search", "fg-unzoom", "fg-details"):
            if name in cls.split():
                out[name] = "display:none" in (el.get("style") or "")
    return out


def test_controls_are_hidden_until_the_script_shows_them() -> None:
    svg = flamegraph_svg(seed_session(), "compiler")
    assert _hidden_without_script(svg) == {"fg-search": True, "fg-unzoom": True, "fg-details": True}
    assert "Click a frame" in svg  # the hint is there, for the script to show


@pytest.mark.browser
def test_opened_on_its_own_the_controls_work_and_as_an_image_none_is_drawn(browser: Any, tmp_path: Path) -> None:
    svg_path = tmp_path / "flame-compiler.svg"
    svg_path.write_text(flamegraph_svg(seed_session(), "compiler"), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(svg_path.as_uri())
    assert page.locator(".fg-search").is_visible()
    assert "Click a frame" in (page.locator(".fg-details").text_content() or "")
    assert page.locator(".fg-details").is_visible()
    assert not page.locator(".fg-unzoom").is_visible()  # until a frame is zoomed
    assert errors == []
    # as an <img>: the same file, drawn without its script; its pixels above the frames (where
    # "Search" sits, top right) are the background only, as in the static PR picture
    html = tmp_path / "img.html"
    # a data: URI (a file: image would taint the canvas that reads the pixels back)
    data = base64.b64encode(svg_path.read_bytes()).decode()
    html.write_text(f'<!doctype html><body style="margin:0"><img id="i" src="data:image/svg+xml;base64,{data}"></body>')
    page.goto(html.as_uri())
    page.wait_for_function("document.getElementById('i').complete")
    box = page.locator("#i").bounding_box()
    assert box is not None and box["width"] > 800
    colours = page.evaluate("""() => {
        const img = document.getElementById('i'), c = document.createElement('canvas');
        c.width = img.naturalWidth; c.height = img.naturalHeight;
        const g = c.getContext('2d'); g.drawImage(img, 0, 0);
        const d = g.getImageData(c.width - 90, 12, 80, 20).data, seen = new Set();
        for (let i = 0; i < d.length; i += 4) seen.add(d[i] + ',' + d[i + 1] + ',' + d[i + 2]);
        return seen.size;
    }""")
    assert colours == 1, f"something is drawn where the Search control was: {colours} colours"
    page.close()
