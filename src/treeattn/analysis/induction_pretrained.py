"""Trees from a pretrained model with no training (``zero_shot_trees``), scored on the PTB
sample: every layer's trees by each method, the layer chosen by sentence F1 on the dev
split, the chosen layer's trees reported on another split beside random, left- and
right-branching trees (``induction_scores``), and F1 by layer as a table, JSON and a figure.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from treeattn.analysis.induction import (
    PreparedText,
    bracketed,
    describe_removal,
    drop_punctuation,
    text_sentences,
)
from treeattn.analysis.induction_scores import (
    InductionScores,
    ptb_sentences,
    score_induction,
    score_variants,
)
from treeattn.analysis.zero_shot_trees import (
    ATTENTION_DISTANCES,
    HIDDEN_DISTANCES,
    METHODS,
    ZeroShotModel,
    layer_trees,
)
from treeattn.data.ptb import load_ptb_sample
from treeattn.data.text import TaggedSentence
from treeattn.metrics.unsupervised import UnsupervisedF1
from treeattn.trees import Tree

CHOICE_SPLIT = "dev"  # where the layer is chosen


def kept_words(sentences: Sequence[TaggedSentence], drop: bool) -> list[list[int]]:
    """The indices of the words a tree is built over: all, or those not punctuation."""
    return [[i for i, punct in enumerate(s.punctuation) if not (drop and punct)] for s in sentences]


def text_lines(drop: bool, prepared: PreparedText, rule: str) -> list[str]:
    """What the model read, what the trees cover and what was left out of them."""
    cover = "the words without punctuation" if drop else "every word"
    lines = [f"text: the model reads each sentence whole, punctuation included; trees over {cover}"]
    return [*lines, describe_removal(prepared, rule)] if drop else lines


@dataclass(frozen=True)
class Method:
    """A method and the distance it uses (``perturbed``: L2 between states, always)."""

    name: str
    distance: str = ""

    @property
    def label(self) -> str:
        return f"{self.name} {self.distance}" if self.distance else self.name


def methods_for(
    model: ZeroShotModel,
    names: Sequence[str] | None,
    hidden_distance: str = "l2",
    attention_distance: str = "js",
) -> list[Method]:
    """The methods asked for (default: every one the model allows), refusing perturbed
    masking for a model with no mask token."""
    if hidden_distance not in HIDDEN_DISTANCES:
        raise ValueError(f"unknown hidden-state distance {hidden_distance!r}")
    if attention_distance not in ATTENTION_DISTANCES:
        raise ValueError(f"unknown attention distance {attention_distance!r}")
    allowed = model.methods()
    chosen = list(names) if names else allowed
    for name in chosen:
        if name not in METHODS:
            raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}")
        if name not in allowed:
            raise ValueError(
                f"{model.name} has no mask token: perturbed masking is for masked LMs; "
                f"use {' or '.join(allowed)}"
            )
    distance = {"hidden": hidden_distance, "attention": attention_distance, "perturbed": ""}
    return [Method(name, distance[name]) for name in dict.fromkeys(chosen)]


@dataclass
class SplitTrees:
    """One split's sentences: gold trees (PTB) or none (text), the words the trees cover,
    and each method's trees per layer."""

    gold: list[Tree] | None
    prepared: PreparedText
    by_layer: dict[str, list[list[Tree]]]  # method label -> per layer, one tree a sentence
    seconds: dict[str, float]  # method label -> time the model took


def split_trees(
    model: ZeroShotModel,
    sentences: Sequence[TaggedSentence],
    methods: Sequence[Method],
    drop: bool,
    where: str,
    gold: list[Tree] | None = None,
    bias: float = 0.0,
) -> SplitTrees:
    """Every layer's trees by each method over the kept words of ``sentences``, after
    the right-skewness ``bias`` (``zero_shot_trees.right_skewed``)."""
    prepared = drop_punctuation(sentences, drop, where)
    kept = kept_words(sentences, drop)
    words = [s.words for s in sentences]
    by_layer, seconds = {}, {}
    for method in methods:
        options = {"hidden_distance": "l2", "attention_distance": "js"}
        if method.distance:
            options[f"{method.name}_distance"] = method.distance
        start = time.perf_counter()
        distances = model.distances(words, kept, [method.name], **options)[method.name]
        seconds[method.label] = time.perf_counter() - start
        layers = len(model.layers(method.name))
        trees = [
            layer_trees(w, d, bias) for w, d in zip(prepared.sentences, distances, strict=True)
        ]
        by_layer[method.label] = [[t[layer] for t in trees] for layer in range(layers)]
    return SplitTrees(gold, prepared, by_layer, seconds)


