"""Sentence classification: ListOps, SST-5, SST-2, CoLA and labeled sentence files, with
any encoder (an attention mechanism in the Transformer, or a tree encoder)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from treeattn import plugins
from treeattn.data.batching import bucket_batches
from treeattn.data.sst import IGNORE_LABEL
from treeattn.data.vocab import Vocab
from treeattn.engine.config import Config
from treeattn.engine.task import Selection, Task, evaluating
from treeattn.errors import FormatError
from treeattn.metrics.classification import accuracy, matthews_correlation
from treeattn.models.classifier import SentenceClassifier, TreeClassifier
from treeattn.models.inputs import InputEncoder, PieceRows
from treeattn.models.pieces import load_splitter
from treeattn.models.pretrained import BackboneEncoder, BackboneSettings, backbone_parameter_groups
from treeattn.models.registry import (
    TREE,
    EncoderConfig,
    EncoderEntry,
    build_encoder,
    check_encoder,
    encoder_entry,
)
from treeattn.models.tree_loss import TreeLossSettings, with_tree_loss
from treeattn.parsing.tree_source import GOLD, TreeSource
from treeattn.tasks.class_outputs import FORMATS, class_outputs
from treeattn.tasks.datasets import (
    DataSet,
    ListOpsSettings,
    open_dataset,
    read_examples,
    settings_class,
)
from treeattn.tasks.encoding import EncodedSet, SentenceBatch, check_lengths, input_encoder
from treeattn.tasks.sentences import LabeledSentence, lowercased
from treeattn.trees import Tree
from treeattn.trees.tokenize import tokenize

# What a data set's splits may be scored by (``DataSet.metrics``): gold and predicted
# class ids -> a score, higher better.
METRICS = {"accuracy": accuracy, "mcc": matthews_correlation}
MLM_KEYS = ("mask_rate", "mask_split")  # of the data section all sentence tasks once shared
# The keys of the one data section that ListOps, SST and labeled files shared before each
# data set had settings of its own, which every checkpoint of that time holds (later ones
# also paths and operators).
SHARED_DATA_KEYS = frozenset(
    ("name", "root", "min_count", "lowercase", "phrase_level", "train_size", "dev_size")
    + ("test_size", "max_depth", "max_args", "max_length")
)


@dataclass
class ClassifyModel(EncoderConfig, BackboneSettings, TreeLossSettings):
    """The encoder (``model.attention``), on a pretrained backbone where ``backbone`` names
    one (``BackboneSettings``; ``models.registry._on_backbone``), the pooling, and a loss
    on the encoder's hidden states from each training sentence's tree where
    ``tree_loss`` names one (``TreeLossSettings``)."""

    # auto: mean over tokens for Transformer encoders, the root for tree encoders; or
    # mean, first (token encoders), root, mean (tree encoders: the mean over nodes)
    pooling: str = "auto"


@plugins.tasks.register
class ClassifyTask(Task):
    """One label per sentence, chosen on dev by the data set's first metric (accuracy;
    CoLA: Matthews correlation); predictions are class names."""

    name = "classify"
    # The data sets read (their settings are the data section), the first by default:
    # listops (generated), sst5 and sst2, cola, or labeled: the sentence files of data.paths.
    datasets: ClassVar[tuple[str, ...]] = ("listops", "sst5", "sst2", "cola", "labeled")
    Data = ListOpsSettings  # the default data set's; ``data_section`` picks the one named
    Model = ClassifyModel
    output_formats = FORMATS  # label, probabilities, jsonl (``class_outputs``)

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        self._piece_rows: PieceRows | None = None  # the backbone's tokenizer, once loaded
        self.vocab: Vocab | None = None
        self.node_vocab: Vocab | None = None
        self.dataset: DataSet = open_dataset(cfg.data)
        # Where the trees of a model that reads them come from, and (after fit, or from a
        # checkpoint) the record of those a trained model learned from (``TreeSource``).
        self.tree_source: TreeSource = self.dataset.tree_source()
        self.trees: dict[str, str] | None = None
        # A loss on hidden states from the training trees (``model.tree_loss``), and the
        # named parts of the last training loss, logged apart.
        self.tree_loss = cfg.model.build_tree_loss()
        self._loss_terms: dict[str, torch.Tensor] = {}
        # Fixed by the data set, or (labeled files) the training labels, found by ``fit``.
        self.classes = list(self.dataset.classes or ())

    @classmethod
    def data_section(cls, data: Any, where: str) -> tuple[type, Any]:
        """The settings dataclass of the data set ``data.name`` names (by default the first
        of ``datasets``) and the section to fill it with; a key of another data set is an
        error naming both. A section as checkpoints wrote it before (every shared key)
        drops the keys of other data sets, which those runs did not read (at their defaults,
        or ignored)."""
        if not isinstance(data, dict):
            return cls.Data, data  # None (the defaults) or an error, as any section
        name = data.get("name", cls.datasets[0])
        if name not in cls.datasets:
            raise ValueError(
                f"{where}: data.name={name!r} is not a classification data set; "
                f"known: {', '.join(cls.datasets)} (masked language modelling: task: mlm)"
            )
        data = {**data, "name": name}
        if SHARED_DATA_KEYS <= set(data):
            own = {f.name for f in fields(plugins.datasets[name].Settings)}
            if name != "listops":
                own.discard("train_size")  # then ListOps' alone; SST's came later
            data = {key: value for key, value in data.items() if key in own}
        return settings_class(data, where), data

    @classmethod
    def legacy_sections(cls, data: Any, model: Any) -> tuple[Any, Any]:
        # Masked-LM settings were ignored by classification runs.
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in MLM_KEYS}
        return data, model

    @classmethod
    def check_config(cls, cfg: Config, where: str) -> None:
        d, m = cfg.data, cfg.model
        plugins.datasets[d.name].check(d, where)
        m.check_backbone(where, cfg.train.schedule)
        entry = check_encoder(m, where, backbone=m.backbone is not None)
        poolings = ("auto", "mean", "root") if entry.output == TREE else ("auto", "mean", "first")
        if m.pooling not in poolings:
            raise ValueError(
                f"{where}: model.pooling={m.pooling!r} does not fit {m.attention}; "
                f"use {', '.join(poolings)}"
            )
        m.check_tree_loss(where, entry.module)

    @property
    def title(self) -> str:
        m = self.cfg.model
        on = "" if m.backbone is None else f" with {Path(m.backbone).name}"
        return f"{m.attention}{on} on {self.cfg.data.name}"

    # -- splits and data ----------------------------------------------------------------

    @property
    def headline(self) -> tuple[str, ...]:  # type: ignore[override]
        """The data set's metrics (``DataSet.metrics``): accuracy, or for CoLA Matthews
        correlation and accuracy."""
        return self.dataset.metrics

    @property
    def selection(self) -> Selection:
        return Selection("dev", self.dataset.metrics[0], higher_is_better=True)

    @property
    def final_splits(self) -> tuple[str, ...]:
        return tuple(s for s in self.dataset.splits if s != self.train_split)

    @property
    def _entry(self) -> EncoderEntry:
        """The registry's entry of the encoder, on the backbone where there is one."""
        m = self.cfg.model
        return encoder_entry(m.attention, backbone=m.backbone is not None)

    @property
    def _whole_trees(self) -> bool:
        """Whether the encoder reads each sentence's whole tree (its phrase nodes)."""
        return self._entry.reads_trees

    @property
    def _needs_trees(self) -> bool:
        """Whether training needs each sentence's tree: the encoder reads it, or a tree
        loss learns from it."""
        return self._entry.needs_trees or self.tree_loss is not None

    def read(self, source: str) -> tuple[list[LabeledSentence], str]:
        """The examples of ``source``; with trees where the encoder reads them, and for a
        tree loss in the training split (evaluation needs none)."""
        examples, where = read_examples(self.dataset, source, self._whole_trees)
        for_loss = self.tree_loss is not None and source == self.train_split
        if self.tree_source.kind != GOLD and (self._entry.needs_trees or for_loss):
            found = self._source_trees([ex.tokens for ex in examples], where, cache=True)
            examples = [replace(ex, tree=tree) for ex, tree in zip(examples, found, strict=True)]
            parser = self.tree_source.parsed_with
            if parser is not None and self.cfg.train.progress:
                # None is dropped: a sentence the parser cannot read (over its length
                # limit) stops the run with an error naming it.
                tqdm.write(
                    f"{where}: the parser's trees of all {len(found):,} sentences "
                    f"({parser['path']}, sha256 {parser['sha256'][:12]})",
                    file=sys.stderr,
                )
        if for_loss:
            for i, ex in enumerate(examples):
                if ex.tree is None:
                    raise ValueError(
                        f"{where}: sentence {i + 1} has no tree, which model.tree_loss "
                        "learns from; give the data trees or data.trees: parser"
                    )
        check_lengths(examples, self.cfg.model.max_length, where)
        return examples, where

    def use_trees(self, trees: str | None = None, parser: str | None = None) -> None:
        """From now on read ``trees`` (one of the data set's ``tree_kinds``, or a file of
        trees), whichever the model trained on, and parse with ``parser``
        (``TreeSource.overridden``)."""
        m, name = self.cfg.model, self.cfg.data.name
        if not self._entry.needs_trees:
            raise ValueError(
                f"a {m.attention} model on {name} reads no trees: --trees and --parser do not apply"
            )
        self.tree_source = self.tree_source.overridden(trees, parser, self.dataset.tree_kinds)
        if trees is not None and self.dataset.phrase_level:
            # Phrase labels belong to the gold trees and to training, never to a score.
            self.dataset.settings = replace(self.dataset.settings, phrase_level=False)

    def _source_trees(self, sentences: list[list[str]], where: str, cache: bool) -> list[Tree]:
        """The tree source's trees of ``sentences`` (for gold trees, of raw text: the
        parser's), made like the training trees (``training_tree``); with ``cache``, a
        parser's are kept under ``$TREEATTN_CACHE``."""
        found = self.tree_source.trees(sentences, where, progress=cache, cache=cache)
        return [self.training_tree(tree) for tree in found]

    def _inputs(self, node_vocab: Vocab | None = None) -> InputEncoder:
        """What the encoder reads; a backbone's tokenizer is read once, without its
        weights (the model reads them)."""
        m = self.cfg.model
        if m.backbone is not None and self._piece_rows is None:
            self._piece_rows = load_splitter(m.backbone).rows
        return input_encoder(m, node_vocab, self._piece_rows)

    def fit(self, train_examples: Sequence[LabeledSentence]) -> None:
        self.vocab = Vocab.build((ex.tokens for ex in train_examples), self.cfg.data.min_count)
        if self._whole_trees:
            inputs = self._inputs()
            self.node_vocab = Vocab.build(inputs.node_labels(_tree_of(ex)) for ex in train_examples)
        if self.dataset.classes is None:
            self.classes = _class_names(ex.label for ex in train_examples)
        self.trees = self.tree_source.record() if self._needs_trees else None

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"vocab": self.vocab.tokens}
        if self.node_vocab is not None:
            state["node_vocab"] = self.node_vocab.tokens
        if self.dataset.classes is None:
            state["classes"] = list(self.classes)
        if self.trees is not None:
            state["trees"] = dict(self.trees)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.vocab = Vocab(state["vocab"])
        if self._whole_trees:
            if "node_vocab" not in state:
                raise ValueError("a tree model's checkpoint without its node vocabulary")
            self.node_vocab = Vocab(state["node_vocab"])
        if self.dataset.classes is None:
            self.classes = list(state["classes"])
        # Checkpoints written before classify recorded its trees hold none.
        self.trees = state.get("trees")
        self.tree_source = self.tree_source.restored(self.trees)

    def encode(self, examples: Sequence[LabeledSentence], where: str) -> EncodedSet:
        labels = None
        if any(isinstance(ex.label, str) for ex in examples):
            index = {name: k for k, name in enumerate(self.classes)}
            labels = []
            for i, ex in enumerate(examples):
                if ex.label not in index:
                    raise ValueError(
                        f"{where}: sentence {i + 1} has the label {ex.label!r}, which training "
                        f"did not have ({', '.join(self.classes)})"
                    )
                labels.append(index[ex.label])
        inputs = self._inputs(self.node_vocab)
        return EncodedSet(examples, self.vocab, inputs, where, labels, self.tree_loss)

    # -- model, loss, metrics, predictions ----------------------------------------------

    def build_model(self) -> nn.Module:
        m, classes = self.cfg.model, len(self.classes)
        node_vocab_size = len(self.node_vocab) if self.node_vocab is not None else 0
        encoder = build_encoder(m, len(self.vocab), node_vocab_size, m.backbone is not None)
        if self._entry.output == TREE:
            pooling = "root" if m.pooling == "auto" else m.pooling
            if self.dataset.phrase_level and pooling != "root":
                raise ValueError(
                    "phrase-level training of a tree model trains every node's own prediction; "
                    f"the sentence is read at the root, so model.pooling={m.pooling!r} cannot "
                    "be used"
                )
            return TreeClassifier(encoder, classes, pooling=pooling, dropout=m.dropout)
        pooling = "mean" if m.pooling == "auto" else m.pooling
        return SentenceClassifier(encoder, classes, pooling, m.dropout)

    def parameter_groups(self, model: nn.Module) -> list[dict[str, Any]]:
        """On a backbone, its tuned weights at their own rate and warm-up
        (``backbone_parameter_groups``); everything else at ``train.lr``."""
        encoder = model.encoder
        if not isinstance(encoder, BackboneEncoder):
            return super().parameter_groups(model)
        return backbone_parameter_groups(model, encoder.backbone, self.cfg.model, "classifier")

    def loss(self, model: nn.Module, batch: SentenceBatch) -> torch.Tensor:
        """The classification loss (``_label_loss``), plus ``model.tree_loss_weight`` times
        the tree loss of the same pass's hidden states where ``model.tree_loss`` names one
        (logged apart as ``tree_loss``)."""
        if self.tree_loss is None:
            return self._label_loss(model, batch)
        loss, tree_loss = with_tree_loss(
            self.cfg.model,
            self.tree_loss,
            model,
            batch.inputs,
            batch.tree_targets,
            lambda: self._label_loss(model, batch),
        )
        self._loss_terms = {"tree_loss": tree_loss}
        return loss

    def loss_terms(self) -> dict[str, torch.Tensor]:
        return self._loss_terms

    def _label_loss(self, model: nn.Module, batch: SentenceBatch) -> torch.Tensor:
        """Cross-entropy of the sentence labels, or with phrase targets, of every labeled
        node and leaf together."""
        smoothing = self.cfg.train.label_smoothing
        if batch.node_targets is None:
            return F.cross_entropy(
                _logits(model, batch),
                batch.labels,
                ignore_index=IGNORE_LABEL,
                label_smoothing=smoothing,
            )
        node_logits, leaf_logits = model(batch.inputs, every_node=True)
        logits = torch.cat([node_logits.flatten(0, 1), leaf_logits.flatten(0, 1)])
        targets = torch.cat([batch.node_targets.flatten(), batch.leaf_targets.flatten()])
        total = F.cross_entropy(
            logits,
            targets,
            ignore_index=IGNORE_LABEL,
            reduction="sum",
            label_smoothing=smoothing,
        )
        # A batch whose phrases are all unlabeled (neutral, in SST-2) adds 0, not NaN.
        return total / (targets != IGNORE_LABEL).sum().clamp(min=1)

    @torch.no_grad()
    def _predictions(
        self, model: nn.Module, data: EncodedSet, device: torch.device
    ) -> tuple[torch.Tensor, float]:
        """Every example's class probabilities (N, L), and the summed cross-entropy of
        the labeled ones."""
        probabilities = torch.zeros(len(data), len(self.classes))
        total_loss = 0.0
        max_tokens = self.cfg.train.eval_max_tokens
        with evaluating(model):
            for indices in bucket_batches(data.lengths, max_tokens, shuffle=False):
                batch = data.batch(indices).to(device)
                logits = _logits(model, batch)
                loss = F.cross_entropy(
                    logits, batch.labels, ignore_index=IGNORE_LABEL, reduction="sum"
                )
                total_loss += loss.item()
                probabilities[indices] = logits.float().softmax(-1).cpu()
        return probabilities, total_loss

    def evaluate(self, model: nn.Module, data: EncodedSet, device: torch.device) -> dict[str, Any]:
        """The data set's metrics (accuracy; CoLA: Matthews correlation and accuracy) and
        mean cross-entropy over the sentences that have a label (SST-2 phrase-level
        training data also holds neutral sentences, labeled -1)."""
        probabilities, total_loss = self._predictions(model, data, device)
        predictions = probabilities.argmax(-1)
        labeled = data.labels >= 0
        gold, predicted = data.labels[labeled].tolist(), predictions[labeled].tolist()
        scores: dict[str, Any] = {name: METRICS[name](gold, predicted) for name in self.headline}
        return scores | {"loss": total_loss / max(1, len(gold)), "count": len(gold)}

    def read_inputs(self, lines: Sequence[str], where: str) -> list[LabeledSentence]:
        """One sentence per line: a ListOps expression; or, for the other data sets, one
        bracketed tree or a raw sentence, split into words as ``treeattn parse`` splits it
        (``tokenize``: "it." is two words, "wasn't" and "was n't" the same two). A model
        that reads trees gets, for words, the trees of its tree source (for a model
        trained on gold trees, its parser's), made as its training trees were
        (``training_tree``)."""
        m = self.cfg.model
        needs_tree = self._entry.needs_trees
        trees: dict[int, Tree] = {}
        words: dict[int, list[str]] = {}
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                raise FormatError("empty line", where, number, 1)
            tree = self.dataset.input_tree(line, where, number)
            if tree is not None:
                trees[number] = self.training_tree(tree)
            else:
                words[number] = tokenize(line)
        if words and needs_tree:
            numbers = list(words)
            found = self._source_trees([words[k] for k in numbers], where, cache=False)
            trees.update(zip(numbers, found, strict=True))
            words.clear()
        examples = [
            LabeledSentence(trees[k].leaves(), IGNORE_LABEL, trees[k])
            if k in trees
            else LabeledSentence(words[k], IGNORE_LABEL)
            for k in range(1, len(lines) + 1)
        ]
        if self.cfg.data.lowercase:
            examples = lowercased(examples)
        check_lengths(examples, m.max_length, where)
        return examples

    def training_tree(self, tree: Tree) -> Tree:
        """A tree read or parsed at prediction time, made like the training trees
        (``DataSet.training_tree``)."""
        return self.dataset.training_tree(tree, self._whole_trees)

    def predict(
        self, model: nn.Module, data: EncodedSet, device: torch.device, output_format: str = ""
    ) -> list[str]:
        """Each sentence's class, by name where the data set names its classes (SST:
        ``very negative`` ... ``very positive``), else its label; or every class's
        probability, or both as JSON (``output_format``: ``class_outputs``)."""
        probabilities, _ = self._predictions(model, data, device)
        names = self.dataset.class_names or self.classes
        return class_outputs(probabilities, names, output_format or FORMATS[0])


def _logits(model: nn.Module, batch: SentenceBatch) -> torch.Tensor:
    return model(batch.inputs)


def _tree_of(example: LabeledSentence) -> Tree:
    if example.tree is None:
        raise ValueError("tree models need data with trees")
    return example.tree


def _class_names(labels: Any) -> list[str]:
    """The distinct labels, in numeric order when every one is a number."""
    names = set(labels)
    try:
        return sorted(names, key=float)
    except ValueError:
        return sorted(names)
