"""A pretrained model's files by source: the name ``minilm`` (its package's zip,
``treeattn.models.weights``), a packaged causal LM's name (``smollm2-135m``,
``treeattn.models.packaged_lm``) or a local directory. Nothing is ever fetched from a
model hub.

``read_pretrained`` reads everything; ``read_tokenizer`` the config and the tokenizer
only, for splitting words into pieces before (or without) a model.

>>> files = read_pretrained("minilm")  # doctest: +SKIP
>>> files.config["hidden_size"]  # doctest: +SKIP
384
"""

from __future__ import annotations

import os
from pathlib import Path

from treeattn.models import packaged_lm
from treeattn.models.weights import (
    INSTALL_HINT,
    MINILM_SHA256,
    PretrainedFiles,
    TokenizerFiles,
    WeightsError,
    packaged_archive,
    read_archive,
    read_archive_tokenizer,
    read_directory,
    read_directory_tokenizer,
)


def _local_directory(source: str | os.PathLike[str]) -> Path:
    """``source`` as a directory, or an error naming both kinds of source."""
    if not Path(source).is_dir():
        raise WeightsError(
            f"{source}: not a directory, nor the name 'minilm' (installed with {INSTALL_HINT}) "
            "or 'smollm2-135m' (make install)"
        )
    return Path(source)


def read_pretrained(source: str | os.PathLike[str], sha256: str | None = None) -> PretrainedFiles:
    """The files of ``source``: ``"minilm"`` (the package, checked against its pinned
    sha256), a packaged causal LM's name (``smollm2-135m``, ``packaged_lm``, checked
    against its own pin) or a local directory (checked against ``sha256`` when one is
    given)."""
    if packaged_lm.is_packaged_lm(source):
        if sha256 not in (None, packaged_lm.PACKAGED_LMS[str(source)].sha256):
            raise WeightsError(f"{source}: its file is pinned; a sha256 of its own is not read")
        return packaged_lm.read_packaged_files(str(source))
    if str(source) == "minilm":
        return read_archive(packaged_archive(), MINILM_SHA256 if sha256 is None else sha256)
    return read_directory(_local_directory(source), sha256)


def read_tokenizer(source: str | os.PathLike[str]) -> TokenizerFiles:
    """The config and the tokenizer of ``source`` (as ``read_pretrained`` names it), its
    weights left unread: splitting words into pieces needs no model."""
    if packaged_lm.is_packaged_lm(source):
        return packaged_lm.read_packaged_tokenizer(str(source))
    if str(source) == "minilm":
        return read_archive_tokenizer(packaged_archive())
    return read_directory_tokenizer(_local_directory(source))
