"""Encoders by name (``model.attention``), each declaring what it reads and its options.

Every name is a mechanism of the one registry (``treeattn.plugins.mechanisms``): an
attention layer inside the Transformer encoder (``Mechanism.layer``), or a whole encoder
that registers an ``EncoderEntry`` (a ``Mechanism`` that builds its own encoder) in its own
file (hierarchical accumulation, the Tree-LSTM); a mechanism that is a loss alone is no
encoder. Tasks ask an entry what to put in a batch (``reads``), what the encoder gives back
(``output``) and build it; no module outside a mechanism's own files compares its name.

>>> entry = encoder_entry("distance")
>>> sorted(str(r) for r in entry.reads), entry.output
(['gap_distances'], 'tokens')
>>> [f.name for f in fields(entry.options)]
['local_heads', 'layers', 'gate', 'tau']
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import KW_ONLY, MISSING, dataclass, field, fields, make_dataclass, replace
from typing import Any

from torch import nn

from treeattn import plugins
from treeattn.attention.registry import Mechanism, Reads, keyword_options
from treeattn.engine.config import check_positive
from treeattn.models.backbone import Backbone, load_backbone
from treeattn.models.encoder import TransformerEncoder
from treeattn.models.pretrained import BackboneEncoder
from treeattn.models.syntax_injection import inject_syntax
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
class EncoderEntry(Mechanism):
    """One ``model.attention`` name: a mechanism (its ``name``, ``reads`` and
    ``capabilities``) with the encoder it makes.

    ``build(model_section, vocab_size, node_vocab_size)`` makes the encoder, whose class is
    ``module``: it has ``encode_inputs(EncoderInputs)`` returning token states (B, n, d)
    (``output`` ``tokens``) or leaf and node states (``output`` ``tree``), and
    ``cross_attention``, the attention a translation decoder reads it with
    (``models.cross_attention``; ``None``: it feeds no decoder). ``options`` is the
    dataclass of its ``model.attention_options``; ``check_tree(options, arrays, where)``
    rejects a tree it cannot read before training.
    A whole encoder registers its entry (``plugins.mechanisms.register``); an attention
    layer's is made here (``encoder_entry``).
    """

    _: KW_ONLY
    module: type[nn.Module]
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
        return bool(self.reads - {Reads.PIECES})


def options_dataclass(name: str, cls: type, sizes: Collection[str] = SIZES) -> type:
    """A dataclass of the keyword options of ``cls(...)``, with their defaults."""
    specs = []
    for p in keyword_options(cls, sizes):
        default = MISSING if p.default is p.empty else p.default
        specs.append((p.name, Any, field(default=default)))
    title = "".join(part.capitalize() for part in name.replace("-", "_").split("_"))
    return make_dataclass(f"{title}Options", specs, frozen=True)


def _transformer(mechanism: Mechanism) -> EncoderEntry:
    """The Transformer encoder whose self-attention is ``mechanism``'s layer."""

    def build(m: EncoderConfig, vocab_size: int, node_vocab_size: int) -> nn.Module:
        return TransformerEncoder(
            vocab_size,
            d_model=m.d_model,
            n_heads=m.n_heads,
            n_layers=m.n_layers,
            d_ff=m.d_ff,
            dropout=m.dropout,
            attention=mechanism.name,
            positions=m.positions,
            max_length=m.max_length,
            attention_options=m.attention_options,
            attention_dropout=m.attention_dropout,
        )

    sizes = {"d_model", "n_heads", "dropout"}
    return EncoderEntry(
        mechanism.name,
        reads=mechanism.reads,
        capabilities=mechanism.capabilities,
        layer=mechanism.layer,
        module=TransformerEncoder,
        options=options_dataclass(mechanism.name, mechanism.layer, sizes),
        build=build,
    )


def _is_encoder(mechanism: Mechanism) -> bool:
    return isinstance(mechanism, EncoderEntry) or mechanism.layer is not None


def encoder_names() -> list[str]:
    """Every value ``model.attention`` takes: the mechanisms that are an encoder or a layer
    of one, in the order registered."""
    return [m.name for m in plugins.mechanisms.entries() if _is_encoder(m)]


def encoder_entry(name: str, backbone: bool = False) -> EncoderEntry:
    """The entry of ``model.attention: name``; with ``backbone``, that of ``name`` on a
    pretrained backbone (``model.backbone``, ``_on_backbone``)."""
    if backbone:
        return _on_backbone(name)
    known = encoder_names()
    if name not in known:
        raise ValueError(f"model.attention={name!r} is not known; known: {', '.join(known)}")
    mechanism = plugins.mechanisms[name]
    return mechanism if isinstance(mechanism, EncoderEntry) else _transformer(mechanism)


