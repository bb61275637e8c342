"""Unlabeled bracket F1 for unsupervised parsing, as evaluated by Kim et al. (2019).

The protocol (compound PCFG evaluation, itself following Shen et al.'s PRPN):

* **Words.** Only words with a PTB word tag are kept: punctuation (``.`` ``,`` ``:``
  `````` ``''`` ``-LRB-`` ``-RRB-``), currency symbols (``$`` ``#``) and ``-NONE-`` traces
  are removed, with every phrase left empty, and positions are re-indexed afterwards.
* **Spans** are unlabeled, half-open ``(start, end)`` over the kept words. Trivial spans,
  the whole sentence and single words, are excluded. Gold spans are a *set*: a unary chain
  ``(S (VP ...))`` yields its span once.
* **Corpus F1** is micro-averaged: true positives, false positives and false negatives are
  summed over all sentences before precision and recall are taken.
* **Sentence F1** is the mean of per-sentence F1. Choice made here: a sentence enters the
  mean only when its gold tree has at least one non-trivial span (sentences of one or two
  words and flat sentences have none, so they would score by convention, not by merit); a
  sentence whose prediction is empty then scores 0. With binary predicted trees this is
  exactly what Kim et al.'s evaluation script computes. ``count_empty_gold=True`` keeps
  those sentences instead, scoring 100 when the prediction is empty too and 0 otherwise
  (the convention of PRPN's script).

One deliberate difference from Kim et al.'s script: it drops the *last* gold span (the
root) rather than every whole-sentence span, so a root unary chain left by punctuation
removal counts there as a gold span no binary tree can predict; here it is trivial.

Every rate is a percentage in [0, 100].
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from treeattn.trees.labels import EMPTY_ELEMENT, REMOVED_TAGS, word_mask
from treeattn.trees.tree import Span, Tree

__all__ = [
    "REMOVED_TAGS",
    "UnsupervisedF1",
    "gold_spans",
    "left_branching_spans",
    "nontrivial",
    "project_spans",
    "random_binary_spans",
    "right_branching_spans",
    "tree_spans",
    "unlabeled_f1",
    "word_mask",
]

# Tags outside PRPN's 36 word tags in the PTB tag set; Kim et al. keep only word tags.


# ---------------------------------------------------------------------------- spans
def nontrivial(spans: Collection[Span], length: int | None = None) -> set[Span]:
    """The spans covering at least two words and, when ``length`` is given, not all words."""
    return {(i, j) for i, j in spans if j - i >= 2 and (i, j) != (0, length)}


def tree_spans(tree: Tree) -> set[Span]:
    """Non-trivial unlabeled spans of every node of ``tree`` (a predicted tree, say)."""
    return nontrivial(tree.unlabeled_spans(include_preterminals=True), len(tree))


def project_spans(spans: Collection[Span], keep: Sequence[bool]) -> set[Span]:
    """Re-index spans over the positions where ``keep`` is true; spans left empty vanish.

    >>> sorted(project_spans({(0, 3), (2, 4)}, [True, False, True, True]))
    [(0, 2), (1, 3)]
    """
    # new_index[p] = number of kept positions before p, for p in 0..n.
    new_index = [0]
    for kept in keep:
        new_index.append(new_index[-1] + kept)
    return {(new_index[i], new_index[j]) for i, j in spans if new_index[j] > new_index[i]}


def gold_spans(tree: Tree, removed_tags: Collection[str] = REMOVED_TAGS) -> set[Span]:
    """Non-trivial unlabeled spans of a treebank tree after removing ``removed_tags`` words.

    Removing a word and every phrase left empty, then reading spans, is the same as
    projecting each node's span onto the kept words, which is what this does.

    >>> t = Tree.parse("(S (NP (DT the) (NN cat)) (VP (VBD sat) (ADVP (RB down))) (. .))")
    >>> sorted(gold_spans(t))
    [(0, 2), (2, 4)]
    """
    keep = [tag not in removed_tags and tag != EMPTY_ELEMENT for _, tag in tree.pos()]
    spans = project_spans(tree.unlabeled_spans(include_preterminals=True), keep)
    return nontrivial(spans, sum(keep))


# ---------------------------------------------------------------------------- baselines
def left_branching_spans(n: int) -> set[Span]:
    """Non-trivial spans of the left-branching binary tree over ``n`` words."""
    return {(0, j) for j in range(2, n)}


def right_branching_spans(n: int) -> set[Span]:
    """Non-trivial spans of the right-branching binary tree over ``n`` words."""
    return {(i, n) for i in range(1, n - 1)}


def random_binary_spans(n: int, rng: random.Random | int | None = None) -> set[Span]:
    """Non-trivial spans of a random binary tree over ``n`` words.

    Each span is split at a uniformly chosen point, recursively (not uniform over tree
    shapes). ``rng`` is a ``random.Random`` or a seed, so baselines are reproducible.
    """
    if not isinstance(rng, random.Random):
        rng = random.Random(rng)
    spans: set[Span] = set()
    todo = [(0, n)] if n >= 2 else []
    while todo:
        i, j = todo.pop()
        spans.add((i, j))
        k = rng.randint(i + 1, j - 1)
        todo.extend(span for span in ((i, k), (k, j)) if span[1] - span[0] >= 2)
    return nontrivial(spans, n)


# ---------------------------------------------------------------------------- F1
@dataclass(frozen=True)
class UnsupervisedF1:
    """Sentence-level and corpus-level unlabeled F1 with the counts behind them."""

    sentence_f1: float
    corpus_f1: float
    corpus_precision: float
    corpus_recall: float
    true_positives: int
    false_positives: int
    false_negatives: int
    sentences: int
    scored_sentences: int  # sentences in the sentence-level mean


def _f1(tp: int, n_pred: int, n_gold: int) -> float:
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    return 200.0 * precision * recall / (precision + recall) if precision + recall else 0.0


def unlabeled_f1(
    gold: Sequence[Collection[Span]],
    pred: Sequence[Collection[Span]],
    lengths: Sequence[int] | None = None,
    count_empty_gold: bool = False,
) -> UnsupervisedF1:
    """Unlabeled F1 of predicted span sets against gold span sets, one pair per sentence.

    Spans covering fewer than two words are always dropped; whole-sentence spans are
    dropped when ``lengths`` (words per sentence) is given. The helpers of this module
    already return non-trivial spans, so ``lengths`` is only needed for raw span sets.

    >>> r = unlabeled_f1([{(0, 2), (2, 4)}], [{(0, 2), (1, 4)}])
    >>> r.sentence_f1, r.corpus_f1
    (50.0, 50.0)
    """
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold span sets but {len(pred)} predicted ones")
    if lengths is not None and len(lengths) != len(gold):
        raise ValueError(f"{len(lengths)} lengths for {len(gold)} sentences")
    tp = fp = fn = 0
    sentence_scores: list[float] = []
    for k, (gold_k, pred_k) in enumerate(zip(gold, pred, strict=True)):
        n = lengths[k] if lengths is not None else None
        gold_set, pred_set = nontrivial(gold_k, n), nontrivial(pred_k, n)
        hits = len(gold_set & pred_set)
        tp += hits
        fp += len(pred_set) - hits
        fn += len(gold_set) - hits
        if gold_set:
            sentence_scores.append(_f1(hits, len(pred_set), len(gold_set)))
        elif count_empty_gold:
            sentence_scores.append(0.0 if pred_set else 100.0)
    precision = 100.0 * tp / (tp + fp) if tp + fp else 0.0
    recall = 100.0 * tp / (tp + fn) if tp + fn else 0.0
    return UnsupervisedF1(
        sentence_f1=sum(sentence_scores) / len(sentence_scores) if sentence_scores else 0.0,
        corpus_f1=2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        corpus_precision=precision,
        corpus_recall=recall,
        true_positives=tp,
        false_positives=fp,
        false_negatives=fn,
        sentences=len(gold),
        scored_sentences=len(sentence_scores),
    )
