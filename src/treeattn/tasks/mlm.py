"""Masked language modelling on raw text (the ``text`` data set): the masking, the loss and
perplexity, over words or subword pieces (``treeattn.tasks.language``). A Tree Transformer
(``constituent`` attention) trained this way gives the trees of ``treeattn induce``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from treeattn import plugins
from treeattn.data.batching import bucket_batches
from treeattn.data.subwords import WORD_START
from treeattn.data.text import START
from treeattn.data.vocab import MASK, Vocab
from treeattn.engine.config import Config
from treeattn.engine.task import evaluating
from treeattn.models.masked_lm import MaskedLanguageModel
from treeattn.models.registry import build_encoder, check_encoder
from treeattn.tasks.encoding import EncodedSet, SentenceBatch
from treeattn.tasks.language import MASKED, LanguageModelTask, LmData, LmModel, start_tokens
from treeattn.tasks.sentences import TEXT, LabeledSentence

IGNORE = -100  # target of a position that is not predicted (cross_entropy's default)
FIRST_WORD_ID = 3  # ids below are padding, unknown and mask: never drawn as random words
EVAL_SEED = 0  # evaluation masks the same positions every time


@dataclass(frozen=True)
class Masking:
    """BERT-style masking: each real word is chosen with probability ``rate``; a chosen one
    becomes ``<mask>``, a random word (one of ``vocab_size``) or stays itself with the
    probabilities ``split`` (80/10/10 in BERT)."""

    rate: float
    split: tuple[float, float, float]
    vocab_size: int

    def check(self, where: str) -> None:
        if not 0 < self.rate < 1:
            raise ValueError(f"{where}: data.mask_rate must lie in (0, 1), got {self.rate}")
        if len(self.split) != 3 or min(self.split) < 0 or not math.isclose(sum(self.split), 1):
            raise ValueError(
                f"{where}: data.mask_split must be three shares (mask, random word, keep) "
                f"summing to 1, got {list(self.split)}"
            )


def mask_tokens(
    tokens: torch.Tensor,
    pad_mask: torch.Tensor,
    masking: Masking,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets), each (B, n), from ``tokens`` (B, n) masked as ``masking`` says.

    ``targets`` holds the original id at chosen positions and ``IGNORE`` elsewhere. Random
    numbers come from ``generator`` (default: torch's global one).
    """
    draw = torch.rand((2, *tokens.shape), generator=generator, device=tokens.device)
    keep_share = masking.split[0] + masking.split[1]
    chosen = (draw[0] < masking.rate) & ~pad_mask
    to_mask = chosen & (draw[1] < masking.split[0])
    to_random = chosen & (draw[1] >= masking.split[0]) & (draw[1] < keep_share)
    high = max(masking.vocab_size, FIRST_WORD_ID + 1)
    words = torch.randint(
        FIRST_WORD_ID, high, tokens.shape, generator=generator, device=tokens.device
    )
    inputs = torch.where(to_random, words, tokens.masked_fill(to_mask, Vocab.mask_id))
    return inputs, tokens.masked_fill(~chosen, IGNORE)


def masked_lm_loss(
    model: nn.Module,
    batch: SentenceBatch,
    masking: Masking,
    generator: torch.Generator | None = None,
    label_smoothing: float = 0.0,
) -> tuple[torch.Tensor, int]:
    """(summed cross-entropy over the masked positions, their number) for one batch."""
    tokens, targets = mask_tokens(batch.inputs.tokens, batch.inputs.pad_mask, masking, generator)
    chosen = targets != IGNORE
    logits = model(batch.inputs.with_tokens(tokens), predict=chosen)
    loss = F.cross_entropy(
        logits, targets[chosen], reduction="sum", label_smoothing=label_smoothing
    )
    return loss, int(chosen.sum())


@dataclass
class MlmData(LmData):
    """The settings of the ``text`` data set (the only one read), the vocabulary and the
    masking."""

    # The share of words (or pieces) chosen, and how a chosen one is shown (as <mask>, as
    # a random one, as itself)
    mask_rate: float = 0.15
    mask_split: list = field(default_factory=lambda: [0.8, 0.1, 0.1])


# Keys of the data and model sections that all sentence tasks once shared, which masked
# language modelling ignored.
CLASSIFY_DATA_KEYS = (
    "phrase_level",
    "train_size",
    "dev_size",
    "test_size",
    "max_depth",
    "max_args",
    "max_length",
)