def _load_backbone(m: Any) -> Backbone:
    return load_backbone(m.backbone, **m.backbone_options())


def _on_backbone(name: str) -> EncoderEntry:
    """``name`` on the pretrained backbone ``model.backbone``, which reads each sentence's
    pieces (``Reads.PIECES``). A mechanism that can edit a pretrained encoder's heads
    (``Capabilities.injection``) goes inside the backbone's attention, in the heads and
    layers its ``model.attention_options`` name; any other encoder reads the backbone's
    word vectors in place of its embeddings, with ``model.n_layers`` layers on top (0:
    none, the plain backbone, for an encoder with nothing to read and no options, see
    ``backbone_alone``).
    """
    entry = encoder_entry(name)
    injection = entry.capabilities.injection
    if injection is not None:

        def inside(m: EncoderConfig, vocab_size: int, node_vocab_size: int) -> nn.Module:
            backbone = _load_backbone(m)
            inject_syntax(backbone.injectable, name, **m.attention_options)
            return BackboneEncoder(backbone)

        sizes = {"n_layers", "n_heads", "d_model"}
        options = options_dataclass(f"{name}_inside", injection, sizes)
        reads = injection.reads | {Reads.PIECES}
        return replace(entry, module=BackboneEncoder, reads=reads, options=options, build=inside)

    def on_top(m: EncoderConfig, vocab_size: int, node_vocab_size: int) -> nn.Module:
        # The words come from the backbone: the top's own table keeps its padding row only.
        top = None if m.n_layers == 0 else entry.build(m, 1, node_vocab_size)
        return BackboneEncoder(_load_backbone(m), top)

    return replace(entry, module=BackboneEncoder, reads=entry.reads | {Reads.PIECES}, build=on_top)


def backbone_alone(name: str) -> bool:
    """Whether ``name`` on a backbone may have no layers on top (``model.n_layers: 0``): it
    reads nothing and has no options, so that leaving it out leaves nothing unread."""
    entry = encoder_entry(name)
    return (
        entry.capabilities.injection is None
        and entry.output == TOKENS
        and not entry.reads
        and not fields(entry.options)
    )


def check_encoder(m: EncoderConfig, where: str, backbone: bool = False) -> EncoderEntry:
    """Reject an encoder no run can build, naming the key; the entry it names (on a
    pretrained backbone with ``backbone``)."""
    positive = {
        "model.d_model": m.d_model,
        "model.n_heads": m.n_heads,
        "model.d_ff": m.d_ff,
        "model.max_length": m.max_length,
    }
    if not (backbone and m.n_layers == 0):
        positive["model.n_layers"] = m.n_layers
    elif m.attention in encoder_names() and not (
        encoder_entry(m.attention).capabilities.injection is not None or backbone_alone(m.attention)
    ):
        raise ValueError(
            f"{where}: model.n_layers=0 (no layers on top of the backbone) leaves "
            f"{m.attention} out; give it 1 or more"
        )
    check_positive(positive, where)
    if m.d_model % m.n_heads:
        raise ValueError(
            f"{where}: model.d_model={m.d_model} is not divisible by model.n_heads={m.n_heads}"
        )
    for key, value in (("dropout", m.dropout), ("attention_dropout", m.attention_dropout)):
        if value is not None and not 0 <= value < 1:
            raise ValueError(f"{where}: model.{key}={value} is out of range")
    try:
        entry = encoder_entry(m.attention, backbone)
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
    for f in fields(entry.options):
        if f.default is MISSING and f.name not in m.attention_options:
            raise ValueError(f"{where}: model.attention_options.{f.name} is needed by {entry.name}")
    return entry


def build_encoder(
    m: EncoderConfig, vocab_size: int, node_vocab_size: int = 0, backbone: bool = False
) -> nn.Module:
    """The encoder the model section names (``node_vocab_size``: for encoders that read
    phrase nodes; ``backbone``: on the pretrained backbone the section names)."""
    entry = encoder_entry(m.attention, backbone)
    try:
        return entry.build(m, vocab_size, node_vocab_size)
    except TypeError as error:  # an option the encoder does not take
        raise ValueError(f"model.attention_options for {entry.name}: {error}") from None
