"""Scoring a saved model on a split or a file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from treeattn.data.vocab import Vocab
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.engine.classification import (
    EncodedSet,
    build_model,
    check_lengths,
    encode_split,
    evaluate,
    uses_trees,
)
from treeattn.engine.config import Config
from treeattn.engine.datasets import SPLITS, TEXT, LabeledSentence, load_split, read_file
from treeattn.engine.distributed import pick_device
from treeattn.engine.masked_lm import Masking
from treeattn.engine.masked_lm import evaluate as evaluate_masked_lm


@dataclass
class SavedModel:
    """A trained model with what it needs to read data: its config and vocabularies."""

    cfg: Config
    model: nn.Module
    vocab: Vocab
    node_vocab: Vocab | None
    device: torch.device

    def examples(self, data: str) -> tuple[list[LabeledSentence], str]:
        """The examples of ``data`` (a split name or a file path) and a name for errors."""
        trees = uses_trees(self.cfg)
        if data in SPLITS:
            examples = load_split(self.cfg.data, data, trees)
            where = f"{self.cfg.data.name} {data}"
        elif Path(data).is_file():
            examples, where = read_file(self.cfg.data, data, trees), data
        else:
            raise FileNotFoundError(
                f"{data!r} is neither a split name ({', '.join(SPLITS)}) nor an existing file"
            )
        if not examples:
            raise ValueError(f"{where}: no examples to evaluate")
        check_lengths(examples, self.cfg.model.max_length, where)
        return examples, where

    def encode(self, examples: list[LabeledSentence], where: str) -> EncodedSet:
        return encode_split(self.cfg, examples, self.vocab, self.node_vocab, where)


def load_model(checkpoint: str | Path, device: str = "auto") -> SavedModel:
    """A checkpoint written by ``treeattn train``, in evaluation mode on ``device``."""
    state = load_checkpoint(checkpoint)
    if not isinstance(state, dict) or not {"model", "config", "vocab"} <= set(state):
        raise ValueError(f"{checkpoint}: not a checkpoint written by `treeattn train`")
    cfg = Config.from_dict(json.loads(state["config"]), where=f"{checkpoint} config")
    vocab = Vocab(state["vocab"])
    node_vocab = Vocab(state["node_vocab"]) if "node_vocab" in state else None
    if uses_trees(cfg) and node_vocab is None:
        raise ValueError(f"{checkpoint}: a tree model's checkpoint without its node vocabulary")
    target = pick_device(device)
    node_vocab_size = len(node_vocab) if node_vocab is not None else 0
    model = build_model(cfg, len(vocab), node_vocab_size).to(target)
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as error:  # weights of another version of the model
        raise ValueError(f"{checkpoint}: the weights do not fit the model: {error}") from None
    return SavedModel(cfg, model.eval(), vocab, node_vocab, target)


def evaluate_checkpoint(checkpoint: str | Path, data: str, device: str = "auto") -> dict[str, Any]:
    """Accuracy and loss of a checkpoint on ``data`` (a split name or a file path); a masked
    language model's perplexity and loss instead."""
    saved = load_model(checkpoint, device)
    examples, where = saved.examples(data)
    encoded = saved.encode(examples, where)
    max_tokens = saved.cfg.train.eval_max_tokens
    if saved.cfg.data.name == TEXT:  # a masked language model: perplexity
        split = tuple(saved.cfg.data.mask_split)
        masking = Masking(saved.cfg.data.mask_rate, split, len(saved.vocab))
        metrics = evaluate_masked_lm(saved.model, encoded, max_tokens, saved.device, masking)
    else:
        metrics = evaluate(saved.model, encoded, max_tokens, saved.device)
    return {"data": where, **metrics}
