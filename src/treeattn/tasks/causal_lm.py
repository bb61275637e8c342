"""Causal language modelling on raw text (the ``text`` data set), or on McCoy et al.'s
``input output`` strings (``mccoy``; ``treeattn.analysis.generalization`` decodes and
scores their outputs): each sentence read left to right between ``<s>`` and ``</s>``,
every word (or piece) and the end predicted from the ones before; chosen by dev
perplexity per predicted token. Over words or subword pieces
(``treeattn.tasks.language``); the encoder's mechanism must be causal
(``Capabilities.causal``: the plain Transformer)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from treeattn import plugins
from treeattn.data.batching import bucket_batches
from treeattn.data.text import START
from treeattn.engine.config import Config
from treeattn.engine.task import evaluating
from treeattn.models.causal_lm import CausalLanguageModel
from treeattn.models.registry import build_encoder, check_encoder, encoder_names
from treeattn.tasks.datasets.mccoy import MCCOY
from treeattn.tasks.encoding import EncodedSet, SentenceBatch
from treeattn.tasks.language import CAUSAL, END, LanguageModelTask, LmData, LmModel
from treeattn.tasks.sentences import TEXT, LabeledSentence


def next_token_loss(
    model: nn.Module, batch: SentenceBatch, label_smoothing: float = 0.0
) -> tuple[torch.Tensor, int]:
    """(summed cross-entropy of every token after the first, their number) for one batch of
    sentences that begin with ``<s>`` and end with ``</s>``."""
    tokens, pad_mask = batch.inputs.tokens, batch.inputs.pad_mask
    # Position t predicts the token at t + 1, where there is a real one.
    predict = torch.zeros_like(pad_mask)
    predict[:, :-1] = ~pad_mask[:, 1:]
    logits = model(batch.inputs, predict=predict)
    targets = tokens[:, 1:][~pad_mask[:, 1:]]
    loss = F.cross_entropy(logits, targets, reduction="sum", label_smoothing=label_smoothing)
    return loss, int(targets.numel())


@plugins.tasks.register
class CausalLMTask(LanguageModelTask):
    """Left-to-right language modelling, chosen by dev perplexity."""

    name = "causal-lm"
    Data = LmData
    Model = LmModel
    headline = ("perplexity",)
    lm_kind = CAUSAL
    activity = "causal language modelling"
    special_words = (START, END)
    datasets = (TEXT, MCCOY)
    output_formats = ("jsonl",)

    @classmethod
    def check_config(cls, cfg: Config, where: str) -> None:
        super().check_config(cfg, where)
        d, m = cfg.data, cfg.model
        if getattr(d, "start_token", False):  # a setting of the text data set
            raise ValueError(
                f"{where}: data.start_token: causal language modelling always reads <s> "
                "first (and predicts </s> last); leave it false"
            )
        check_encoder(m, where)
        if not plugins.mechanisms[m.attention].capabilities.causal:
            causal = [n for n in encoder_names() if plugins.mechanisms[n].capabilities.causal]
            raise ValueError(
                f"{where}: model.attention={m.attention!r} lets a word see later words; "
                f"causal language modelling takes {', '.join(causal)}"
            )

    @property
    def title(self) -> str:
        return f"causal {self.cfg.model.attention} on {self.cfg.data.name}"

    def _words_of(self, examples: Sequence[LabeledSentence]) -> list[LabeledSentence]:
        return [replace(ex, tokens=[START, *ex.tokens, END]) for ex in examples]

    @property
    def words_around(self) -> tuple[int, int]:
        return (1, 1)  # <s> and </s>

    @property
    def lm_prefix(self) -> list[int]:
        return [self.vocab.index[START]]

    def build_model(self) -> nn.Module:
        return CausalLanguageModel(build_encoder(self.cfg.model, len(self.vocab)), len(self.vocab))

    def loss(self, model: nn.Module, batch: SentenceBatch) -> torch.Tensor:
        """Mean cross-entropy of one training batch's next tokens."""

        def next_tokens() -> torch.Tensor:
            total, count = next_token_loss(model, batch, self.cfg.train.label_smoothing)
            return total / max(1, count)

        return self.with_tree_loss(model, batch, next_tokens)

    def evaluate(self, model: nn.Module, data: EncodedSet, device: torch.device) -> dict[str, Any]:
        """Perplexity: exp of the mean cross-entropy per predicted token (every word or
        piece and the end of each sentence)."""
        return self.perplexity(model, data, device, next_token_loss)

    @torch.no_grad()
    def predict(
        self, model: nn.Module, data: EncodedSet, device: torch.device, output_format: str = ""
    ) -> list[str]:
        """Each sentence's log-probability (natural log, its words or pieces and the end
        given ``<s>``), the tokens predicted and their perplexity, as a JSON object."""
        out: dict[int, str] = {}
        with evaluating(model):
            for indices in bucket_batches(data.lengths, self.cfg.train.eval_max_tokens, False):
                batch = data.batch(indices).to(device)
                tokens, pad_mask = batch.inputs.tokens, batch.inputs.pad_mask
                predict = torch.zeros_like(pad_mask)
                predict[:, :-1] = ~pad_mask[:, 1:]
                log_probs = model(batch.inputs, predict=predict).log_softmax(-1)
                picked = log_probs.gather(1, tokens[:, 1:][~pad_mask[:, 1:]][:, None])[:, 0]
                per_row = picked.split((~pad_mask[:, 1:]).sum(1).tolist())
                for i, row in zip(indices, per_row, strict=True):
                    total = row.sum().item()
                    out[i] = json.dumps(
                        {
                            "log_prob": total,
                            "tokens": row.numel(),
                            "perplexity": math.exp(-total / row.numel()),
                        }
                    )
        return [out[i] for i in range(len(data))]