def ptb_split(split: str) -> tuple[list[Tree], list[TaggedSentence]]:
    gold = [e.tree for e in load_ptb_sample(None if split == "all" else split, clean=True)]
    return gold, ptb_sentences(gold)


@dataclass(frozen=True)
class MethodLayers:
    """One method's F1 at every layer, on the choice split and the reported one, and the
    layer chosen."""

    method: Method
    layers: list[int]
    choice: list[UnsupervisedF1] | None  # None: the layer was given
    reported: list[UnsupervisedF1]
    chosen: int  # the layer (a number in ``layers``)
    sentences_per_second: float


def _f1_json(f1: UnsupervisedF1) -> dict[str, float]:
    return {"sentence_f1": round(f1.sentence_f1, 2), "corpus_f1": round(f1.corpus_f1, 2)}


@dataclass(frozen=True)
class PretrainedPTB:
    """Trees from a pretrained model's layers, scored on the PTB sample."""

    model: str
    split: str
    drop: bool
    bias: float
    prepared: PreparedText
    methods: list[MethodLayers]
    scores: InductionScores  # the chosen layers on ``split``, with baselines
    baselines: dict[str, UnsupervisedF1]  # on ``split``, every sentence
    trees: list[Tree]  # the first method's, at its chosen layer

    def format(self) -> str:
        chosen_on = (
            f"chosen by sentence F1 on PTB sample {CHOICE_SPLIT}"
            if any(m.choice is not None for m in self.methods)
            else "given"
        )
        skew = f", right-skewness bias {self.bias:g}" if self.bias else ""
        lines = [
            f"{self.model}: trees from adjacent-word distances{skew}, no training; "
            f"layer {chosen_on}",
            *text_lines(self.drop, self.prepared, "by PTB tag"),
        ]
        if self.drop:
            lines.append("gold trees are scored over the same words")
        lines += ["", self.layer_table(), ""]
        for m in self.methods:
            lines.append(
                f"{m.method.label}: layer {m.chosen}, {m.sentences_per_second:.1f} sentences/s"
            )
        return "\n".join([*lines, "", self.scores.format()])

    def layer_table(self) -> str:
        """Sentence F1 by layer: on the choice split, then on the reported one."""
        head = f"sentence F1 by layer ({CHOICE_SPLIT} / {self.split})"
        width = max(14, *(len(m.method.label) + 2 for m in self.methods))
        lines = [
            head,
            f"{'layer':<6}" + "".join(f"{m.method.label:>{width}}" for m in self.methods),
        ]
        layers = sorted({layer for m in self.methods for layer in m.layers})
        for layer in layers:
            cells = []
            for m in self.methods:
                if layer not in m.layers:
                    cells.append(f"{'-':>{width}}")
                    continue
                k = m.layers.index(layer)
                dev = f"{m.choice[k].sentence_f1:.1f}" if m.choice is not None else "-"
                mark = "*" if layer == m.chosen else " "
                cells.append(f"{dev + ' / ' + f'{m.reported[k].sentence_f1:.1f}' + mark:>{width}}")
            lines.append(f"{layer:<6}" + "".join(cells))
        base = ", ".join(f"{name} {f1.sentence_f1:.1f}" for name, f1 in self.baselines.items())
        lines.append(f"* chosen layer; on {self.split}: {base}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "model": self.model,
            "split": self.split,
            "choice_split": CHOICE_SPLIT,
            "punctuation_removed": self.drop,
            "right_bias": self.bias,
            "methods": [
                {
                    "method": m.method.name,
                    "distance": m.method.distance or "l2",
                    "layers": m.layers,
                    "chosen_layer": m.chosen,
                    "sentences_per_second": round(m.sentences_per_second, 2),
                    CHOICE_SPLIT: None if m.choice is None else [_f1_json(f1) for f1 in m.choice],
                    self.split: [_f1_json(f1) for f1 in m.reported],
                }
                for m in self.methods
            ],
            "baselines": {name: _f1_json(f1) for name, f1 in self.baselines.items()},
            "tables": [
                {
                    "title": table.title,
                    "scores": {
                        name: {
                            "sentences": score["sentences"],
                            "f1": {m: asdict(f1) for m, f1 in score["f1"].items()},
                            "recall": score["recall"],
                        }
                        for name, score in table.by_variant.items()
                    },
                }
                for table in self.scores.tables
            ],
        }

    def brackets(self) -> str:
        return bracketed(self.trees)


