"""Hierarchical generalization as sequence to sequence (McCoy, Frank & Linzen 2020):
question formation or tense reinflection (``treeattn.data.mccoy``) with the translation
task's encoder-decoder, any encoder of the sentence tasks by name.

Words are the tokens: one vocabulary of the input and output words (a few dozen), no
subwords. The training set is drawn from the grammar with the paper's filter and cached
(``data.train_size`` pairs from ``data.train_seed``); dev, test and gen are the shared
files. Source trees: ``gold`` (the grammar's, the task word beside the sentence under the
top node), ``parser`` (the parser's tree of the sentence, the task word likewise beside
it) or ``right-branching`` (the control).

Every evaluation reports full-sequence accuracy and, on the pairs whose task word
transforms, the task's shares (question: main / first / neither auxiliary fronted; tense:
main verb agreeing with the subject / the most recent noun / other). Dev selects the
checkpoint (full-sequence accuracy); each dev evaluation also scores the first
``data.watch_gen`` gen pairs, logged as ``gen_*``, so that generalization over updates
can be plotted. Greedy decoding unless ``data.beam_size`` says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from treeattn import plugins
from treeattn.data.mccoy import MCCOY_SPLITS, QUESTION, TASKS, Example, McCoyData, training_set
from treeattn.data.mccoy.files import input_tree
from treeattn.data.mccoy.generate import MIXES, SHARED_MIX, TRAIN_SIZE
from treeattn.data.mccoy.scores import generalization_scores, sequence_accuracy
from treeattn.engine.config import Config
from treeattn.engine.task import Selection
from treeattn.parsing.tree_source import GOLD, PARSER, RIGHT_BRANCHING
from treeattn.tasks.datasets.mccoy import MCCOY, sentence_trees
from treeattn.tasks.translate import (
    Pair,
    TranslateModel,
    TranslateTask,
    TranslationSet,
    check_encoder_decoder,
)
from treeattn.trees import Tree

TREE_KINDS = (GOLD, PARSER, RIGHT_BRANCHING)
SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")  # the ids translation expects: 0, 1, 2, 3


@dataclass
class HierarchicalData:
    """``name``: ``mccoy``, the one data set (as the language-model tasks name it);
    ``task``: ``question`` or ``tense``; ``root``: the data folder (default from
    ``TREEATTN_DATA``); ``mix``: ``shared`` or ``grammar`` (``treeattn.data.mccoy.generate``);
    ``paths``: split (``dev``, ``test``, ``gen``) -> a file of ``input<TAB>output`` lines
    read in the shared split's place."""

    name: str = MCCOY
    task: str = "question"
    root: str | None = None
    paths: dict = field(default_factory=dict)
    train_size: int = TRAIN_SIZE
    train_seed: int = 0
    mix: str = SHARED_MIX
    trees: str = GOLD  # or parser, right-branching
    parser: str | None = None  # for parser trees: accurate (default), fast, or a file
    beam_size: int = 1  # 1: greedy
    length_penalty: float = 1.0
    watch_gen: int = 2000  # gen pairs scored at each dev evaluation; 0: none


class WordVocabulary:
    """Words as translation's subword models are used: ids 0-3 padding, unknown, start and
    end, then the words; ``encode`` and ``decode`` split and join on spaces."""

    def __init__(self, tokens: Sequence[str]) -> None:
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a word vocabulary starts with {', '.join(SPECIALS)}")
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}

    @classmethod
    def build(cls, sentences: Sequence[Sequence[str]]) -> WordVocabulary:
        return cls([*SPECIALS, *sorted({w for s in sentences for w in s} - set(SPECIALS))])

    def __len__(self) -> int:
        return len(self.tokens)

    def piece_ids(self, pieces: Sequence[str]) -> list[int]:
        return [self.index.get(p, 1) for p in pieces]

    def word_pieces(self, word: str) -> list[str]:
        return [word]

    def encode(self, text: str) -> list[int]:
        return self.piece_ids(text.split())

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(self.tokens[i] for i in ids)


@dataclass(frozen=True)
class GeneralizationPair(Pair):
    """A translation pair that keeps its McCoy example (for the metrics)."""

    example: Example | None = None


