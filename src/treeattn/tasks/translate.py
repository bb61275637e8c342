"""Translation from English on Multi30k: any encoder of the sentence tasks by name (an
attention mechanism in the Transformer encoder, or hierarchical accumulation over the
source's parse tree), a causal decoder, BLEU by sacrebleu.

The source is tokenized as the parser reads it (Penn Treebank tokens), then each word is
split into subword pieces (SentencePiece, learned on the training split): the hierarchical
encoder puts a word's pieces in a subtree under it (``split_subwords``), ``distance``
gives the gaps inside a word distance 0 (``gap_distances``). The target is split from raw
text and decoded back to detokenized text. Both subword models go into every checkpoint.

Source trees come from the task's tree source (``treeattn.parsing.tree_source``, which
names the settings): by default the parser's (``data.parser``), parsed once per split and
cached under ``$TREEATTN_CACHE`` (default ``~/.cache/treeattn``) with the parser's SHA-256
in the key; the checkpoint records that hash, so translating with another parser is
refused. ``data.trees: right-branching`` gives every sentence the right-branching tree
instead (the control of the tree encoders), and ``data.trees: files`` your own trees
(``data.tree_files``: split -> file, one bracketed tree a line).

``model.tree_loss`` (tree regularization, ``models.tree_loss``) adds a loss on the
encoder's hidden states from each training source's tree (each word's pieces a subtree
under it); the trees are read for the training split alone, none at inference.

The checkpoint is selected on val BLEU (beam search with ``data.beam_size``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from treeattn import plugins
from treeattn.data.batching import bucket_batches, pad_ids
from treeattn.data.multi30k import (
    MULTI30K_LANGUAGES,
    MULTI30K_SPLITS,
    load_multi30k,
    read_parallel,
)
from treeattn.data.subwords import BOS, EOS, PAD, Subwords
from treeattn.data.vocab import Vocab
from treeattn.engine.config import Config, check_positive
from treeattn.engine.task import Selection, Task, evaluating
from treeattn.errors import FormatError
from treeattn.metrics.bleu import bleu
from treeattn.models.decoder import TransformerDecoder
from treeattn.models.inputs import SUBWORD_NODE, EncoderInputs
from treeattn.models.registry import (
    EncoderConfig,
    EncoderEntry,
    build_encoder,
    check_encoder,
    encoder_entry,
)
from treeattn.models.translator import Translator
from treeattn.models.tree_loss import TreeLossSettings, with_tree_loss
from treeattn.parsing.tree_source import (
    FILES,
    PARSER,
    RIGHT_BRANCHING,
    TreeSource,
    read_tree_file,
)
from treeattn.tasks.encoding import input_encoder
from treeattn.trees import Tree
from treeattn.trees.tensors import split_subwords
from treeattn.trees.tokenize import tokenize

MULTI30K = "multi30k"
TREE_KINDS = (PARSER, RIGHT_BRANCHING, FILES)  # data.trees (there are no gold trees)


@dataclass
class TranslateData:
    """Multi30k with English as the source (``target``: ``de`` or ``fr``). ``train_fraction``
    keeps the first part of the training lines (subwords are learned on that part).
    ``paths`` (split -> file prefix ``P``, read as ``P.en`` and ``P.de``) puts other
    line-aligned files in a split's place."""

    name: str = MULTI30K
    root: str | None = None  # data folder; default from TREEATTN_DATA
    paths: dict = field(default_factory=dict)
    source: str = "en"
    target: str = "de"
    train_fraction: float = 1.0
    source_vocab_size: int = 8000  # at most: a small training set may give fewer pieces
    target_vocab_size: int = 8000
    trees: str = PARSER  # or right-branching, or files (``tree_files``)
    parser: str | None = None  # accurate (default) or fast (shipped), or a parser file
    tree_files: dict = field(default_factory=dict)  # split -> file of bracketed trees
    beam_size: int = 4  # 1: greedy
    length_penalty: float = 1.0


