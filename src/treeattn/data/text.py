"""Raw text for masked language modelling: the words of three corpora, no trees.

UD English-EWT, SST and the PTB sample, each split as its own data set (the PTB sample by
file: train wsj_0001-0139, dev 0140-0169, test 0170-0199). A Tree Transformer learns its
constituents from this text alone; the PTB sample's trees only judge them afterwards.
"""

from __future__ import annotations

from pathlib import Path

from treeattn.data.ptb import load_ptb_sample
from treeattn.data.sst import load_sst
from treeattn.data.ud import load_ud


def text_corpora(split: str, root: str | Path | None = None) -> list[list[str]]:
    """The words of every sentence of UD English-EWT, SST and the PTB sample ``split``
    (``train``, ``dev`` or ``test``), in that order; PTB traces (``-NONE-``) left out."""
    sentences = [list(tree.words) for tree in load_ud(split, root=root)]
    sentences += [list(ex.tokens) for ex in load_sst(split, root=root, fine_grained=True)]
    ptb = load_ptb_sample(split, root=root, clean=True)
    return sentences + [entry.tree.leaves() for entry in ptb]
