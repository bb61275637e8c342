"""Induced trees scored on the PTB sample: unlabeled F1 against its gold trees over the
same words, beside random, left- and right-branching trees, and recall by phrase type."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from treeattn.analysis.induction import (
    PreparedText,
    bracketed,
    describe_removal,
    drop_punctuation,
    induce_links,
    model_text_options,
)
from treeattn.data.ptb import load_ptb_sample
from treeattn.data.text import TaggedSentence, TextOptions
from treeattn.metrics.unsupervised import (
    gold_spans,
    left_branching_spans,
    nontrivial,
    project_spans,
    random_binary_spans,
    right_branching_spans,
    tree_spans,
    unlabeled_f1,
    word_mask,
)
from treeattn.tasks.trained import Trained
from treeattn.trees import Tree
from treeattn.trees.induction import THRESHOLD, VARIANTS, trees_from_links
from treeattn.trees.tree import Span

BASELINES = ("random", "left-branching", "right-branching")


def ptb_sentences(gold: Sequence[Tree]) -> list[TaggedSentence]:
    """The words of clean PTB trees, punctuation marked by tag as the evaluation removes."""
    return [TaggedSentence(t.leaves(), [not k for k in word_mask(t)]) for t in gold]


PHRASE_TYPES = ("NP", "VP", "PP", "ADJP", "SBAR", "ADVP")


def score_induction(
    gold_trees: Sequence[Tree],
    predicted: Sequence[Tree],
    max_words: int | None = None,
    seed: int = 0,
) -> dict[str, object]:
    """Unlabeled F1 of induced trees against gold trees (``metrics.unsupervised``: words with
    a PTB word tag only, trivial spans out), next to random, left- and right-branching
    trees on the same sentences, and the recall of each gold phrase type.

    Gold trees must be free of traces (``load_ptb_sample(clean=True)``); ``predicted``
    trees cover either every word of the gold trees (punctuation too: their spans are
    projected onto the kept words) or the kept words only (a model that parses text
    without punctuation). ``max_words`` keeps only sentences of at most that many words
    after the removal (WSJ-10 style).
    """
    if len(gold_trees) != len(predicted):
        raise ValueError(f"{len(gold_trees)} gold trees but {len(predicted)} induced ones")
    rng = random.Random(seed)
    gold_sets, lengths = [], []
    by_method: dict[str, list[set[Span]]] = {m: [] for m in ("model", *BASELINES)}
    found = {label: 0 for label in PHRASE_TYPES}
    total = {label: 0 for label in PHRASE_TYPES}
    for gold_tree, tree in zip(gold_trees, predicted, strict=True):
        keep = word_mask(gold_tree)
        n = sum(keep)
        if len(tree) not in (len(keep), n):
            raise ValueError(
                f"an induced tree has {len(tree)} words where its gold tree has {len(keep)} "
                f"({n} without punctuation)"
            )
        over_kept = len(tree) == n
        if max_words is not None and n > max_words:
            continue
        gold = gold_spans(gold_tree)
        gold_sets.append(gold)
        lengths.append(n)
        spans = tree_spans(tree) if over_kept else project_spans(tree_spans(tree), keep)
        by_method["model"].append(nontrivial(spans, n))
        by_method["random"].append(random_binary_spans(n, rng))
        by_method["left-branching"].append(left_branching_spans(n))
        by_method["right-branching"].append(right_branching_spans(n))
        pred = by_method["model"][-1]
        for label, start, end in gold_tree.spans():
            base = label.split("-")[0].split("=")[0]
            if base not in found:
                continue
            projected = nontrivial(project_spans({(start, end)}, keep), n)
            for span in projected:
                total[base] += 1
                found[base] += span in pred
    return {
        "sentences": len(gold_sets),
        "f1": {m: unlabeled_f1(gold_sets, spans) for m, spans in by_method.items()},
        "recall": {
            label: 100.0 * found[label] / total[label] if total[label] else None
            for label in PHRASE_TYPES
        },
        "phrases": total,
    }


@dataclass(frozen=True)
class PTBText:
    """Gold trees and the words a model parses, one sentence each."""

    gold: list[Tree]
    prepared: PreparedText


def ptb_text(saved: Trained, split: str, options: TextOptions | None = None) -> PTBText:
    """The PTB sample's clean gold trees of ``split`` (``all``: every file) and their
    words as the model parses them (punctuation removed when ``options`` say so)."""
    options = model_text_options(saved) if options is None else options
    gold = [e.tree for e in load_ptb_sample(None if split == "all" else split, clean=True)]
    where = f"PTB sample {split}"
    return PTBText(gold, drop_punctuation(ptb_sentences(gold), options.drop_punctuation, where))


@dataclass(frozen=True)
class ScoreTable:
    """``score_induction`` of each variant's trees on one set of sentences."""

    title: str
    by_variant: dict[str, dict]


