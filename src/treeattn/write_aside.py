"""Files written whole or not at all: beside their place first, then renamed onto it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def write_aside(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A path beside ``path`` to write to; renamed onto ``path`` when the block ends
    without an error, removed when it raises.

    A reader, or a run stopped mid-write, sees the old file or the new one, never a part.
    The name holds the process id, so two processes writing the same file at once do not
    write into each other's part; it ends in ``.partial`` so that leftovers can be found.
    """
    path = Path(path)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        yield partial
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
