"""Unsupervised parsing with a trained Tree Transformer (Wang et al. 2019).

Each ``constituent`` layer l gives a link probability ``a^l_k`` between words k and k+1;
links only grow with depth. A sentence's tree is read top-down from the top layer: a span
splits at its weakest link; while that link is above ``threshold`` (0.8) the split is
taken from one layer lower instead, down to ``min_layer``. Three variants (``VARIANTS``)
differ in what happens then:

- ``binary``: at ``min_layer`` the weakest link splits the span whatever its strength,
  and both halves start on the layer where their parent split: always a binary tree.
- ``paper``: Algorithm 1 as the paper writes it. A span whose links are all above the
  threshold at ``min_layer`` stays flat (a node with a child per word); the halves of a
  split start one layer lower, at ``max(l - 1, min_layer)``.
- ``release``: the authors' parse.py. Flat spans as the paper's, but a half starts one
  layer lower only when its own weakest link at the split's layer is above 0.7
  (``RELEASE_DESCENT``), otherwise on the same layer; ``min_layer`` is 2 by default.

A model trained with a start token reads it before each sentence; its link to the first
word is dropped before parsing, as the release drops it.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from treeattn.analysis.variants import DEFAULT_MIN_LAYER, THRESHOLD, VARIANTS
from treeattn.attention.constituent import LINKS, ConstituentAttention, constituent_prior
from treeattn.data.batching import bucket_batches, pad_ids
from treeattn.data.ptb import load_ptb_sample
from treeattn.data.text import (
    START,
    TaggedSentence,
    TextOptions,
    normalize_word,
    plain_sentence,
)
from treeattn.data.vocab import Vocab
from treeattn.metrics.unsupervised import (
    UnsupervisedF1,
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
from treeattn.models.inputs import EncoderInputs
from treeattn.tasks.sentences import lines_to_sentences, text_options
from treeattn.tasks.trained import Trained, load_trained
from treeattn.trees import Tree
from treeattn.trees.tokenize import tokenize
from treeattn.trees.transforms import binarize
from treeattn.trees.tree import Span
from treeattn.viz.attention import plot_priors

RELEASE_DESCENT = 0.7  # parse.py: a half this strongly linked starts a layer lower
BASELINES = ("random", "left-branching", "right-branching")


def load_tree_transformer(checkpoint: str, device: str = "auto") -> Trained:
    saved = load_trained(checkpoint, device)
    if saved.cfg.model.attention != "constituent":
        raise ValueError(
            f"{checkpoint}: inducing trees needs a constituent-attention model, not "
            f"{saved.cfg.model.attention!r}"
        )
    return saved


@torch.no_grad()
def layer_links(model: nn.Module, tokens: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """(L, B, n-1) every constituent layer's links for a batch, bottom layer first."""
    found: list[torch.Tensor] = []

    def keep(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        found.append(inputs[2][LINKS].detach())  # the context this layer just wrote

    layers = [m for m in model.modules() if isinstance(m, ConstituentAttention)]
    if not layers:
        raise ValueError("the model has no constituent attention layer")
    handles = [layer.register_forward_hook(keep) for layer in layers]
    try:
        model(EncoderInputs(tokens, pad_mask))
    finally:
        for handle in handles:
            handle.remove()
    return torch.stack(found)


def model_text_options(saved: Trained) -> TextOptions:
    """The text options the model was trained with."""
    return text_options(saved.cfg.data)


def chosen_text_options(
    saved: Trained,
    drop_punctuation: bool | None = None,
    lowercase: bool | None = None,
    normalize_numbers: bool | None = None,
) -> TextOptions:
    """The text options the model was trained with, but for those given (not None)."""
    chosen = {
        "drop_punctuation": drop_punctuation,
        "lowercase": lowercase,
        "normalize_numbers": normalize_numbers,
    }
    return replace(model_text_options(saved), **{k: v for k, v in chosen.items() if v is not None})


def uses_start_token(saved: Trained) -> bool:
    return bool(getattr(saved.cfg.data, "start_token", False))


def encode_words(
    saved: Trained, words: Sequence[str], options: TextOptions | None = None
) -> list[int]:
    """Word ids as the model was trained to read them (lowercased, numbers as ``N``, after
    a start token, as it was trained); punctuation is the caller's to remove."""
    options = model_text_options(saved) if options is None else options
    shown = [normalize_word(w, options) for w in words]
    return saved.task.vocab.encode([START, *shown] if uses_start_token(saved) else shown)


def sentence_priors(saved: Trained, words: Sequence[str]) -> list[np.ndarray]:
    """Every layer's constituent prior (n, n) for one sentence, bottom layer first."""
    if len(words) > saved.cfg.model.max_length:
        raise ValueError(f"{len(words)} words, more than max_length={saved.cfg.model.max_length}")
    tokens = torch.tensor([encode_words(saved, words)], device=saved.device)
    pad_mask = torch.zeros_like(tokens, dtype=torch.bool)
    links = layer_links(saved.model, tokens, pad_mask)[:, 0]  # (L, n-1)
    if uses_start_token(saved):  # the prior among the words only
        links = links[:, 1:]
    return [constituent_prior(layer[None])[0].cpu().numpy() for layer in links]


def draw_priors(
    saved: Trained, sentence: str, out: str | Path, layers: Sequence[int] | None = None
) -> Path:
    """Heat maps of the constituent prior of ``layers`` (from 0; default: all) for one
    sentence, words separated by spaces, side by side in one image file."""
    words = sentence.split()
    if not words:
        raise ValueError("the sentence is empty")
    priors = sentence_priors(saved, words)
    layers = list(range(len(priors))) if layers is None else list(layers)
    for layer in layers:
        if not 0 <= layer < len(priors):
            raise ValueError(f"layer {layer} is not in 0..{len(priors) - 1}")
    titles = [f"layer {layer}" for layer in layers]
    return plot_priors([priors[layer] for layer in layers], words, titles, out)


def induce_spans(
    links: np.ndarray,
    threshold: float = THRESHOLD,
    min_layer: int | None = None,
    variant: str = "paper",
) -> set[Span]:
    """The spans ``(start, end)`` of the tree one variant reads from one sentence's links
    (L, n-1): every phrase of two or more words, the whole sentence included.
    ``min_layer`` None is the variant's default (``DEFAULT_MIN_LAYER``, at most the top
    layer)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown induction variant {variant!r}; known: {', '.join(VARIANTS)}")
    n_layers, n = links.shape[0], links.shape[1] + 1
    if min_layer is None:  # the variant's own, or the top layer of a shallower model
        min_layer = min(DEFAULT_MIN_LAYER[variant], n_layers - 1)
    if not 0 <= min_layer < n_layers:
        raise ValueError(f"min_layer must lie in 0..{n_layers - 1}, got {min_layer}")
    spans: set[Span] = set()
    todo = [(0, n, n_layers - 1)] if n >= 2 else []  # (start, end, layer) of each phrase
    while todo:
        start, end, layer = todo.pop()
        spans.add((start, end))
        inner = links[:, start : end - 1]  # the links inside the span, every layer
        weakest = int(inner[layer].argmin())
        while inner[layer, weakest] > threshold and layer > min_layer:
            layer -= 1
            weakest = int(inner[layer].argmin())
        if inner[layer, weakest] > threshold and variant != "binary":
            continue  # strong all through at the lowest layer: a flat phrase
        split = start + weakest + 1
        for i, j in ((start, split), (split, end)):
            if j - i >= 2:
                todo.append(
                    (i, j, _child_layer(variant, links[layer, i : j - 1], layer, min_layer))
                )
    return spans


def _child_layer(variant: str, child_links: np.ndarray, layer: int, min_layer: int) -> int:
    """The layer a half of a span split on ``layer`` starts from."""
    lower = max(layer - 1, min_layer)
    if variant == "paper":
        return lower
    if variant == "release":
        return lower if child_links.min() > RELEASE_DESCENT else layer
    return layer


def gold_links(tree: Tree, n_layers: int = 1) -> np.ndarray:
    """Links (n_layers, n-1) read off a gold tree, the same at every layer: the link
    between words i and i+1 falls with the height of their lowest common ancestor in the
    right-binarized tree (``1 / (1 + height)``; words have height 0). Any variant reads
    the binarized tree back from them: a check of the induction apart from any model."""
    heights: list[float] = []

    def walk(node: Tree | str) -> int:
        """The node's height; records the height of the gap between its two children."""
        if isinstance(node, str):
            return 0
        if node.is_preterminal():
            return 0  # the word itself: a tag is no phrase
        kids = [walk(child) for child in node.children[:1]]
        for child in node.children[1:]:
            heights.append(-1.0)  # the gap before ``child``, filled below
            gap = len(heights) - 1
            kids.append(walk(child))
            heights[gap] = 1 + max(kids)
        return 1 + max(kids)

    walk(binarize(tree))
    row = 1.0 / (1.0 + np.array(heights, dtype=np.float64))
    return np.tile(row, (n_layers, 1))


def spans_to_tree(words: Sequence[str], spans: set[Span], label: str = "X") -> Tree:
    """A tree over ``words`` whose phrases are ``spans``, each labeled ``label``; every word
    sits in a ``label`` bracket of its own, as treebank files want."""
    ordered = sorted(spans, key=lambda span: (span[0], -span[1]))
    spans_of_phrases = [(label, i, j) for i, j in ordered if j - i > 1]
    return Tree.from_spans(list(words), spans_of_phrases, tags=[label] * len(words))


def induce_links(
    saved: Trained,
    sentences: Sequence[Sequence[str]],
    where: str = "text",
    options: TextOptions | None = None,
) -> list[np.ndarray]:
    """Every layer's links (L, n-1) among each sentence's words, as given. The model reads
    them as ``options`` show them (default: as it was trained: lowercased, numbers as
    ``N``, after a start token, whose link is dropped); punctuation is the caller's to
    remove."""
    for line, words in enumerate(sentences, start=1):
        if not words:
            raise ValueError(f"{where}: sentence {line} is empty")
        if len(words) + uses_start_token(saved) > saved.cfg.model.max_length:
            raise ValueError(
                f"{where}: sentence {line} has {len(words)} words, more than the model's "
                f"max_length={saved.cfg.model.max_length} allows"
            )
    ids = [encode_words(saved, words, options) for words in sentences]
    first = int(uses_start_token(saved))
    found: dict[int, np.ndarray] = {}
    for indices in bucket_batches([len(x) for x in ids], saved.cfg.train.eval_max_tokens, False):
        tokens, pad_mask = pad_ids([ids[i] for i in indices], Vocab.pad_id)
        links = layer_links(saved.model, tokens.to(saved.device), pad_mask.to(saved.device))
        links = links.cpu().numpy()
        for row, i in enumerate(indices):
            found[i] = links[:, row, first : first + len(sentences[i]) - 1]
    return [found[i] for i in range(len(sentences))]


def trees_from_links(
    sentences: Sequence[Sequence[str]],
    links: Sequence[np.ndarray],
    variant: str = "paper",
    threshold: float = THRESHOLD,
    min_layer: int | None = None,
) -> list[Tree]:
    """The tree ``variant`` reads from each sentence's links; ``(X word)`` for one word."""
    return [
        spans_to_tree(words, induce_spans(row, threshold, min_layer, variant) | {(0, len(words))})
        for words, row in zip(sentences, links, strict=True)
    ]


def induce_trees(
    saved: Trained,
    sentences: Sequence[Sequence[str]],
    threshold: float = THRESHOLD,
    min_layer: int | None = None,
    where: str = "text",
    variant: str = "paper",
    options: TextOptions | None = None,
) -> list[Tree]:
    """One induced tree per sentence, over its words as given (``induce_links``)."""
    links = induce_links(saved, sentences, where, options)
    return trees_from_links(sentences, links, variant, threshold, min_layer)


@dataclass(frozen=True)
class PreparedText:
    """Sentences with their punctuation removed (or not), and what was removed."""

    sentences: list[list[str]]
    removed: Counter[str]  # removed word -> count
    words: int  # words before the removal


def drop_punctuation(
    sentences: Sequence[TaggedSentence], drop: bool, where: str = "text"
) -> PreparedText:
    """The sentences without the words their source calls punctuation (all words when not
    ``drop``); a sentence left empty is an error naming ``where`` and its line."""
    kept_sentences, removed, total = [], Counter(), 0
    for line, sentence in enumerate(sentences, start=1):
        total += len(sentence.words)
        kept = []
        for word, punct in zip(sentence.words, sentence.punctuation, strict=True):
            if drop and punct:
                removed[word] += 1
            else:
                kept.append(word)
        if not kept:
            raise ValueError(f"{where}: sentence {line} is all punctuation; no word is left")
        kept_sentences.append(kept)
    return PreparedText(kept_sentences, removed, total)


def describe_removal(prepared: PreparedText, rule: str, shown: int = 12) -> str:
    """One line saying what was removed, e.g. for ``treeattn induce``."""
    count = sum(prepared.removed.values())
    if not count:
        return "no word removed"
    common = " ".join(f"{word} {n}" for word, n in prepared.removed.most_common(shown))
    more = " ..." if len(prepared.removed) > shown else ""
    return f"removed {count} of {prepared.words} words ({rule}): {common}{more}"


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


def bracketed(trees: Sequence[Tree]) -> str:
    """One bracketed tree a line."""
    return "".join(tree.to_brackets() + "\n" for tree in trees)


def text_sentences(
    lines: Sequence[str], where: str, tokenized: bool = False
) -> list[TaggedSentence]:
    """The words of each line, tokenized as the Penn Treebank is (``tokenized``: split on
    spaces, as given), punctuation marked by the character rule."""
    if not tokenized:
        lines = [" ".join(tokenize(line)) for line in lines]
    return [plain_sentence(words) for words in lines_to_sentences(lines, where)]


@dataclass(frozen=True)
class InducedText:
    """One variant's trees for the sentences of a text, over the words kept."""

    options: TextOptions
    prepared: PreparedText
    variant: str
    trees: list[Tree]

    def format(self) -> str:
        """How the words were shown to the model, and what was removed."""
        lines = [f"text: {self.options.describe()}"]
        if self.options.drop_punctuation:
            lines.append(describe_removal(self.prepared, "character rule"))
        return "\n".join(lines)

    def brackets(self) -> str:
        return bracketed(self.trees)


def induce_text(
    saved: Trained,
    lines: Sequence[str],
    where: str,
    options: TextOptions,
    tokenized: bool = False,
    variant: str = "paper",
    threshold: float = THRESHOLD,
    min_layer: int | None = None,
) -> InducedText:
    """The trees ``variant`` reads for each line of a text (``text_sentences``), shown to
    the model as ``options`` say (``chosen_text_options``)."""
    sentences = text_sentences(lines, where, tokenized)
    prepared = drop_punctuation(sentences, options.drop_punctuation, where)
    links = induce_links(saved, prepared.sentences, where, options)
    trees = trees_from_links(prepared.sentences, links, variant, threshold, min_layer)
    return InducedText(options, prepared, variant, trees)


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
            lines.append(f"{'trees':<16} {'sentence F1':>11} {'corpus F1':>10}")
            rows = [(f"model, {v}", score["f1"]["model"]) for v, score in table.by_variant.items()]
            rows += [(m, f1) for m, f1 in first["f1"].items() if m != "model"]
            lines += [
                f"{name:<16} {f1.sentence_f1:>11.1f} {f1.corpus_f1:>10.1f}" for name, f1 in rows
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


@dataclass(frozen=True)
class CurvePoint:
    """One kept checkpoint: its update, dev perplexity and F1 of each variant's trees."""

    step: int
    perplexity: float
    f1: dict[str, UnsupervisedF1]


@dataclass(frozen=True)
class InductionCurve:
    """A run's kept checkpoints, one ``CurvePoint`` each, scored on PTB sample ``split``."""

    run: str
    split: str
    points: list[CurvePoint]

    def format(self) -> str:
        lines = [
            f"{self.run}: dev perplexity; unlabeled F1 (sentence / corpus) on PTB {self.split}"
        ]
        header = "".join(f" {v:>13}" for v in VARIANTS)
        lines.append(f"{'step':>7} {'perplexity':>10}{header}")
        for point in self.points:
            cells = "".join(
                f" {point.f1[v].sentence_f1:>6.1f} /{point.f1[v].corpus_f1:>5.1f}" for v in VARIANTS
            )
            lines.append(f"{point.step:>7} {point.perplexity:>10.1f}{cells}")
        return "\n".join(lines)


def kept_checkpoints(run: str | Path) -> list[tuple[int, Path]]:
    """The ``step-K.pt`` files of a run folder, by K."""
    found = []
    for path in Path(run).glob("step-*.pt"):
        number = path.stem.removeprefix("step-")
        if number.isdigit():
            found.append((int(number), path))
    if not found:
        raise FileNotFoundError(
            f"{run}: no step-K.pt checkpoints; train with train.keep_every=K to keep them"
        )
    return sorted(found)


def induction_curve(
    run: str | Path,
    split: str = "test",
    threshold: float = THRESHOLD,
    min_layer: int | None = None,
    progress: bool = False,
) -> InductionCurve:
    """Dev perplexity and unsupervised F1 on the PTB sample ``split`` for every kept
    checkpoint of a Tree Transformer run, each variant at its default minimum layer (or
    ``min_layer``)."""
    checkpoints = kept_checkpoints(run)
    points, dev, text = [], None, None
    for step, path in tqdm(checkpoints, unit="checkpoint", disable=not progress, leave=False):
        saved = load_tree_transformer(str(path))
        if dev is None:  # one run: the same vocabulary and text options throughout
            dev = saved.encode(*saved.read("dev"))
            text = ptb_text(saved, split)
        perplexity = saved.task.evaluate(saved.model, dev, saved.device)["perplexity"]
        links = induce_links(saved, text.prepared.sentences, f"PTB sample {split}")
        f1 = {
            variant: score_induction(
                text.gold,
                trees_from_links(text.prepared.sentences, links, variant, threshold, min_layer),
            )["f1"]["model"]
            for variant in VARIANTS
        }
        points.append(CurvePoint(step, perplexity, f1))
    return InductionCurve(str(run), split, points)
