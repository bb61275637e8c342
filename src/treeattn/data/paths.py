"""Where the evaluation data lives (``$TREEATTN_DATA``, else ``../shared/data`` beside the
repo), and where treeattn keeps what it can make again (``$TREEATTN_CACHE``)."""

from __future__ import annotations

import os
from pathlib import Path

# The repository root when running from a checkout (src/treeattn/data/paths.py).
_CHECKOUT_ROOT = Path(__file__).resolve().parents[3]


def cache_dir() -> Path:
    """``$TREEATTN_CACHE``, else ``~/.cache/treeattn``: parser trees of data splits and the
    pretrained encoder's unpacked weights, all of it safe to delete."""
    return Path(os.environ.get("TREEATTN_CACHE") or Path.home() / ".cache" / "treeattn")


def data_dir() -> Path | None:
    """The data folder, or ``None`` when there is none (the generated ListOps still works).

    ``$TREEATTN_DATA`` if set; otherwise ``../shared/data`` beside the repository root (for
    a checkout) or beside the working directory (for an installed package).
    """
    env = os.environ.get("TREEATTN_DATA")
    if env:
        return Path(env)
    for root in (_CHECKOUT_ROOT, Path.cwd()):
        default = root.parent / "shared" / "data"
        if default.is_dir():
            return default
    return None


def require_data(*parts: str, root: str | os.PathLike[str] | None = None) -> Path:
    """Path of a data file or folder, e.g. ``require_data("sst", "dev.txt")``.

    ``root`` is the folder holding the data sets (default: ``data_dir()``). When ``root``
    is given and a file is asked for, ``root`` may also be the data set's own folder
    (``root / "dev.txt"``). A clear error when nothing is found.
    """
    if root is None:
        found = data_dir()
        if found is None:
            raise FileNotFoundError(
                "no data folder: set TREEATTN_DATA to the folder holding sst/, ptb-sample/, "
                "ud-en-ewt/ and multi30k/"
            )
        base, where = found, f" (TREEATTN_DATA={found})"
    else:
        base, where = Path(root), ""
    path = base.joinpath(*parts)
    if path.exists():
        return path
    if root is not None and len(parts) > 1 and base.joinpath(*parts[1:]).exists():
        return base.joinpath(*parts[1:])
    raise FileNotFoundError(f"{path} does not exist{where}")
