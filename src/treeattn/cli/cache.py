"""The ``cache`` command: what the cache holds (parser trees, the pretrained encoder's
unpacked weights, generated training sets), and clearing it."""

from __future__ import annotations

import argparse
from pathlib import Path

from treeattn.cli.status import OK

# Measured on the shipped parser's trees: Multi30k val (1,014 sentences, 12,167 words)
# takes 181,759 bytes, 2.9 times its text.
SIZE_HELP = (
    "A cached split costs about 15 bytes a word, three times its text: Multi30k val "
    "(1,014 sentences) 182 kB, so Multi30k train (29,000) about 5.2 MB and SST train "
    "(8,544) about 2.4 MB."
)


def add_cache(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cache",
        help="show or clear the cache of parser trees, unpacked weights and generated data",
        description="The parser's trees of data splits (and of input given with "
        "translate --cache) are kept under $TREEATTN_CACHE/trees (default: "
        "~/.cache/treeattn/trees), one file of bracketed trees a line per split and "
        f"parser, so that each is parsed once. {SIZE_HELP} The pretrained encoder's "
        "weights, unpacked from their package once (91 MB for MiniLM), are kept under "
        "$TREEATTN_CACHE/weights, named by their sha256. The generated McCoy training "
        "sets (13 MB per 100,000 pairs) are kept under $TREEATTN_CACHE/mccoy. Clearing is "
        "safe: trees are parsed, weights unpacked and training sets drawn again when needed.",
    )
    p.add_argument(
        "action",
        nargs="?",
        choices=("info", "clear"),
        default="info",
        help="info (the default): the folder, each file with its size and number of "
        "trees, and the total; clear: delete those files",
    )
    p.set_defaults(run=_cache)


def _cache(args: argparse.Namespace) -> int:
    from treeattn.data.paths import cache_dir

    cleared = 0
    kinds = (("trees", "*.txt"), ("weights", "*.safetensors"), ("mccoy", "*.tsv"))
    for kind, pattern in kinds:
        folder = cache_dir() / kind
        # Only the files treeattn writes there (and writes cut short), whatever else a
        # mistaken $TREEATTN_CACHE may hold.
        files = sorted(folder.glob(pattern)) + sorted(folder.glob(pattern + "*.partial"))
        total = sum(path.stat().st_size for path in files)
        if args.action == "clear":
            for path in files:
                path.unlink()
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
            print(f"{folder}: removed {_count(len(files))}, {_size(total)}")
            cleared += len(files)
            continue
        print(f"{folder}{'' if folder.is_dir() else ' (absent: nothing cached)'}")
        for path in files:
            trees = f"  {_lines(path)} trees" if kind == "trees" else ""
            print(f"  {path.name}  {_size(path.stat().st_size):>9}{trees}")
        print(f"{_count(len(files))}, {_size(total)}")
    return OK


def _count(files: int) -> str:
    return f"{files} file" if files == 1 else f"{files} files"


def _lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def _size(size: int) -> str:
    """A size in bytes, with a decimal unit: ``512 B``, ``17.7 kB``, ``5.2 MB``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"
