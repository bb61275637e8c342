"""A BERT-family encoder, written here: embeddings, then post-LayerNorm layers whose
self-attention goes through ``F.scaled_dot_product_attention`` (or a ``HeadEdit`` of the
chosen heads, ``syntax_injection``), loaded from a BERT checkpoint's state dict under its
own names (``from_bert_names``).

The files it loads from: ``treeattn.models.weights``; words in, word vectors out:
``treeattn.models.backbone``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from treeattn.attention.head_edit import (
    HeadEdit,
    LayerEdits,
    edited_attention,
    edited_probabilities,
)
from treeattn.models.weights import WeightsError


@dataclass(frozen=True)
class BertConfig:
    """The sizes of a BERT-family encoder, read from a ``config.json``."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> BertConfig:
        kind = values.get("model_type", "bert")
        if kind != "bert":
            raise WeightsError(f"model_type {kind!r}: only BERT-architecture encoders load")
        if values.get("position_embedding_type", "absolute") != "absolute":
            raise WeightsError("only absolute position embeddings are supported")
        names = set(cls.__dataclass_fields__)
        return cls(**{key: value for key, value in values.items() if key in names})


_EMBEDDING_NAMES = {
    "word_embeddings": "words",
    "position_embeddings": "positions",
    "token_type_embeddings": "types",
    "LayerNorm": "norm",
}
_LAYER_NAMES = {
    "attention.self.query": "query",
    "attention.self.key": "key",
    "attention.self.value": "value",
    "attention.output.dense": "attention_out",
    "attention.output.LayerNorm": "attention_norm",
    "intermediate.dense": "feed_in",
    "output.dense": "feed_out",
    "output.LayerNorm": "feed_norm",
}
_UNUSED = re.compile(r"^(pooler\.|cls\.|embeddings\.position_ids$)")
_LAYER_KEY = re.compile(r"^encoder\.layer\.(\d+)\.(.+)\.(weight|bias|gamma|beta)$")
_EMBEDDING_KEY = re.compile(r"^embeddings\.(\w+)\.(weight|bias|gamma|beta)$")
_OLD_NORM_NAMES = {"gamma": "weight", "beta": "bias"}  # LayerNorm in early checkpoints