@dataclass
class TranslateModel(EncoderConfig, TreeLossSettings):
    """The encoder (``EncoderConfig``), the decoder's layers, and a loss on the encoder's
    hidden states from each training source's tree (``TreeLossSettings``)."""

    decoder_layers: int | None = None  # default: n_layers


def check_encoder_decoder(m: TranslateModel, positive: dict[str, Any], where: str) -> None:
    """Reject a model section no encoder-decoder can use, and data values (``positive``:
    key -> value) that must be positive, naming the key."""
    if m.decoder_layers is not None:
        positive = {**positive, "model.decoder_layers": m.decoder_layers}
    check_positive(positive, where)
    entry = check_encoder(m, where)
    if entry.module.cross_attention is None:
        raise ValueError(f"{where}: model.attention={m.attention} has no translation decoder")
    m.check_tree_loss(where, entry.module)


@dataclass(frozen=True)
class Pair:
    """A source sentence, its PTB words, its tree over them (encoders that read trees),
    its reference translation ("" when there is none) and its line in the file it came
    from (for errors)."""

    source: str
    words: list[str]
    target: str
    tree: Tree | None
    line: int


@dataclass
class TranslationBatch:
    """The source as the encoder reads it (pieces (B, n), and trees or gap distances where
    it reads them); ``targets`` (B, t + 1) the reference ids from the start word to the end
    word, padded with 0; ``tree_targets``: what a tree loss reads of the sources' trees."""

    inputs: EncoderInputs
    targets: torch.Tensor
    tree_targets: Any = None

    def to(self, device: torch.device) -> TranslationBatch:
        moved = None if self.tree_targets is None else self.tree_targets.to(device)
        return TranslationBatch(self.inputs.to(device), self.targets.to(device), moved)


class TranslationSet:
    """The sources as the encoder reads them (pieces, and trees or gap distances where it
    reads them), the target ids and the references, encoded once; with the task's tree
    loss, its targets of every source that has a tree (the training split's)."""

    def __init__(self, task: TranslateTask, pairs: Sequence[Pair], where: str) -> None:
        m = task.cfg.model
        self.inputs = input_encoder(m, task.node_vocab)
        self.references = [p.target for p in pairs]
        self.sources = []
        self.targets: list[torch.Tensor] = []
        self.lengths: list[int] = []
        self.tree_loss = task.tree_loss
        self.tree_targets: list[Any] = []
        for pair in pairs:
            flat = [piece for word in pair.words for piece in task.pieces(word)]
            if len(flat) > m.max_length:
                raise FormatError(
                    f"{len(flat)} source pieces, more than model.max_length={m.max_length}; "
                    "raise model.max_length",
                    where,
                    pair.line,
                )
            ids = task.source_subwords.piece_ids(flat)
            self.sources.append(
                self.inputs.sentence(
                    ids, pair.tree, pair.words, f"{where}:{pair.line}", task.pieces
                )
            )
            target = [BOS, *task.target_subwords.encode(pair.target), EOS]
            if len(target) - 1 > m.max_length:
                raise FormatError(
                    f"{len(target) - 1} target pieces, more than model.max_length="
                    f"{m.max_length}; raise model.max_length",
                    where,
                    pair.line,
                )
            self.targets.append(torch.tensor(target, dtype=torch.long))
            if self.tree_loss is not None:
                self.tree_targets.append(task.piece_tree_targets(pair, f"{where}:{pair.line}"))
            # Batches are cut by pieces alone, phrase nodes not counted, so that every
            # encoder trains on the same batches of sentences.
            self.lengths.append(max(len(flat), len(target) - 1))

    def __len__(self) -> int:
        return len(self.sources)

    def source_sizes(self) -> list[int]:
        """Each source's number of pieces."""
        return [len(item.ids) for item in self.sources]

    def batch(self, indices: Sequence[int]) -> TranslationBatch:
        inputs = self.inputs.batch([self.sources[i] for i in indices], PAD)
        targets, _ = pad_ids([self.targets[i] for i in indices], PAD)
        batch = TranslationBatch(inputs, targets)
        chosen = [self.tree_targets[i] for i in indices] if self.tree_targets else []
        if chosen and all(item is not None for item in chosen):
            batch.tree_targets = self.tree_loss.collate(chosen)
        return batch


