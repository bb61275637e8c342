"""The ``model`` section of the sentence tasks, and the encoders it names: an attention
mechanism inside the Transformer encoder, or a tree encoder that reads each sentence's tree."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from torch import nn

from treeattn.attention import attention_names
from treeattn.attention.registry import attention_options, constructor_options
from treeattn.engine.config import check_positive
from treeattn.models.encoder import TransformerEncoder
from treeattn.models.hierarchical import HierarchicalEncoder
from treeattn.models.tree_lstm import TreeLSTMEncoder


@dataclass
class EncoderConfig:
    """An encoder: ``attention`` names a mechanism (``vanilla``, ``distance``, ...) or a tree
    encoder (``hierarchical``, ``tree-lstm``); its options go in ``attention_options``."""

    attention: str = "vanilla"
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 256
    dropout: float = 0.1
    attention_dropout: float | None = None  # on attention weights; null: as dropout
    positions: str = "sinusoidal"
    max_length: int = 512
    attention_options: dict = field(default_factory=dict)


def _hierarchical(m: EncoderConfig, vocab_size: int, node_vocab_size: int) -> nn.Module:
    return HierarchicalEncoder(
        vocab_size,
        node_vocab_size,
        d_model=m.d_model,
        n_heads=m.n_heads,
        n_layers=m.n_layers,
        d_ff=m.d_ff,
        dropout=m.dropout,
        attention_dropout=m.attention_dropout,
        max_length=m.max_length,
        **m.attention_options,
    )


def _tree_lstm(m: EncoderConfig, vocab_size: int, node_vocab_size: int) -> nn.Module:
    return TreeLSTMEncoder(
        vocab_size, node_vocab_size, m.d_model, m.dropout, m.max_length, **m.attention_options
    )


# Encoders that read trees, by ``model.attention`` name, with whether they need binary
# trees. Every other name is a token-level attention mechanism in a TransformerEncoder.
TREE_ENCODERS: dict[str, tuple[Callable[[EncoderConfig, int, int], nn.Module], bool]] = {
    "hierarchical": (_hierarchical, False),
    "tree-lstm": (_tree_lstm, True),
}


def model_names() -> list[str]:
    """Every value ``model.attention`` takes: attention mechanisms, then tree encoders."""
    return [*attention_names(), *TREE_ENCODERS]


def uses_trees(m: EncoderConfig) -> bool:
    return m.attention in TREE_ENCODERS


def uses_distances(m: EncoderConfig) -> bool:
    """Token-level mechanisms that read each sentence's tree as syntactic distances."""
    return m.attention == "distance"


def check_encoder(m: EncoderConfig, where: str) -> None:
    """Reject an encoder no run can build, naming the key."""
    positive = {
        "model.d_model": m.d_model,
        "model.n_heads": m.n_heads,
        "model.n_layers": m.n_layers,
        "model.d_ff": m.d_ff,
        "model.max_length": m.max_length,
    }
    check_positive(positive, where)
    if m.d_model % m.n_heads:
        raise ValueError(
            f"{where}: model.d_model={m.d_model} is not divisible by model.n_heads={m.n_heads}"
        )
    for key, value in (("dropout", m.dropout), ("attention_dropout", m.attention_dropout)):
        if value is not None and not 0 <= value < 1:
            raise ValueError(f"{where}: model.{key}={value} is out of range")
    if m.attention == "tree-lstm" and m.attention_dropout is not None:
        raise ValueError(f"{where}: model.attention_dropout: tree-lstm has no attention")
    if m.attention not in model_names():
        raise ValueError(
            f"{where}: model.attention={m.attention!r} is not known; "
            f"known: {', '.join(model_names())}"
        )
    options = _options(m.attention)
    for key in m.attention_options:
        if key not in options:
            raise ValueError(
                f"{where}: model.attention_options.{key} is not an option of {m.attention}; "
                f"its options: {', '.join(options) or 'none'}"
            )


def _options(name: str) -> list[str]:
    """The ``attention_options`` keys that ``model.attention=name`` takes."""
    if name == "hierarchical":  # the size arguments come from the model section
        sizes = {
            "d_model",
            "n_heads",
            "n_layers",
            "d_ff",
            "max_length",
            "dropout",
            "attention_dropout",
        }
        return [o for o in constructor_options(HierarchicalEncoder, skip=2) if o not in sizes]
    if name == "tree-lstm":
        return constructor_options(TreeLSTMEncoder, skip=5)
    return attention_options(name)


def build_tree_encoder(m: EncoderConfig, vocab_size: int, node_vocab_size: int) -> nn.Module:
    build, _ = TREE_ENCODERS[m.attention]
    try:
        return build(m, vocab_size, node_vocab_size)
    except TypeError as error:  # an option the encoder does not take
        raise ValueError(f"model.attention_options for {m.attention}: {error}") from None


def build_encoder(m: EncoderConfig, vocab_size: int) -> TransformerEncoder:
    """The Transformer encoder of a token-level attention mechanism, as configured."""
    return TransformerEncoder(
        vocab_size,
        d_model=m.d_model,
        n_heads=m.n_heads,
        n_layers=m.n_layers,
        d_ff=m.d_ff,
        dropout=m.dropout,
        attention=m.attention,
        positions=m.positions,
        max_length=m.max_length,
        attention_options=m.attention_options,
        attention_dropout=m.attention_dropout,
    )