@plugins.tasks.register
class HierarchicalGeneralizationTask(TranslateTask):
    """Question formation or tense reinflection with an encoder-decoder; dev full-sequence
    accuracy selects the checkpoint, which is scored on dev, test and gen."""

    name = "hierarchical_generalization"
    Data = HierarchicalData
    Model = TranslateModel
    headline = ("sequence_accuracy",)  # and the task's shares (set per task)

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        d = cfg.data
        self.data = McCoyData.load(d.task, d.root)
        is_question = self.data.task is QUESTION
        keys = ("main_aux", "first_aux") if is_question else ("agree_subject", "agree_recent")
        self.headline = ("sequence_accuracy", *keys)
        self._gen_watch: TranslationSet | None = None

    @classmethod
    def check_config(cls, cfg: Config, where: str) -> None:
        d, m = cfg.data, cfg.model
        if d.name != MCCOY:
            raise ValueError(f"{where}: data.name={d.name!r}: this task reads {MCCOY}")
        if d.task not in TASKS:
            raise ValueError(f"{where}: data.task={d.task!r}: choose {', '.join(TASKS)}")
        if d.trees not in TREE_KINDS:
            raise ValueError(f"{where}: data.trees={d.trees!r}: choose {', '.join(TREE_KINDS)}")
        if d.mix not in MIXES:
            raise ValueError(f"{where}: data.mix={d.mix!r}: choose {', '.join(MIXES)}")
        for split, path in d.paths.items():
            if split not in MCCOY_SPLITS or not isinstance(path, str):
                raise ValueError(
                    f"{where}: data.paths.{split}: a split ({', '.join(MCCOY_SPLITS)}) and a file"
                )
        if d.watch_gen < 0:
            raise ValueError(f"{where}: data.watch_gen={d.watch_gen} is negative")
        positive = {"data.train_size": d.train_size, "data.beam_size": d.beam_size}
        check_encoder_decoder(m, positive, where)

    @property
    def title(self) -> str:
        return f"{self.cfg.model.attention}, {self.cfg.data.task} ({self.cfg.data.trees} trees)"

    # -- splits and data ----------------------------------------------------------------

    @property
    def selection(self) -> Selection:
        return Selection("dev", "sequence_accuracy", higher_is_better=True)

    @property
    def final_splits(self) -> tuple[str, ...]:
        return MCCOY_SPLITS

    def read(self, source: str) -> tuple[list[Pair], str]:
        """``train`` (drawn and cached), a shared split, or a file of ``input<TAB>output``
        lines."""
        d = self.cfg.data
        where = self._where(source)
        if source == self.train_split:
            examples = training_set(self.data, d.train_size, d.train_seed, d.mix)
        elif source in MCCOY_SPLITS and source not in d.paths:
            examples = self.data.load_split(source)
        else:
            path = d.paths.get(source, source)
            if not Path(path).is_file():
                raise FileNotFoundError(
                    f"{path!r} is neither a split ({', '.join(MCCOY_SPLITS)}) nor a file"
                )
            examples = self.data.read(path)
        return self._pairs(examples, where, for_loss=source == self.train_split), where

    def _where(self, source: str) -> str:
        """How errors and logs name a split (or a file)."""
        d = self.cfg.data
        if source == self.train_split:
            return f"{d.task} train ({d.train_size} pairs, seed {d.train_seed}, {d.mix} mix)"
        if source in MCCOY_SPLITS:
            return f"{d.task} {source}" + (f" ({d.paths[source]})" if source in d.paths else "")
        return source

    def _pairs(self, examples: Sequence[Example], where: str, for_loss: bool = False) -> list[Pair]:
        trees = self._source_trees(examples, where, for_loss)
        return [
            GeneralizationPair(
                " ".join(e.source), list(e.source), " ".join(e.target), tree, k, example=e
            )
            for k, (e, tree) in enumerate(zip(examples, trees, strict=True), start=1)
        ]

    def _source_trees(
        self, examples: Sequence[Example], where: str, for_loss: bool
    ) -> list[Tree | None]:
        """Each input's tree as the configured source gives it (None where neither the
        encoder nor, ``for_loss``, the tree loss reads one)."""
        if not self.reads_trees(for_loss):
            return [None] * len(examples)
        if self.tree_source.kind == GOLD:
            return [e.source_tree for e in examples]
        made = sentence_trees(self.tree_source, [e.source[:-1] for e in examples], where)
        return [input_tree(t, e.task_word) for t, e in zip(made, examples, strict=True)]

    def fit(self, train_examples: Sequence[Pair]) -> None:
        vocabulary = WordVocabulary.build(
            [p.words for p in train_examples] + [p.target.split() for p in train_examples]
        )
        self.source_subwords = self.target_subwords = vocabulary
        self.fit_trees(train_examples)

    def state_dict(self) -> dict[str, Any]:
        return {"words": self.source_subwords.tokens, **self.trees_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.source_subwords = self.target_subwords = WordVocabulary(state["words"])
        self.load_trees_state(state)

    def encode(self, examples: Sequence[Pair], where: str) -> TranslationSet:
        data = TranslationSet(self, examples, where)
        data.examples = [p.example for p in examples]
        data.watches_gen = where == self._where(self.selection.split)
        return data

    # -- metrics and predictions --------------------------------------------------------

    def _scores(
        self, model: nn.Module, data: TranslationSet, device: torch.device
    ) -> dict[str, Any]:
        predictions = [t.split() for t in self.translations(model, data, device)]
        examples = data.examples
        transforming = [
            (p, e)
            for p, e in zip(predictions, examples, strict=True)
            if e.task_word == self.data.task.transform_word
        ]
        scores: dict[str, Any] = {}
        if transforming:
            scores.update(generalization_scores(self.data, *zip(*transforming, strict=True)))
            scores["transform_accuracy"] = scores.pop("sequence_accuracy")
        scores["sequence_accuracy"] = sequence_accuracy(predictions, examples)
        scores["count"] = len(examples)
        return scores

    def evaluate(
        self, model: nn.Module, data: TranslationSet, device: torch.device
    ) -> dict[str, Any]:
        """Full-sequence accuracy, the shares on the transforming pairs, the mean
        cross-entropy of the references; for dev, the first ``data.watch_gen`` gen pairs'
        scores too (``gen_*``)."""
        scores = self._scores(model, data, device)
        scores["loss"] = self._loss(model, data, device)
        watch = self.cfg.data.watch_gen
        if getattr(data, "watches_gen", False) and watch:
            if self._gen_watch is None:
                pairs, where = self.read("gen")
                self._gen_watch = self.encode(pairs[:watch], f"{where} (first {watch})")
            gen = self._scores(model, self._gen_watch, device)
            scores.update({f"gen_{key}": value for key, value in gen.items()})
        return scores

    def read_inputs(self, lines: Sequence[str], where: str) -> list[Pair]:
        """One input a line (a sentence of the grammar and its task word); the pairs carry
        the correct outputs, unused in prediction."""
        examples = [
            self.data.example(line.split(), where=f"{where}:{k}")
            for k, line in enumerate(lines, start=1)
        ]
        return self._pairs(examples, where)

    def predict(
        self, model: nn.Module, data: TranslationSet, device: torch.device, output_format: str = ""
    ) -> list[str]:
        return self.translations(model, data, device)
