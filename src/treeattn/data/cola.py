"""The Corpus of Linguistic Acceptability (Warstadt, Singh & Bowman, TACL 2019).

Sentences from linguistics publications, each labelled acceptable (1) or unacceptable (0)
by its source's authors. The public release has three files under ``cola/``:
``in_domain_train.tsv`` (8,551), ``in_domain_dev.tsv`` (527) and ``out_of_domain_dev.tsv``
(516, from six publications absent from train); the test sets are not public, so both dev
files are held out and the checkpoint is chosen on a share carved from train:

* ``train``: ``in_domain_train.tsv`` less the carved share (7,696 sentences);
* ``dev``: the carved share, ``DEV_SHARE`` of the training file (855 sentences), fixed by
  ``DEV_SEED`` (``treeattn.data.sampling``), the same for every model;
* ``in_domain``: ``in_domain_dev.tsv``; ``out_of_domain``: ``out_of_domain_dev.tsv``.

Each line: the source's code, the label, the author's mark (``*``, ``?*``, ``??`` ... where
unacceptable, else blank) and the sentence as raw text, tab-separated, no header; the
label is the class, the mark only a record.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from treeattn.data.paths import require_data
from treeattn.data.sampling import seeded_order
from treeattn.errors import FormatError
from treeattn.utf8 import read_utf8, text_lines

__all__ = [
    "COLA_FILES",
    "COLA_FOLDER",
    "COLA_SPLITS",
    "DEV_SEED",
    "DEV_SHARE",
    "ColaExample",
    "load_cola",
    "read_cola_file",
]

COLA_FOLDER = "cola"
# The release's files; train and dev are both carved from the first.
COLA_FILES = {
    "train": "in_domain_train.tsv",
    "in_domain": "in_domain_dev.tsv",
    "out_of_domain": "out_of_domain_dev.tsv",
}
COLA_SPLITS = ("train", "dev", "in_domain", "out_of_domain")
DEV_SHARE = 0.1  # of the training file, carved off to choose the checkpoint
DEV_SEED = "cola-dev"
COLUMNS = ("source", "label", "mark", "sentence")


@dataclass(frozen=True)
class ColaExample:
    """One line of a CoLA file: ``source`` the publication's code (``gj04``), ``label`` 1
    (acceptable) or 0, ``mark`` the author's judgment mark (empty where acceptable),
    ``sentence`` the raw text, ``line`` its line in the file."""

    source: str
    label: int
    mark: str
    sentence: str
    line: int


def read_cola_file(path: str | Path) -> list[ColaExample]:
    """Every line of a CoLA file. A line without four tab-separated columns, with an empty
    source or sentence, or a label other than 0 or 1 is a ``FormatError`` naming the file,
    line and column; so is an empty line. The mark is kept as written, not checked against
    the label: the release has an unacceptable sentence without one (train line 1514)."""
    path = Path(path)
    rows = []
    for number, line in enumerate(text_lines(read_utf8(path)), start=1):
        rows.append(_row(line, str(path), number))
    return rows


def _row(line: str, where: str, number: int) -> ColaExample:
    if not line.strip():
        raise FormatError("empty line", where, number, 1)
    fields = line.split("\t")
    if len(fields) != len(COLUMNS):
        raise FormatError(
            f"{len(fields)} tab-separated columns, expected {len(COLUMNS)} ({', '.join(COLUMNS)})",
            where,
            number,
            1,
        )
    source, label, mark, sentence = fields
    # 1-based column where each field starts, for the errors
    starts = [1 + sum(len(f) + 1 for f in fields[:k]) for k in range(len(fields))]
    if not source.strip():
        raise FormatError("empty source code", where, number, starts[0])
    if label not in ("0", "1"):
        raise FormatError(f"label {label!r} is not 0 or 1", where, number, starts[1])
    if not sentence.strip():
        raise FormatError("empty sentence", where, number, starts[3])
    return ColaExample(source.strip(), int(label), mark.strip(), sentence.strip(), number)


def cola_path(name: str, root: str | os.PathLike[str] | None = None) -> Path:
    """Path of the release's file ``COLA_FILES[name]`` (``root``: as ``require_data``)."""
    return require_data(COLA_FOLDER, COLA_FILES[name], root=root)


def carved_dev(count: int) -> list[int]:
    """The positions in a training file of ``count`` sentences that ``dev`` takes, in file
    order: the first ``DEV_SHARE`` of ``seeded_order(count, DEV_SEED)``."""
    return sorted(seeded_order(count, DEV_SEED)[: round(DEV_SHARE * count)])


def load_cola(split: str, root: str | os.PathLike[str] | None = None) -> list[ColaExample]:
    """One split (``COLA_SPLITS``): ``train`` and ``dev`` the training file's two parts,
    ``in_domain`` and ``out_of_domain`` the release's dev files, in file order."""
    if split not in COLA_SPLITS:
        raise ValueError(f"unknown CoLA split {split!r}; expected one of {', '.join(COLA_SPLITS)}")
    if split not in ("train", "dev"):
        return read_cola_file(cola_path(split, root))
    rows = read_cola_file(cola_path("train", root))
    dev = set(carved_dev(len(rows)))
    return [row for k, row in enumerate(rows) if (k in dev) == (split == "dev")]
