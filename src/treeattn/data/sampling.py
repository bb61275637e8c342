"""Fixed subsets of a data set's sentences: a held-out share carved from a training file,
and the first N training sentences of a shuffle, both the same for every model.

The shuffle is fixed by the data (a seed string and each sentence's position), never by a
run's seed, and it is written with SHA-256 rather than a random number generator, so that no
library version changes which sentences are drawn. The first N of the order are the first
N of every larger N too: a learning curve's smaller training sets lie inside its larger ones.

>>> seeded_order(5, "demo") == seeded_order(5, "demo")
True
>>> sorted(seeded_order(5, "demo"))
[0, 1, 2, 3, 4]
>>> first_of_shuffle(["a", "b", "c", "d"], 2, "demo") == first_of_shuffle(
...     ["a", "b", "c", "d"], 2, "demo")
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def seeded_order(count: int, seed: str) -> list[int]:
    """The positions ``0 .. count - 1`` shuffled by ``seed``: ordered by the SHA-256 of
    ``seed:position``."""
    return sorted(range(count), key=lambda k: hashlib.sha256(f"{seed}:{k}".encode()).digest())


def first_of_shuffle(items: Sequence[T], size: int | None, seed: str, where: str = "") -> list[T]:
    """The first ``size`` items of ``seeded_order``, kept in their own order (None: every
    item). More than there are is an error naming ``where``."""
    if size is None:
        return list(items)
    if size > len(items):
        raise ValueError(
            f"data.train_size={size}, but {where or 'the training split'} has "
            f"{len(items):,} sentences"
        )
    chosen = sorted(seeded_order(len(items), seed)[:size])
    return [items[k] for k in chosen]
