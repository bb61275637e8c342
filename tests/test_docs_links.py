"""The results pages' links resolve, and so do the places that cite a results section.

Every relative link in docs/RESULTS.md and docs/results/*.md (``[text](target)``, images
included; ``http(s):`` and ``mailto:`` targets are not checked) must name a file or folder
that exists, and its ``#anchor``, if any, a heading of the target file (or of the page
itself for a bare ``#anchor``), slugged as GitHub slugs headings: lowercased, every
character but letters, digits, ``_``, ``-`` and spaces dropped, spaces made ``-``, a
repeated slug numbered ``-1``, ``-2``. Links inside fenced code blocks are not links.

Code, configs, tests and the other docs cite a results section in plain text as
``docs/results/<file>.md#<anchor>``; each such citation must resolve the same way.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "docs" / "RESULTS.md", *sorted((ROOT / "docs" / "results").glob("*.md"))]
CITING = ("src", "configs", "tests", "benchmarks", "docs")
CITATION = re.compile(r"docs/results/([\w.-]+\.md)(?:#([\w-]+))?")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1", re.M | re.S)
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (links in it read as their text)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings, numbered as GitHub numbers repeats."""
    seen: dict[str, int] = {}
    found = set()
    for match in HEADING.finditer(FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken(page: Path, target: str) -> str | None:
    """Why a link from ``page`` to ``target`` does not resolve, or None when it does."""
    if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
        return None
    file_part, _, anchor = target.partition("#")
    path = (page.parent / file_part).resolve() if file_part else page
    if not path.exists():
        return f"no file {file_part}"
    if anchor and (path.is_dir() or anchor not in anchors(path)):
        return f"no heading #{anchor} in {path.name}"
    return None


def test_the_slugs_are_githubs():
    assert slug("`treeattn view`: page size (benchmarks/view_page.py)") == (
        "treeattn-view-page-size-benchmarksview_pagepy"
    )
    assert slug("English -> German, BLEU") == "english---german-bleu"
    assert slug("Where syntax pays (3): hierarchical generalization (McCoy et al. 2020)") == (
        "where-syntax-pays-3-hierarchical-generalization-mccoy-et-al-2020"
    )


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n## A section\n\n[ok](#a-section) [bad](#no-such)\n")
    (tmp_path / "other.md").write_text("## Here\n")
    assert broken(page, "#a-section") is None
    assert broken(page, "other.md#here") is None
    assert broken(page, "#no-such") == "no heading #no-such in page.md"
    assert broken(page, "other.md#no-such") == "no heading #no-such in other.md"
    assert broken(page, "missing.md") == "no file missing.md"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_resolves(page):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    bad = [
        f"{page.relative_to(ROOT)}: ({target}): {why}"
        for target in LINK.findall(text)
        if (why := broken(page, target))
    ]
    assert not bad, "\n".join(bad)


def test_every_citation_of_a_results_section_resolves():
    bad = []
    for folder in CITING:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".md", ".yaml", ".yml") or not path.is_file():
                continue
            for match in CITATION.finditer(path.read_text(encoding="utf-8")):
                target = match.group(1) + (f"#{match.group(2)}" if match.group(2) else "")
                why = broken(ROOT / "docs" / "results" / "x.md", target)
                if why:
                    bad.append(f"{path.relative_to(ROOT)}: docs/results/{target}: {why}")
    assert not bad, "\n".join(bad)
