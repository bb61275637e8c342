"""Multi30k task 1: line-aligned English / German / French image descriptions.

Splits train / val / test_2016_flickr / test_2017_flickr with 29,000 / 1,014 / 1,000 /
1,000 sentence pairs. Lines are returned as stored, without the line break (a few end in a
space; two lines of ``train.de`` are ``@@`` upstream and are kept). Multi30k has no empty
lines, so an empty or blank line is an error rather than something to skip.
"""

from __future__ import annotations

import os
from pathlib import Path

from treeattn.data.paths import require_data
from treeattn.errors import FormatError
from treeattn.utf8 import read_utf8

MULTI30K_FOLDER = "multi30k"
MULTI30K_SPLITS = ("train", "val", "test_2016_flickr", "test_2017_flickr")
MULTI30K_LANGUAGES = ("en", "de", "fr")


def read_lines(path: str | os.PathLike[str]) -> list[str]:
    """The lines of a UTF-8 text file without line breaks.

    ``FormatError`` on a blank line or on bytes that are not UTF-8.
    """
    lines = read_utf8(path).split("\n")
    if lines[-1] == "":
        lines.pop()  # the line break that ends the last line (or an empty file)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise FormatError("empty line: every line must hold one sentence", str(path), number)
    return lines


def _check_names(split: str, *languages: str) -> None:
    if split not in MULTI30K_SPLITS:
        raise ValueError(
            f"unknown Multi30k split {split!r}; expected one of {', '.join(MULTI30K_SPLITS)}"
        )
    for language in languages:
        if language not in MULTI30K_LANGUAGES:
            raise ValueError(
                f"unknown Multi30k language {language!r}; expected one of "
                f"{', '.join(MULTI30K_LANGUAGES)}"
            )


def multi30k_path(split: str, language: str, root: str | os.PathLike[str] | None = None) -> Path:
    """Path of ``{split}.{language}``; ``root`` is the data folder holding ``multi30k/`` (or
    that folder itself), by default ``treeattn.data.paths.data_dir()``."""
    _check_names(split, language)
    return require_data(MULTI30K_FOLDER, f"{split}.{language}", root=root)


def read_parallel(
    src_path: str | os.PathLike[str], tgt_path: str | os.PathLike[str]
) -> list[tuple[str, str]]:
    """Pairs of line-aligned sentences; ``FormatError`` naming both files if lengths differ."""
    sources = read_lines(src_path)
    targets = read_lines(tgt_path)
    if len(sources) != len(targets):
        # Point at the first line of the longer file that has no partner.
        longer = src_path if len(sources) > len(targets) else tgt_path
        raise FormatError(
            f"line-aligned files differ in length: {src_path} has {len(sources)} lines, "
            f"{tgt_path} has {len(targets)}",
            str(longer),
            min(len(sources), len(targets)) + 1,
        )
    return list(zip(sources, targets, strict=True))


def load_multi30k(
    split: str,
    src: str = "en",
    tgt: str = "de",
    root: str | os.PathLike[str] | None = None,
) -> list[tuple[str, str]]:
    """``(source sentence, target sentence)`` pairs of one Multi30k split."""
    if src == tgt:
        raise ValueError(f"source and target language are both {src!r}")
    _check_names(split, src, tgt)  # before looking for files, so a typo is named as such
    return read_parallel(multi30k_path(split, src, root), multi30k_path(split, tgt, root))
