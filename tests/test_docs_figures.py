"""One source per figure: every figure README.md and the parser cards state is in the results.

A figure is a number with a decimal point (``89.66``, ``70.96``, ``0.00``; thousands
commas allowed, ``1,775.5``) in the prose and tables of README.md and
``src/treeattn/resources/parser-*.md``. Each must appear, as the same token, in
docs/RESULTS.md or docs/results/*.md, so that a figure cannot be quoted in two versions.

Not figures, and not checked: what is inside fenced code blocks, inline code (backticks)
and link targets or bare URLs; a number with two or more dots (a version: ``2.13.0``); a
number glued to a letter or a dot before it (``v2.1``, ``l6``, ``.safetensors``); and a
number right after a name that versions follow (``Python 3.11``, ``UD release 2.16``: the
words in ``VERSION_WORDS``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
STATED = [
    ROOT / "README.md",
    *sorted((ROOT / "src" / "treeattn" / "resources").glob("parser-*.md")),
]
VERSION_WORDS = ("python", "pytorch", "torch", "release", "version", "cuda", "ud", "udpipe")

FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`]*`")  # it may span lines
LINK_TARGET = re.compile(r"\]\([^)]*\)|<https?://[^>]*>|https?://\S+")
# A run of digits and dots (with thousands commas) not glued to a letter, digit or dot before.
NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})*(?:\.\d+)+|(?<![\w.])\d+(?:\.\d+)+")
WORD_BEFORE = re.compile(r"([A-Za-z]+)\W{0,2}$")


def prose(text: str) -> str:
    """The text with code blocks, inline code and link targets blanked out (line breaks kept,
    so that line numbers hold)."""
    for pattern in (FENCE, INLINE_CODE, LINK_TARGET):
        text = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    return text


def figures(text: str) -> list[tuple[str, int]]:
    """The figures of a text and where each starts: numbers with one decimal point, versions
    left out."""
    found = []
    for match in NUMBER.finditer(text):
        if match.group().count(".") != 1:
            continue
        before = WORD_BEFORE.search(text[max(0, match.start() - 20) : match.start()])
        if before and before.group(1).lower() in VERSION_WORDS:
            continue
        found.append((match.group(), match.start()))
    return found


def results_figures() -> set[str]:
    """Every number with a decimal point the results state, code blocks included."""
    files = [ROOT / "docs" / "RESULTS.md", *sorted((ROOT / "docs" / "results").glob("*.md"))]
    return {m.group() for f in files for m in NUMBER.finditer(f.read_text(encoding="utf-8"))}


def test_the_figure_rule():
    text = (
        "F1 89.66 (was 89.3), 1,775.5 a word; PyTorch 2.13.0, Python 3.11, UD release 2.16, "
        "`88.1` and [see](docs/x-1.5.md) and v2.1 and file.v1.2; 0.00 and 12.5%, 3.0x."
    )
    assert [number for number, _ in figures(prose(text))] == [
        *["89.66", "89.3", "1,775.5", "0.00", "12.5", "3.0"]
    ]


@pytest.mark.parametrize("path", STATED, ids=lambda p: p.name)
def test_every_figure_stated_is_in_the_results(path):
    known = results_figures()
    text = prose(path.read_text(encoding="utf-8"))
    missing = []
    for number, start in figures(text):
        if number not in known:
            line = text[:start].count("\n") + 1
            missing.append(f"{path.relative_to(ROOT)}:{line}: {number}")
    assert not missing, "figures the results do not state:\n" + "\n".join(missing)


def test_each_headline_is_in_the_section_it_links_to():
    """docs/RESULTS.md's table: every figure of a row is stated in the results file (or
    files) that row links to, so the headline is a copy of its section's figure."""
    page = ROOT / "docs" / "RESULTS.md"
    rows = [line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    assert len(rows) > 20
    missing = []
    for row in rows[1:]:
        targets = re.findall(r"\]\((results/[\w.-]+\.md)", row)
        assert targets or "---" in row, f"a headline row without a results link: {row}"
        stated = {
            m.group()
            for target in targets
            for m in NUMBER.finditer((page.parent / target).read_text())
        }
        missing += [
            f"{number} ({row[:60]}...)" for number, _ in figures(prose(row)) if number not in stated
        ]
    assert not missing, "headline figures not in their section's file:\n" + "\n".join(missing)