@dataclass(frozen=True)
class InductionScores:
    """Unlabeled F1 of each variant's trees and of the baselines, with recall by phrase
    type, on every sentence and on the short ones."""

    where: str
    tables: list[ScoreTable]

    def format(self) -> str:
        lines = []
        for table in self.tables:
            first = next(iter(table.by_variant.values()))
            lines.append(f"{self.where}, {table.title} ({first['sentences']} scored): unlabeled F1")
            rows = [(f"model, {v}", score["f1"]["model"]) for v, score in table.by_variant.items()]
            rows += [(m, f1) for m, f1 in first["f1"].items() if m != "model"]
            width = max(16, *(len(name) for name, _ in rows))
            lines.append(f"{'trees':<{width}} {'sentence F1':>11} {'corpus F1':>10}")
            lines += [
                f"{name:<{width}} {f1.sentence_f1:>11.1f} {f1.corpus_f1:>10.1f}"
                for name, f1 in rows
            ]
            for v, score in table.by_variant.items():
                recall = "  ".join(
                    f"{label} {value:.1f}"
                    for label, value in score["recall"].items()
                    if value is not None
                )
                lines.append(f"recall by phrase type, {v}: {recall}")
            lines.append("")
        return "\n".join(lines)


def score_variants(
    gold: Sequence[Tree], by_variant: dict[str, list[Tree]], where: str, max_words: int
) -> InductionScores:
    """Each variant's trees scored against ``gold`` on every sentence and on those of at
    most ``max_words`` words."""
    limits = ((f"all {len(gold)} sentences", None), (f"<= {max_words} words", max_words))
    tables = [
        ScoreTable(
            title, {v: score_induction(gold, trees, limit) for v, trees in by_variant.items()}
        )
        for title, limit in limits
    ]
    return InductionScores(where, tables)


@dataclass(frozen=True)
class InducedPTB:
    """Every variant's trees for the PTB sample's sentences, scored; ``trees`` are those of
    ``variant``."""

    options: TextOptions
    text: PTBText
    scores: InductionScores
    variant: str
    trees: list[Tree]

    def format(self) -> str:
        """How the words were shown to the model, what was removed, and the scores."""
        lines = [f"text: {self.options.describe()}"]
        if self.options.drop_punctuation:
            lines.append(describe_removal(self.text.prepared, "by PTB tag"))
            lines.append("gold trees are scored over the same words")
        return "\n".join([*lines, "", self.scores.format()])

    def brackets(self) -> str:
        return bracketed(self.trees)


def induce_ptb(
    saved: Trained,
    split: str,
    options: TextOptions,
    variant: str = "paper",
    threshold: float = THRESHOLD,
    min_layer: int | None = None,
    max_words: int = 10,
) -> InducedPTB:
    """Trees for the PTB sample's ``split`` (``ptb_text``) by every variant, scored against
    its gold trees over the same words."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown induction variant {variant!r}; known: {', '.join(VARIANTS)}")
    text = ptb_text(saved, split, options)
    where, sentences = f"PTB sample {split}", text.prepared.sentences
    links = induce_links(saved, sentences, where, options)
    by_variant = {v: trees_from_links(sentences, links, v, threshold, min_layer) for v in VARIANTS}
    scores = score_variants(text.gold, by_variant, where, max_words)
    return InducedPTB(options, text, scores, variant, by_variant[variant])