@plugins.tasks.register
class TranslateTask(Task):
    """English -> German or French on Multi30k; BLEU on val selects the checkpoint and is
    reported on test_2016_flickr and test_2017_flickr, with sacrebleu's signature."""

    name = "translate"
    Data = TranslateData
    Model = TranslateModel
    headline = ("bleu", "signature")  # sacrebleu's signature goes with every score

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        self.source_subwords: Subwords | None = None
        self.target_subwords: Subwords | None = None
        self.node_vocab: Vocab | None = None
        # Where a trained model's source trees came from (``TreeSource.record``: its kind,
        # and for a parser its path and SHA-256); None before fit.
        self.trees: dict[str, str] | None = None
        self.tree_source = TreeSource(cfg.data.trees, cfg.data.parser)
        self._pieces: dict[str, list[str]] = {}
        self.tree_loss = cfg.model.build_tree_loss()
        self._loss_terms: dict[str, torch.Tensor] = {}

    @classmethod
    def check_config(cls, cfg: Config, where: str) -> None:
        d, m = cfg.data, cfg.model
        if d.name != MULTI30K:
            raise ValueError(f"{where}: data.name={d.name!r}: translation reads {MULTI30K}")
        if d.source != "en":
            raise ValueError(f"{where}: data.source={d.source!r}: the parser reads English")
        if d.target not in MULTI30K_LANGUAGES or d.target == d.source:
            raise ValueError(f"{where}: data.target={d.target!r}: choose de or fr")
        if not 0 < d.train_fraction <= 1:
            raise ValueError(f"{where}: data.train_fraction={d.train_fraction} is not in (0, 1]")
        if d.trees not in TREE_KINDS:
            raise ValueError(f"{where}: data.trees={d.trees!r}: choose {', '.join(TREE_KINDS)}")
        if (d.trees == FILES) != bool(d.tree_files):
            raise ValueError(
                f"{where}: data.trees=files reads data.tree_files (split -> file), and only "
                f"it does; data.trees={d.trees!r} with "
                f"{'these files' if d.tree_files else 'no files'}"
            )
        for key, files in (("tree_files", d.tree_files), ("paths", d.paths)):
            for split, path in files.items():
                if split not in MULTI30K_SPLITS or not isinstance(path, str):
                    raise ValueError(
                        f"{where}: data.{key}.{split}: a split ({', '.join(MULTI30K_SPLITS)}) "
                        "and a file name"
                    )
        positive = {
            "data.source_vocab_size": d.source_vocab_size,
            "data.target_vocab_size": d.target_vocab_size,
            "data.beam_size": d.beam_size,
        }
        check_encoder_decoder(m, positive, where)

    @property
    def title(self) -> str:
        d = self.cfg.data
        return f"{self.cfg.model.attention}, {d.source}->{d.target}"

    @property
    def _entry(self) -> EncoderEntry:
        return encoder_entry(self.cfg.model.attention)

    # -- splits and data ----------------------------------------------------------------

    @property
    def selection(self) -> Selection:
        return Selection("val", "bleu", higher_is_better=True)

    @property
    def final_splits(self) -> tuple[str, ...]:
        return ("val", "test_2016_flickr", "test_2017_flickr")

    def read(self, source: str) -> tuple[list[Pair], str]:
        """A split name, or a file prefix ``P`` with ``P.en`` and ``P.de`` (or ``.fr``)."""
        d = self.cfg.data
        if source in MULTI30K_SPLITS and source not in d.paths:
            rows = load_multi30k(source, d.source, d.target, d.root)
            where = f"multi30k {source}"
        else:
            prefix = d.paths.get(source, source)
            src, tgt = Path(f"{prefix}.{d.source}"), Path(f"{prefix}.{d.target}")
            if not src.is_file() or not tgt.is_file():
                raise FileNotFoundError(
                    f"{source!r} is neither a split name ({', '.join(MULTI30K_SPLITS)}) nor "
                    f"the prefix of {src} and {tgt}"
                )
            rows, where = read_parallel(src, tgt), str(src)
        split_lines = len(rows)
        if source == self.train_split and d.train_fraction < 1:
            rows = rows[: max(1, round(d.train_fraction * len(rows)))]
        sentences = [self.words(line, where, k) for k, (line, _) in enumerate(rows, start=1)]
        # The split's file of the run's config, unless a command named one (``use_trees``).
        split_file = self.tree_source.kind == FILES and self.tree_source.file is None
        tree_file = d.tree_files.get(source) if split_file else None
        given = None if tree_file is None else read_tree_file(tree_file, sentences, split_lines)
        trees = self._trees(sentences, where, given, for_loss=source == self.train_split)
        return [
            Pair(line, words, target, tree, k)
            for k, ((line, target), words, tree) in enumerate(
                zip(rows, sentences, trees, strict=True), start=1
            )
        ], where

    def words(self, line: str, where: str, number: int) -> list[str]:
        words = tokenize(line)
        if not words:
            raise FormatError("empty sentence", where, number)
        return words

    def _trees(
        self,
        sentences: list[list[str]],
        where: str,
        given: list[Tree] | None,
        cache: bool = True,
        for_loss: bool = False,
    ) -> list[Tree | None]:
        """The source trees an encoder that reads trees needs, or with ``for_loss`` (the
        training split) a tree loss (None for the others): ``given``, or the tree source's
        (its parses kept in the cache with ``cache``)."""
        if not self.reads_trees(for_loss):
            return [None] * len(sentences)
        if given is not None:
            return given
        return self.tree_source.trees(sentences, where, cache=cache)

    def reads_trees(self, for_loss: bool = True) -> bool:
        """Whether sources need trees: the encoder reads them, or (``for_loss``: the
        training split's) the tree loss does."""
        return self._entry.needs_trees or (for_loss and self.tree_loss is not None)

    def piece_tree_targets(self, pair: Pair, where: str) -> Any:
        """The tree loss's targets of ``pair``'s source tree over its pieces (each word's
        pieces a subtree under it; None where the pair has no tree)."""
        if pair.tree is None:
            return None
        # The tree's leaves are the words escaped (-LRB-): each takes its own word's pieces.
        words = iter(pair.words)
        tree = split_subwords(pair.tree, lambda _leaf: self.pieces(next(words)), SUBWORD_NODE)
        return self.tree_loss.targets(tree, where)

    def fit(self, train_examples: Sequence[Pair]) -> None:
        d = self.cfg.data
        self.source_subwords = Subwords.learn(
            (" ".join(p.words) for p in train_examples), d.source_vocab_size, self.cfg.seed
        )
        self.target_subwords = Subwords.learn(
            (p.target for p in train_examples), d.target_vocab_size, self.cfg.seed
        )
        self.fit_trees(train_examples)

    def fit_trees(self, train_examples: Sequence[Pair]) -> None:
        """After the source's pieces are known: where the trees come from, and the phrase
        labels of an encoder that reads them."""
        self._pieces = {}
        self.trees = self.tree_source.record() if self.reads_trees() else None
        if self._entry.reads_trees:
            inputs = input_encoder(self.cfg.model)
            self.node_vocab = Vocab.build(
                inputs.node_labels(p.tree, self.pieces) for p in train_examples
            )

    def pieces(self, word: str) -> list[str]:
        """A source word's subword pieces (memoised: words repeat)."""
        if word not in self._pieces:
            self._pieces[word] = self.source_subwords.word_pieces(word)
        return self._pieces[word]

    def state_dict(self) -> dict[str, Any]:
        return {
            "source_subwords": self.source_subwords.model,
            "target_subwords": self.target_subwords.model,
            **self.trees_state(),
        }

    def trees_state(self) -> dict[str, Any]:
        """What ``fit_trees`` learned, for ``state_dict``."""
        state: dict[str, Any] = {}
        if self.node_vocab is not None:
            state["node_vocab"] = self.node_vocab.tokens
        if self.trees is not None:
            state["trees"] = dict(self.trees)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.source_subwords = Subwords(bytes(state["source_subwords"]))
        self.target_subwords = Subwords(bytes(state["target_subwords"]))
        self.load_trees_state(state)

    def load_trees_state(self, state: dict[str, Any]) -> None:
        """Restore what ``trees_state`` gave, instead of ``fit_trees``."""
        self._pieces = {}
        if self._entry.reads_trees:
            self.node_vocab = Vocab(state["node_vocab"])
        self.trees = state.get("trees")
        self.tree_source = self.tree_source.restored(self.trees)

    def use_trees(self, trees: str | None = None, parser: str | None = None) -> None:
        """From now on read ``trees`` (parser, right-branching, or a file of trees, one a
        line of what is read next), whichever the model trained on, and parse with
        ``parser`` (``TreeSource.overridden``)."""
        if not self._entry.needs_trees:
            raise ValueError(
                f"a {self.cfg.model.attention} translation model reads no trees: --trees "
                "and --parser do not apply"
            )
        # Files are named one by one: a split's (data.tree_files) or the one given here.
        self.tree_source = self.tree_source.overridden(trees, parser, (PARSER, RIGHT_BRANCHING))

    def encode(self, examples: Sequence[Pair], where: str) -> TranslationSet:
        return TranslationSet(self, examples, where)

    # -- model, loss, metrics, predictions ----------------------------------------------

    def build_model(self) -> nn.Module:
        m = self.cfg.model
        node_vocab_size = len(self.node_vocab) if self.node_vocab is not None else 0
        encoder = build_encoder(m, len(self.source_subwords), node_vocab_size)
        decoder = TransformerDecoder(
            len(self.target_subwords),
            d_model=m.d_model,
            n_heads=m.n_heads,
            n_layers=m.decoder_layers or m.n_layers,
            d_ff=m.d_ff,
            dropout=m.dropout,
            attention_dropout=m.attention_dropout,
            max_length=m.max_length,
            cross_attention=encoder.cross_attention,  # the encoder names how it is read
        )
        return Translator(encoder, decoder)

    def loss(self, model: nn.Module, batch: TranslationBatch) -> torch.Tensor:
        """Label-smoothed cross-entropy of the next word, averaged over target words; plus
        ``model.tree_loss_weight`` times the tree loss of the same pass's encoder states
        where ``model.tree_loss`` names one (logged apart as ``tree_loss``)."""

        def next_word_loss() -> torch.Tensor:
            logits = model(batch.inputs, batch.targets[:, :-1])
            return F.cross_entropy(
                logits.flatten(0, 1),
                batch.targets[:, 1:].flatten(),
                ignore_index=PAD,
                label_smoothing=self.cfg.train.label_smoothing,
            )

        if self.tree_loss is None:
            return next_word_loss()
        loss, tree_loss = with_tree_loss(
            self.cfg.model, self.tree_loss, model, batch.inputs, batch.tree_targets, next_word_loss
        )
        self._loss_terms = {"tree_loss": tree_loss}
        return loss

    def loss_terms(self) -> dict[str, torch.Tensor]:
        return self._loss_terms

    def translations(
        self,
        model: nn.Module,
        data: TranslationSet,
        device: torch.device,
        beam_size: int | None = None,
        progress: bool = False,
    ) -> list[str]:
        """Each source's detokenized translation, in the order of ``data``; the longest
        allowed is 1.5 times the source's pieces plus 10 (within ``model.max_length``), so
        a sentence's translation does not depend on the others in its batch."""
        d = self.cfg.data
        beam = beam_size or d.beam_size
        outputs: list[str] = [""] * len(data)
        sizes = data.source_sizes()
        batches = bucket_batches(sizes, self.cfg.train.eval_max_tokens // beam, shuffle=False)
        # A bar only on a terminal (tqdm reads disable=None so): a log file gets none.
        bar = tqdm(
            total=len(data), unit="sentence", disable=None if progress else True, leave=False
        )
        with evaluating(model), bar:
            for indices in batches:
                batch = data.batch(indices).to(device)
                sources = torch.tensor([sizes[i] for i in indices], device=device)
                longest = (1.5 * sources).ceil().long().add(10).clamp(max=self.cfg.model.max_length)
                found = model.translate(
                    batch.inputs,
                    BOS,
                    EOS,
                    longest,
                    beam,
                    d.length_penalty,
                )
                for i, ids in zip(indices, found, strict=True):
                    outputs[i] = self.target_subwords.decode(ids)
                bar.update(len(indices))
        return outputs

    @torch.no_grad()
    def _loss(self, model: nn.Module, data: TranslationSet, device: torch.device) -> float:
        """Mean cross-entropy (no smoothing) per target word, the end word included."""
        total, words = 0.0, 0
        with evaluating(model):
            for indices in bucket_batches(data.lengths, self.cfg.train.eval_max_tokens, False):
                batch = data.batch(indices).to(device)
                logits = model(batch.inputs, batch.targets[:, :-1])
                gold = batch.targets[:, 1:].flatten()
                total += F.cross_entropy(
                    logits.flatten(0, 1), gold, ignore_index=PAD, reduction="sum"
                ).item()
                words += int((gold != PAD).sum())
        return total / max(1, words)

    def evaluate(
        self, model: nn.Module, data: TranslationSet, device: torch.device
    ) -> dict[str, Any]:
        """BLEU of the detokenized translations against the raw references, sacrebleu's
        signature, and the mean cross-entropy and perplexity of the references."""
        loss = self._loss(model, data, device)
        scored = bleu(self.translations(model, data, device), data.references)
        return {
            "bleu": scored.score,
            "loss": loss,
            "perplexity": math.exp(min(loss, 50.0)),
            "count": len(data),
            "signature": scored.signature,
        }

    def read_inputs(self, lines: Sequence[str], where: str) -> list[Pair]:
        """One raw source sentence a line (parsed when the encoder reads trees)."""
        return self.sources(lines, where)

    def sources(
        self,
        lines: Sequence[str],
        where: str,
        numbers: Sequence[int] | None = None,
        trees: Sequence[Tree] | None = None,
        trees_where: str = "",
        cache: bool = False,
    ) -> list[Pair]:
        """Raw source sentences as pairs without references; ``numbers`` are their line
        numbers in ``where`` (default 1, 2, ...), for errors; ``trees``, when given, are
        theirs (leaves: the sentence's PTB words), read from ``trees_where`` at the same
        line numbers; else the model's parser gives them, kept in ``$TREEATTN_CACHE``
        only with ``cache`` (input files are many and seldom read twice; splits are few)."""
        numbers = list(numbers or range(1, len(lines) + 1))
        sentences = [self.words(line, where, k) for line, k in zip(lines, numbers, strict=True)]
        limit = self.cfg.model.max_length
        for words, k in zip(sentences, numbers, strict=True):
            size = sum(len(self.pieces(w)) for w in words)
            if size > limit:
                raise FormatError(
                    f"{size} source pieces, more than the model's limit of {limit}", where, k
                )
        if trees is not None:
            for tree, words, k in zip(trees, sentences, numbers, strict=True):
                tree.check_leaves(words, trees_where or where, k)
        trees = self._trees(sentences, where, None if trees is None else list(trees), cache)
        return [
            Pair(line, words, "", tree, k)
            for line, words, tree, k in zip(lines, sentences, trees, numbers, strict=True)
        ]

    def predict(
        self, model: nn.Module, data: TranslationSet, device: torch.device, output_format: str = ""
    ) -> list[str]:
        return self.translations(model, data, device)