def induce_pretrained_ptb(
    model: ZeroShotModel,
    split: str,
    methods: Sequence[Method],
    drop: bool = True,
    layer: int | None = None,
    max_words: int = 10,
    bias: float = 0.0,
) -> PretrainedPTB:
    """Each method's trees at every layer for the PTB sample's ``split`` (after the
    right-skewness ``bias``); the layer is ``layer`` where given, else the one with the
    best sentence F1 on the dev split."""
    if layer is not None:
        for method in methods:
            if layer not in model.layers(method.name):
                known = model.layers(method.name)
                raise ValueError(
                    f"layer {layer}: {method.label} reads layers {known[0]}..{known[-1]}"
                )
    gold, sentences = ptb_split(split)
    where = f"PTB sample {split}"
    reported = split_trees(model, sentences, methods, drop, where, gold, bias)
    choice = None
    if layer is None:
        if split == CHOICE_SPLIT:
            choice = reported
        else:
            dev_gold, dev_sentences = ptb_split(CHOICE_SPLIT)
            dev_where = f"PTB sample {CHOICE_SPLIT}"
            choice = split_trees(model, dev_sentences, methods, drop, dev_where, dev_gold, bias)
    results, best_trees = [], {}
    for method in methods:
        layers = model.layers(method.name)
        label = method.label
        scored = [score_induction(gold, trees)["f1"]["model"] for trees in reported.by_layer[label]]
        choice_f1 = None
        if choice is not None:
            choice_f1 = [
                score_induction(choice.gold, trees)["f1"]["model"]
                for trees in choice.by_layer[label]
            ]
            best = max(range(len(layers)), key=lambda k: choice_f1[k].sentence_f1)
        else:
            best = layers.index(layer)
        seconds = reported.seconds[label]
        count = len(sentences)
        if choice is not None and choice is not reported:
            seconds += choice.seconds[label]
            count += len(choice.prepared.sentences)
        rate = count / seconds if seconds > 0 else float("inf")
        results.append(MethodLayers(method, layers, choice_f1, scored, layers[best], rate))
        best_trees[f"{label} L{layers[best]}"] = reported.by_layer[label][best]
    scores = score_variants(gold, best_trees, where, max_words)
    first = next(iter(scores.tables[0].by_variant.values()))
    baselines = {name: f1 for name, f1 in first["f1"].items() if name != "model"}
    return PretrainedPTB(
        model.name,
        split,
        drop,
        bias,
        reported.prepared,
        results,
        scores,
        baselines,
        next(iter(best_trees.values())),
    )


@dataclass(frozen=True)
class PretrainedText:
    """One method's trees at one layer for the sentences of a text."""

    model: str
    method: Method
    layer: int
    drop: bool
    prepared: PreparedText
    trees: list[Tree]

    def format(self) -> str:
        head = f"{self.model}: {self.method.label} distances at layer {self.layer}, no training"
        return "\n".join([head, *text_lines(self.drop, self.prepared, "character rule")])

    def brackets(self) -> str:
        return bracketed(self.trees)


def chosen_layer(model: ZeroShotModel, method: Method, drop: bool = True, bias: float = 0.0) -> int:
    """The layer whose trees score the best sentence F1 on the PTB sample's dev split."""
    found = induce_pretrained_ptb(model, CHOICE_SPLIT, [method], drop, bias=bias)
    return found.methods[0].chosen


def induce_pretrained_text(
    model: ZeroShotModel,
    lines: Sequence[str],
    where: str,
    method: Method,
    layer: int | None = None,
    drop: bool = True,
    tokenized: bool = False,
    bias: float = 0.0,
) -> PretrainedText:
    """``method``'s trees at ``layer`` (default: ``chosen_layer``) for each line of a
    text, over its words without punctuation (the character rule) where ``drop``."""
    sentences = text_sentences(lines, where, tokenized)
    if layer is None:
        layer = chosen_layer(model, method, drop, bias)
    elif layer not in model.layers(method.name):
        known = model.layers(method.name)
        raise ValueError(f"layer {layer}: {method.label} reads layers {known[0]}..{known[-1]}")
    found = split_trees(model, sentences, [method], drop, where, bias=bias)
    index = model.layers(method.name).index(layer)
    trees = found.by_layer[method.label][index]
    return PretrainedText(model.name, method, layer, drop, found.prepared, trees)


def plot_layers(found: PretrainedPTB, path: str | Path) -> Path:
    """Sentence F1 by layer of each method (``viz.layer_scores``)."""
    from treeattn.viz.layer_scores import plot_layer_scores

    curves = [
        (m.method.label, m.layers, [f1.sentence_f1 for f1 in m.reported], m.chosen)
        for m in found.methods
    ]
    dev = [
        (m.method.label, m.layers, [f1.sentence_f1 for f1 in m.choice])
        for m in found.methods
        if m.choice is not None
    ]
    baselines = {name: f1.sentence_f1 for name, f1 in found.baselines.items()}
    title = f"{found.model}: trees from each layer, PTB sample {found.split}"
    return plot_layer_scores(curves, dev, baselines, title, f"sentence F1 ({found.split})", path)
