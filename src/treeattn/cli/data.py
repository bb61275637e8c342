"""The ``data`` command: what a data folder holds, counted by the readers training uses."""

from __future__ import annotations

import argparse
import os
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from treeattn.cli.status import BAD_INPUT, OK

if TYPE_CHECKING:
    from treeattn.data.check import DataFolder, SplitCheck


# The folders `treeattn lm-eval` reads by default (its BLiMP, SyntaxGym and agreement sets).
LM_EVAL_FOLDERS = ("blimp", "syntaxgym", "sva")


def add_data(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "data",
        help="check a data folder: each data set found, its counts, what is missing",
        description="Check the folder the real data sets are read from (SST, CoLA, the "
        "PTB sample, UD English-EWT, Multi30k; docs/guides/data.md says where each comes "
        "from): for each data set and split, the sentences treeattn's readers find, or "
        "the files missing and any file they refuse (named by file:line). Reading "
        "everything takes 10 to 30 seconds. Exit status 0 when every data set is there "
        "and readable, 2 when one is missing or broken (the configs that read it cannot "
        "run).",
    )
    p.add_argument(
        "folder",
        nargs="?",
        type=Path,
        help="the data folder (default: $TREEATTN_DATA, else ../shared/data beside the repository)",
    )
    p.set_defaults(run=_data)


def _data(args: argparse.Namespace) -> int:
    from treeattn.data.check import DATA_SETS, check_data_set
    from treeattn.data.paths import data_dir

    root = args.folder or data_dir()
    if root is None:
        raise FileNotFoundError(
            "no data folder: give one, or set TREEATTN_DATA "
            "(docs/guides/data.md says what goes in it)"
        )
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a folder")
    if args.folder:
        origin = ""
    else:
        origin = " ($TREEATTN_DATA)" if os.environ.get("TREEATTN_DATA") else " (the default)"
    print(f"data folder: {root}{origin}")
    failed = []
    for data_set in DATA_SETS:
        found = check_data_set(data_set, root)
        print(f"\n{data_set.folder}: {found.status}")
        print(f"  {data_set.release}\n  read by {data_set.used_by}")
        if found.status == "missing":
            print(f"  no file of it in {root / data_set.folder}")
        else:
            width = max(len(s.split) for s in found.splits)
            for split in found.splits:
                print(f"  {split.split:<{width}}  {_split_line(split, data_set)}")
        if found.status != "ok":
            failed.append(f"{data_set.folder} ({found.status})")
    known = {data_set.folder for data_set in DATA_SETS}
    others = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in known)
    benchmarks = [name for name in others if name in LM_EVAL_FOLDERS]
    if benchmarks:
        print(
            "\n" + _wrap(f"also in the folder, read by `treeattn lm-eval`: {', '.join(benchmarks)}")
        )
    others = [name for name in others if name not in LM_EVAL_FOLDERS]
    if others:
        print("\n" + _wrap(f"also in the folder, read by no config: {', '.join(others)}"))
    if failed:
        print(
            "\n"
            + _wrap(
                f"{len(failed)} of {len(DATA_SETS)} data sets missing or broken: "
                f"{', '.join(failed)}; the configs that read them cannot run"
            )
        )
        return BAD_INPUT
    print(f"\nall {len(DATA_SETS)} data sets present and readable")
    return OK


def _split_line(split: SplitCheck, data_set: DataFolder) -> str:
    if split.problem:
        return split.problem
    files = f"{split.files} files, " if split.files > 1 else ""
    line = f"{files}{split.count:,} {data_set.unit}"
    released = data_set.released[split.split]
    return line if split.count == released else f"{line} (the release has {released:,})"


def _wrap(text: str) -> str:
    """``text`` in lines of at most 80 columns, names never cut."""
    return textwrap.fill(text, width=80, break_on_hyphens=False, break_long_words=False)