@plugins.tasks.register
class MaskedLMTask(LanguageModelTask):
    """BERT-style masked language modelling, chosen by dev perplexity."""

    name = "mlm"
    datasets: ClassVar[tuple[str, ...]] = (TEXT,)  # the data sets read
    Data = MlmData
    Model = LmModel
    headline = ("perplexity",)
    lm_kind = MASKED
    activity = "masked language modelling"

    @classmethod
    def legacy_sections(cls, data: Any, model: Any) -> tuple[Any, Any]:
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in CLASSIFY_DATA_KEYS}
        if isinstance(model, dict):
            model = {k: v for k, v in model.items() if k != "pooling"}
        return data, model

    @classmethod
    def check_config(cls, cfg: Config, where: str) -> None:
        super().check_config(cfg, where)
        d, m = cfg.data, cfg.model
        Masking(d.mask_rate, tuple(d.mask_split), 0).check(where)
        if check_encoder(m, where).needs_trees:
            raise ValueError(
                f"{where}: masked language modelling reads raw text, but model.attention="
                f"{m.attention!r} needs trees; choose a token-level mechanism"
            )

    @property
    def special_words(self) -> tuple[str, ...]:
        return (START,) if self.cfg.data.start_token else ()

    @property
    def title(self) -> str:
        return f"{self.cfg.model.attention} on {self.cfg.data.name}"

    @property
    def masking(self) -> Masking:
        d = self.cfg.data
        return Masking(d.mask_rate, tuple(d.mask_split), len(self.vocab))

    def _words_of(self, examples: Sequence[LabeledSentence]) -> list[LabeledSentence]:
        return start_tokens(examples) if self.cfg.data.start_token else list(examples)

    @property
    def words_around(self) -> tuple[int, int]:
        return (1 if self.cfg.data.start_token else 0, 0)

    @property
    def lm_prefix(self) -> list[int]:
        return [self.vocab.index[START]] if self.cfg.data.start_token else []

    def build_model(self) -> nn.Module:
        return MaskedLanguageModel(build_encoder(self.cfg.model, len(self.vocab)), len(self.vocab))

    def loss(self, model: nn.Module, batch: SentenceBatch) -> torch.Tensor:
        """Mean cross-entropy of one training batch's masked words (or pieces)."""
        smoothing = self.cfg.train.label_smoothing

        def masked() -> torch.Tensor:
            total, count = masked_lm_loss(model, batch, self.masking, label_smoothing=smoothing)
            return total / max(1, count)

        return self.with_tree_loss(model, batch, masked)

    def evaluate(self, model: nn.Module, data: EncodedSet, device: torch.device) -> dict[str, Any]:
        """Perplexity (exp of the mean cross-entropy per masked word or piece), always with
        the same masked positions (a generator seeded with ``EVAL_SEED``), so that every
        evaluation of every model sees the same task."""
        generator = torch.Generator(device=device).manual_seed(EVAL_SEED)
        masking = self.masking
        return self.perplexity(
            model, data, device, lambda m, batch: masked_lm_loss(m, batch, masking, generator)
        )

    @torch.no_grad()
    def predict(
        self, model: nn.Module, data: EncodedSet, device: torch.device, output_format: str = ""
    ) -> list[str]:
        """Each sentence with every ``<mask>`` replaced by the model's most likely word (or
        piece)."""
        lines: dict[int, str] = {}
        with evaluating(model):
            for indices in bucket_batches(data.lengths, self.cfg.train.eval_max_tokens, False):
                batch = data.batch(indices).to(device)
                masked = batch.inputs.tokens == Vocab.mask_id
                filled = batch.inputs.tokens.clone()
                if masked.any():
                    logits = model(batch.inputs, predict=masked)
                    logits[:, :FIRST_WORD_ID] = float("-inf")  # never padding, unknown or mask
                    filled[masked] = logits.argmax(-1)
                for row, i in enumerate(indices):
                    guesses = iter(self.vocab.decode(filled[row][masked[row]].tolist()))
                    words = [next(guesses) if w == MASK else w for w in data.words[i]]
                    lines[i] = self._join(words[1:] if self.cfg.data.start_token else words)
        return [lines[i] for i in range(len(data))]

    def _join(self, tokens: list[str]) -> str:
        """Words joined by spaces; pieces joined into words where they begin with ``▁``."""
        if self.subwords is None:
            return " ".join(tokens)
        return "".join(tokens).replace(WORD_START, " ").strip()