def from_bert_names(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """A BERT state dict (``encoder.layer.0.attention.self.query.weight``, ...) under the
    names of ``BertEncoder``; the pooler, the pretraining heads and buffers are dropped."""
    renamed = {}
    for key, value in state.items():
        name = key.removeprefix("bert.")
        if _UNUSED.match(name):
            continue
        if match := _LAYER_KEY.match(name):
            index, part, kind = match.groups()
            if part not in _LAYER_NAMES:
                raise WeightsError(f"unknown weight {key!r}")
            ours = f"layers.{index}.{_LAYER_NAMES[part]}"
        elif (match := _EMBEDDING_KEY.match(name)) and match.group(1) in _EMBEDDING_NAMES:
            part, kind = match.groups()
            ours = f"embeddings.{_EMBEDDING_NAMES[part]}"
        else:
            raise WeightsError(f"unknown weight {key!r}")
        renamed[f"{ours}.{_OLD_NORM_NAMES.get(kind, kind)}"] = value
    return renamed


_ACTIVATIONS = {
    "gelu": nn.GELU,
    "gelu_new": lambda: nn.GELU(approximate="tanh"),
    "gelu_pytorch_tanh": lambda: nn.GELU(approximate="tanh"),
    "relu": nn.ReLU,
}


def _embedding(rows: int, dim: int) -> nn.Embedding:
    """An embedding table; on the meta device (its weights to come from a file) without
    the random values, whose meta kernel imports torch's compiler (1.5 s of a parse)."""
    if torch.get_default_device().type == "meta":
        return nn.Embedding.from_pretrained(torch.empty(rows, dim), freeze=False)
    return nn.Embedding(rows, dim)


class BertEmbeddings(nn.Module):
    """Word, position and token-type embeddings, summed, then LayerNorm."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.words = _embedding(config.vocab_size, config.hidden_size)
        self.positions = _embedding(config.max_position_embeddings, config.hidden_size)
        self.types = _embedding(config.type_vocab_size, config.hidden_size)
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, piece_ids: Tensor) -> Tensor:
        """(B, p) piece ids -> (B, p, d); every piece has token type 0 (one segment)."""
        positions = torch.arange(piece_ids.shape[1], device=piece_ids.device)
        summed = self.words(piece_ids) + self.positions(positions) + self.types.weight[0]
        return self.dropout(self.norm(summed))


class BertLayer(nn.Module):
    """One post-LayerNorm Transformer layer as BERT has it."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        d, heads = config.hidden_size, config.num_attention_heads
        if d % heads:
            raise WeightsError(f"hidden_size {d} is not a multiple of {heads} heads")
        self.n_heads = heads
        self.query, self.key, self.value = (nn.Linear(d, d) for _ in range(3))
        self.attention_out = nn.Linear(d, d)
        self.attention_norm = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.feed_in = nn.Linear(d, config.intermediate_size)
        self.activation = _ACTIVATIONS[config.hidden_act]()
        self.feed_out = nn.Linear(config.intermediate_size, d)
        self.feed_norm = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.attention_dropout = config.attention_probs_dropout_prob

    def forward(self, states: Tensor, allowed: Tensor, edit: HeadEdit | None = None) -> Tensor:
        """states (B, p, d); allowed (B, 1, 1, p), True at the keys that are pieces;
        ``edit``: a bias or prior for some heads (``head_edit``), None for plain BERT."""
        batch, length, d = states.shape
        attended = edited_attention(
            self._heads(self.query(states)),
            self._heads(self.key(states)),
            self._heads(self.value(states)),
            allowed,
            edit,
            dropout_p=self.attention_dropout if self.training else 0.0,
        )
        attended = attended.transpose(1, 2).reshape(batch, length, d)
        states = self.attention_norm(states + self.dropout(self.attention_out(attended)))
        fed = self.feed_out(self.activation(self.feed_in(states)))
        return self.feed_norm(states + self.dropout(fed))

    def attention_weights(
        self, states: Tensor, allowed: Tensor, edit: HeadEdit | None = None
    ) -> Tensor:
        """The probabilities (B, H, p, p) that ``forward`` on the same arguments mixes the
        values with (before attention dropout), the edit's bias or prior included."""
        query, key = self._heads(self.query(states)), self._heads(self.key(states))
        return edited_probabilities(query, key, allowed, edit)

    def _heads(self, x: Tensor) -> Tensor:
        """(B, p, d) -> (B, H, p, d / H)."""
        batch, length, d = x.shape
        return x.view(batch, length, self.n_heads, d // self.n_heads).transpose(1, 2)


class BertEncoder(nn.Module):
    """A BERT-family encoder whose parameters load from a BERT state dict
    (``load_bert_state``)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.layers = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))

    def outside_layers(self) -> list[nn.Parameter]:
        """The pretrained weights outside the layers: the embeddings."""
        return list(self.embeddings.parameters())

    def outside_modules(self) -> list[nn.Module]:
        """The modules outside the layers (their dropout): the embeddings."""
        return [self.embeddings]

    def source_state(self, files: Any) -> dict[str, Tensor]:
        """The weights of ``files`` (``weights.PretrainedFiles``) under this encoder's
        state-dict names."""
        return from_bert_names(files.state)

    def load_bert_state(self, state: dict[str, Tensor]) -> None:
        """Load weights named as BERT names them; every parameter must be there. Float32
        tensors become the parameters as they are (an encoder built on the meta device
        takes them without a copy); half-precision files are widened to float32."""
        weights = {
            name: value.float() if value.is_floating_point() else value
            for name, value in from_bert_names(state).items()
        }
        self.load_state_dict(weights, strict=True, assign=True)

    def forward(
        self, piece_ids: Tensor, pad_mask: Tensor, syntax: LayerEdits | None = None
    ) -> list[Tensor]:
        """piece_ids, pad_mask (B, p) -> the hidden states of the embeddings and of each
        layer, ``num_hidden_layers + 1`` tensors (B, p, d). ``syntax(layer, states)``, when
        given, says how each layer's heads change (``syntax_injection``)."""
        allowed = ~pad_mask[:, None, None, :]
        states = [self.embeddings(piece_ids)]
        for index, layer in enumerate(self.layers):
            edit = None if syntax is None else syntax(index, states[-1])
            states.append(layer(states[-1], allowed, edit))
        return states
