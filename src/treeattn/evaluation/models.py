"""Language models to score, behind one interface (``scoring.LanguageModel``):

- ``TransformersLM``: a ``transformers`` causal or masked LM, loaded from a local folder
  with ``local_files_only`` and the offline switches on (nothing is fetched), from a GGUF
  file or a packaged model's name (``smollm2-135m``, ``models.packaged_lm``), or given as
  a model and its fast tokenizer;
- ``ProjectLM``: a language model this project trained (``treeattn train`` with task
  ``mlm`` or ``causal-lm``), from its checkpoint;
- ``load_language_model``: either, from a path or a packaged model's name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

from treeattn.data.vocab import Vocab
from treeattn.evaluation.scoring import CAUSAL, KINDS, MASKED, LanguageModel, PieceText
from treeattn.models.packaged_lm import PACKAGED_LMS, is_packaged_lm, load_gguf, load_packaged_lm
from treeattn.tasks.language import LanguageModelTask
from treeattn.tasks.trained import Trained, load_trained


def _architectures(folder: Path) -> list[str]:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{folder}: no readable config.json ({error})") from None
    return list(config.get("architectures") or [])


def guess_kind(folder: str | Path) -> str:
    """``causal`` or ``masked``, from the architectures a model folder's config names (a
    ``...ForCausalLM`` / ``...LMHeadModel`` is causal, a ``...ForMaskedLM`` masked)."""
    names = _architectures(Path(folder))
    if any(n.endswith(("ForCausalLM", "LMHeadModel")) for n in names):
        return CAUSAL
    if any(n.endswith("ForMaskedLM") for n in names):
        return MASKED
    raise ValueError(
        f"{folder}: its config names no causal or masked LM architecture ({names or 'none'}); "
        "say which with kind (--kind causal or masked)"
    )


def _special_around(tokenizer: Any, probe: str = "a") -> tuple[list[int], list[int]]:
    """The ids a tokenizer puts before and after a text's pieces (``[CLS]``, ``[SEP]``),
    found by tokenizing a probe with and without them."""
    bare = tokenizer(probe, add_special_tokens=False)["input_ids"]
    wrapped = tokenizer(probe)["input_ids"]
    for at in range(len(wrapped) - len(bare) + 1):
        if wrapped[at : at + len(bare)] == bare:
            return wrapped[:at], wrapped[at + len(bare) :]
    raise ValueError("the tokenizer's special tokens do not surround a text's pieces")


def _require_every_weight(folder: Path, kind: str, missing: set[str]) -> None:
    """Refuse a model some of whose weights the folder lacks (``transformers`` would fill
    them in at random and score with them)."""
    if missing:
        head = "masked-LM" if kind == MASKED else "causal-LM"
        raise ValueError(
            f"{folder}: no weights for {', '.join(sorted(missing))}; a {kind} model needs "
            f"its {head} head (a folder saved from a bare encoder has none)"
        )


class TransformersLM(LanguageModel):
    """A ``transformers`` LM and its fast tokenizer. A causal model reads its start token
    (``bos_token``, else ``eos_token``, as GPT-2 scorers do) before the text; a masked one
    the tokenizer's own special tokens around it (``[CLS] ... [SEP]``), and ``mask_token``
    at masked positions."""

    def __init__(self, model: Any, tokenizer: Any, kind: str, name: str = "transformers"):
        if kind not in KINDS:
            raise ValueError(f"kind must be causal or masked, not {kind!r}")
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError(f"{name}: a fast tokenizer is needed (its pieces' offsets)")
        self.model, self.tokenizer, self.kind, self.name = model.eval(), tokenizer, kind, name
        pad = tokenizer.pad_token_id
        if kind == CAUSAL:
            start = tokenizer.bos_token_id
            start = tokenizer.eos_token_id if start is None else start
            self.prefix = [] if start is None else [start]
            self.suffix = []
        else:
            self.prefix, self.suffix = _special_around(tokenizer)
            self.mask_id = tokenizer.mask_token_id
        self.pad_id = 0 if pad is None else pad

    @classmethod
    def load(cls, folder: str | Path, kind: str | None = None, device: str = "cpu"):
        """The model and tokenizer in ``folder`` (nothing is fetched). Every weight the
        model needs must be in the folder: a masked LM read from a bare encoder's weights
        (no masked-LM head) is refused, not given a random head."""
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

        folder = Path(folder)
        kind = kind or guess_kind(folder)
        auto = AutoModelForCausalLM if kind == CAUSAL else AutoModelForMaskedLM
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, use_fast=True)
        model, loading = auto.from_pretrained(
            folder, local_files_only=True, output_loading_info=True
        )
        _require_every_weight(folder, kind, loading["missing_keys"])
        return cls(model.to(device), tokenizer, kind, name=str(folder))

    @classmethod
    def load_gguf(cls, source: str | Path, kind: str | None = None, device: str = "cpu"):
        """A causal LM from a GGUF file, or a packaged model by name (``smollm2-135m``,
        hash-checked); the tokenizer is the file's own."""
        if kind not in (None, CAUSAL):
            raise ValueError(f"{source}: a GGUF model is a causal LM, not {kind}")
        if is_packaged_lm(source):
            model, tokenizer = load_packaged_lm(str(source), device)
        else:
            model, tokenizer = load_gguf(source, device=device)
        return cls(model, tokenizer, CAUSAL, name=str(source))

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def pieces(self, text: str) -> PieceText:
        found = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        spans = [tuple(span) for span in found["offset_mapping"]]
        words = found.word_ids() if hasattr(found, "word_ids") else None
        if words is None or any(w is None for w in words):
            words = list(range(len(spans)))
        return PieceText(list(found["input_ids"]), spans, list(words))

    def log_probs(
        self, ids: torch.Tensor, pad_mask: torch.Tensor, at: torch.Tensor
    ) -> torch.Tensor:
        logits = self.model(input_ids=ids, attention_mask=(~pad_mask).long()).logits
        return logits[at].float().log_softmax(-1)


