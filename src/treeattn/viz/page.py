"""The page of ``treeattn view`` as one self-contained HTML file: the data as JSON, the
style and the script inline, nothing to fetch, so that it opens from disk anywhere.

This module draws nothing itself and imports no model: ``treeattn.analysis.view`` gathers
the data (trees, attention, each mechanism's panels), and ``page.js`` draws it in the
browser as SVG.
"""

from __future__ import annotations

import html
import json
from importlib.resources import files
from typing import Any

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
{style}</style>
</head>
<body>
<header>
<h1>{title}</h1>
<p class="meta">{meta}</p>
{drawn}{notes}<div class="controls">
{controls}<span class="meta">{hint}</span>
</div>
</header>
<main id="sentences"></main>
<script type="application/json" id="view-data">{data}</script>
<script>
{script}</script>
</body>
</html>
"""
# Only the controls that have something to choose are on the page: the layer slider for
# more than one layer, the head menu for more than one head of word-to-word attention.
LAYER_CONTROL = """<label>layer <input type="range" id="layer" min="1" max="1" value="1">
<span id="layer-value"></span></label>
"""
HEAD_CONTROL = """<label>head <select id="head"><option value="-1">mean of heads</option>
</select></label>
"""


def _asset(name: str) -> str:
    return files("treeattn.viz").joinpath(name).read_text(encoding="utf-8")


def render_page(data: dict[str, Any]) -> str:
    """The HTML page for ``data`` (``treeattn.analysis.view.view_data``)."""
    # Inside a script element only "</" can end it early: JSON allows "<\\/" for it.
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
    hierarchical = any(s["nodes"] for s in data["sentences"])
    shape = f"{count_of(data['layers'], 'layer')}, {count_of(data['heads'], 'head')} shown"
    if not data["layers"]:  # a parser: its label attention heads only
        shape = f"{count_of(data['heads'], 'label attention head')} shown"
    meta = (
        f"{data['mechanism']} attention, {data['task']} model; "
        f"{count_of(len(data['sentences']), 'sentence')} of {data['source']}; {shape}"
    )
    notes = "".join(f'<p class="notice">{html.escape(note)}</p>\n' for note in data["notes"])
    # Which trees are drawn and which dependencies their arcs are.
    lines = [data.get("trees_line", ""), data.get("arcs_line", "")]
    drawn = "".join(f'<p class="meta drawn">{html.escape(line)}</p>\n' for line in lines if line)
    controls = LAYER_CONTROL if data["layers"] > 1 else ""
    controls += HEAD_CONTROL if data["layers"] and data["heads"] > 1 else ""
    clickable = "a word or a green phrase node" if hierarchical else "a word"
    hint = f"click {clickable} to see where it attends" if data["layers"] else ""
    return TEMPLATE.format(
        title=html.escape(f"treeattn view: {data['title']}"),
        meta=html.escape(meta),
        drawn=drawn,
        notes=notes,
        controls=controls,
        hint=hint,
        data=payload,
        style=_asset("page.css"),
        script=_asset("page.js"),
    )


def count_of(number: int, thing: str) -> str:
    """``1 layer``, ``6 layers``."""
    return f"{number} {thing}{'' if number == 1 else 's'}"
