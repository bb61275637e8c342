"""Encoders by name (``model.attention``), each declaring what it reads and its options.

An entry is either an attention mechanism inside the Transformer encoder (every name of
``treeattn.attention``, registered there with what it reads) or a whole encoder that
registers itself here, in its own file (hierarchical accumulation, the Tree-LSTM). Tasks
ask an entry what to put in a batch (``reads``), what the encoder gives back (``output``)
and build it; no module outside a mechanism's own files compares its name.

>>> entry = encoder_entry("distance")
>>> sorted(str(r) for r in entry.reads), entry.output
(['gap_distances'], 'tokens')
>>> [f.name for f in fields(entry.options)]
['local_heads', 'layers', 'gate', 'tau']
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import MISSING, dataclass, field, fields, make_dataclass
from typing import Any

from torch import nn

from treeattn.attention.registry import (
    Reads,
    attention_class,
    attention_names,
    attention_reads,
    keyword_options,
)
from treeattn.engine.config import check_positive
from treeattn.models.encoder import TransformerEncoder
from treeattn.trees.tensors import TreeArrays

TOKENS, TREE = "tokens", "tree"  # what an encoder gives back: token states, or leaf and node states
# Constructor parameters the model section sets, never options.
SIZES = frozenset(
    {"vocab_size", "node_vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "dropout"}
    | {"attention_dropout", "max_length", "positions", "attention", "attention_options"}
)


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


@dataclass(frozen=True)
class EncoderEntry:
    """One ``model.attention`` name.

    ``build(model_section, vocab_size, node_vocab_size)`` makes the encoder, whose class is
    ``module``: it has ``encode_inputs(EncoderInputs)`` returning token states (B, n, d)
    (``output`` ``tokens``) or leaf and node states (``output`` ``tree``), and
    ``cross_attends``, what a translation decoder reads of it (``None``: it feeds no
    decoder). ``options`` is the dataclass of its ``model.attention_options``;
    ``check_tree(options, arrays, where)`` rejects a tree it cannot read before training.
    """

    name: str
    module: type[nn.Module]
    reads: frozenset[Reads]
    options: type
    build: Callable[[EncoderConfig, int, int], nn.Module]
    output: str = TOKENS
    has_attention: bool = True
    check_tree: Callable[[dict, TreeArrays, str], None] | None = None

    @property
    def reads_trees(self) -> bool:
        """Whether batches carry phrase nodes (node label ids and tree tensors)."""
        return bool(self.reads & {Reads.TREES, Reads.BINARY_TREES})

    @property
    def needs_trees(self) -> bool:
        """Whether each sentence needs a tree, in whatever form it is read."""
        return bool(self.reads)


_ENCODERS: dict[str, EncoderEntry] = {}


def options_dataclass(name: str, cls: type, sizes: Collection[str] = SIZES) -> type:
    """A dataclass of the keyword options of ``cls(...)``, with their defaults."""
    specs = []
    for p in keyword_options(cls, sizes):
        default = MISSING if p.default is p.empty else p.default
        specs.append((p.name, Any, field(default=default)))
    title = "".join(part.capitalize() for part in name.replace("-", "_").split("_"))
    return make_dataclass(f"{title}Options", specs, frozen=True)


def register_encoder(entry: EncoderEntry) -> EncoderEntry:
    """Make ``entry`` available as ``model.attention: <entry.name>``."""
    if entry.name in _ENCODERS or entry.name in attention_names():
        raise ValueError(f"an encoder named {entry.name!r} is already registered")
    _ENCODERS[entry.name] = entry
    return entry


def _transformer(name: str) -> EncoderEntry:
    """The Transformer encoder whose self-attention is the mechanism ``name``."""

    def build(m: EncoderConfig, vocab_size: int, node_vocab_size: int) -> nn.Module:
        return TransformerEncoder(
            vocab_size,
            d_model=m.d_model,
            n_heads=m.n_heads,
            n_layers=m.n_layers,
            d_ff=m.d_ff,
            dropout=m.dropout,
            attention=name,
            positions=m.positions,
            max_length=m.max_length,
            attention_options=m.attention_options,
            attention_dropout=m.attention_dropout,
        )

    options = options_dataclass(name, attention_class(name), {"d_model", "n_heads", "dropout"})
    return EncoderEntry(name, TransformerEncoder, attention_reads(name), options, build)


def encoder_names() -> list[str]:
    """Every value ``model.attention`` takes: attention mechanisms, then whole encoders."""
    return [*attention_names(), *_ENCODERS]


def encoder_entry(name: str) -> EncoderEntry:
    if name in _ENCODERS:
        return _ENCODERS[name]
    if name in attention_names():
        return _transformer(name)
    raise ValueError(f"model.attention={name!r} is not known; known: {', '.join(encoder_names())}")


def check_encoder(m: EncoderConfig, where: str) -> EncoderEntry:
    """Reject an encoder no run can build, naming the key; the entry it names."""
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
    try:
        entry = encoder_entry(m.attention)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    if not entry.has_attention and m.attention_dropout is not None:
        raise ValueError(f"{where}: model.attention_dropout: {entry.name} has no attention")
    known = [f.name for f in fields(entry.options)]
    for key in m.attention_options:
        if key not in known:
            raise ValueError(
                f"{where}: model.attention_options.{key} is not an option of {entry.name}; "
                f"its options: {', '.join(known) or 'none'}"
            )
    return entry


def build_encoder(m: EncoderConfig, vocab_size: int, node_vocab_size: int = 0) -> nn.Module:
    """The encoder the model section names (``node_vocab_size``: for encoders that read
    phrase nodes)."""
    entry = encoder_entry(m.attention)
    try:
        return entry.build(m, vocab_size, node_vocab_size)
    except TypeError as error:  # an option the encoder does not take
        raise ValueError(f"model.attention_options for {entry.name}: {error}") from None