class ProjectLM(LanguageModel):
    """A language model of this project (``treeattn.tasks.language``) from a checkpoint,
    reading raw text as its task does (``text_pieces``)."""

    def __init__(self, trained: Trained, name: str = "checkpoint") -> None:
        task = trained.task
        if not isinstance(task, LanguageModelTask):
            raise ValueError(f"{name}: a {trained.cfg.task} model is no language model")
        self.trained, self.task, self.name = trained, task, name
        self.kind = task.lm_kind
        self.prefix, self.suffix = task.lm_prefix, task.lm_suffix
        self.mask_id, self.pad_id = Vocab.mask_id, Vocab.pad_id

    @classmethod
    def load(cls, checkpoint: str | Path, device: str = "auto") -> ProjectLM:
        return cls(load_trained(checkpoint, device), name=str(checkpoint))

    @property
    def device(self) -> torch.device:
        return self.trained.device

    def pieces(self, text: str) -> PieceText:
        found = self.task.text_pieces(text)
        return PieceText(found.ids, found.spans, found.words)

    def log_probs(
        self, ids: torch.Tensor, pad_mask: torch.Tensor, at: torch.Tensor
    ) -> torch.Tensor:
        return self.task.lm_log_probs(self.trained.model, ids, pad_mask, at)


def load_language_model(
    source: str | Path, kind: str | None = None, device: str = "auto"
) -> LanguageModel:
    """A packaged model by name (``smollm2-135m``), a ``.gguf`` file, a folder holding a
    ``transformers`` model (``config.json``; ``kind`` from its architectures unless given)
    or a checkpoint of a ``mlm`` or ``causal-lm`` run."""
    path = Path(source)
    target = "cuda" if device == "auto" and torch.cuda.is_available() else device
    target = "cpu" if target == "auto" else target
    if is_packaged_lm(source) or (path.suffix == ".gguf" and path.is_file()):
        return TransformersLM.load_gguf(source, kind, target)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ValueError(f"{path}: a model folder needs config.json (a transformers model)")
        return TransformersLM.load(path, kind, target)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such checkpoint or model folder, nor a packaged model "
            f"({', '.join(PACKAGED_LMS)})"
        )
    if kind is not None:
        raise ValueError(f"{path}: a checkpoint knows whether it is causal or masked; drop kind")
    return ProjectLM.load(path, device)
