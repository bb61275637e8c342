"""Sentence data sets for the classify and mlm tasks: generated ListOps, SST-5, SST-2, labeled
sentence files (classification) and raw text (masked language modelling, every sentence
labeled 0); plain text files of one sentence per line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from treeattn.data.listops import ListOpsExample, generate_listops, read_listops
from treeattn.data.sst import (
    IGNORE_LABEL,
    SentimentExample,
    binary_label,
    load_sst,
    read_sst_file,
)
from treeattn.data.text import TextOptions, apply_options, plain_sentence, text_corpora
from treeattn.errors import FormatError, read_utf8, text_lines
from treeattn.trees import Tree, fold_tree
from treeattn.trees.tree import WHITESPACE
from treeattn.trees.treebank import iter_treebank

SPLITS = ("train", "dev", "test")
CLASSES = {"listops": 10, "sst5": 5, "sst2": 2}  # data sets whose classes are 0..C-1
LABELED = "labeled"  # sentence files named by data.paths, one split a file
TEXT = "text"  # the masked-language-modelling data set


@dataclass(frozen=True)
class LabeledSentence:
    """A sentence, its label and, where the data has one, its tree. ``phrase_labels``:
    ``(start, end, label)`` of every labeled phrase (SST phrase-level training of tree
    models; -1 where a phrase has no label, as the neutral ones of SST-2)."""

    tokens: list[str]
    label: int | str  # a class id, or a class name read from a labeled file
    tree: Tree | None = None
    phrase_labels: tuple[tuple[int, int, int], ...] = ()


def _lowercase_tree(tree: Tree) -> Tree:
    return fold_tree(tree, lambda node, kids: Tree(node.label, kids), leaf=str.lower)


def _prepare(examples: list[LabeledSentence], cfg: Any) -> list[LabeledSentence]:
    return lowercased(examples) if cfg.lowercase else examples


def lowercased(examples: Sequence[LabeledSentence]) -> list[LabeledSentence]:
    """The examples with their words lowercased, in the tokens and in the trees."""
    return [
        replace(
            ex,
            tokens=[t.lower() for t in ex.tokens],
            tree=None if ex.tree is None else _lowercase_tree(ex.tree),
        )
        for ex in examples
    ]


def unlabeled_tree(tree: Tree, label: str = "X") -> Tree:
    """The tree with every node labeled ``label``: SST's node labels are the targets."""
    return fold_tree(tree, lambda node, kids: Tree(label, kids))


def _listops(cfg: Any, split: str) -> list[ListOpsExample]:
    """Generated ListOps; dev holds no training expression, test none of either."""
    seen: set[str] = set()
    # Each split has its own seed, so changing one size changes the others only through
    # the expressions they must avoid.
    for name, size, seed in (
        ("train", cfg.train_size, 1000),
        ("dev", cfg.dev_size, 2000),
        ("test", cfg.test_size, 3000),
    ):
        examples = generate_listops(
            size,
            seed,
            cfg.max_depth,
            cfg.max_args,
            max_length=cfg.max_length,
            exclude=seen,
            operators=cfg.operators,
        )
        if name == split:
            return examples
        seen.update(" ".join(ex.tokens) for ex in examples)
    raise AssertionError(split)


def _whole_tree(ex: SentimentExample, to_binary: bool, phrases: bool) -> LabeledSentence:
    """An SST sentence for a tree model; ``to_binary`` maps 0-4 labels to SST-2's."""
    label = binary_label if to_binary else (lambda x: x)
    spans = tuple((start, end, label(y)) for start, end, y in ex.phrase_labels) if phrases else ()
    return LabeledSentence(ex.tokens, label(ex.label), unlabeled_tree(ex.tree), spans)


def _subtrees_by_span(tree: Tree) -> dict[tuple[int, int], Tree]:
    """Every node of ``tree`` by its word span (the highest of a unary chain)."""
    found: dict[tuple[int, int], Tree] = {}
    # Both walk every node in pre-order, so they pair up.
    nodes = zip(tree.spans(include_preterminals=True), tree.subtrees(), strict=True)
    for (_, start, end), node in nodes:
        found.setdefault((start, end), node)
    return found


def load_split(cfg: Any, split: str, whole_trees: bool = False) -> list[LabeledSentence]:
    """One split of the data set of ``cfg`` (a task's ``data`` section).

    ``whole_trees`` is for tree models: SST trees come with their node labels hidden and,
    with ``phrase_level`` in training, every phrase's label in ``phrase_labels`` instead of
    a row per phrase.
    """
    if cfg.name == LABELED:
        return _prepare(read_labeled_file(cfg.paths[split], whole_trees), cfg)
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
    if cfg.name == "listops":
        rows = [LabeledSentence(ex.tokens, ex.label, ex.tree) for ex in _listops(cfg, split)]
    elif cfg.name in ("sst5", "sst2"):
        fine = cfg.name == "sst5"
        if whole_trees and cfg.phrase_level and split == "train":
            # Every sentence, with its phrases' labels; for SST-2 also the sentences whose
            # root is neutral (root label -1, skipped by the loss), for their polar phrases.
            rows = [
                _whole_tree(ex, to_binary=not fine, phrases=True)
                for ex in load_sst(split, root=cfg.root, fine_grained=True)
            ]
        elif whole_trees:
            examples = load_sst(split, root=cfg.root, fine_grained=fine)
            rows = [_whole_tree(ex, to_binary=False, phrases=False) for ex in examples]
        elif cfg.phrase_level and split == "train":
            # Every node's phrase with its own label; the root is the whole sentence. For
            # SST-2 this includes the polar phrases of sentences whose root is neutral.
            rows = [
                LabeledSentence(
                    ex.tokens[start:end],
                    label if fine else binary_label(label),
                    subtrees[start, end],
                )
                for ex in load_sst(split, root=cfg.root, fine_grained=True)
                for subtrees in [_subtrees_by_span(ex.tree)]
                for start, end, label in ex.phrase_labels
                if fine or binary_label(label) != IGNORE_LABEL
            ]
        else:
            examples = load_sst(split, root=cfg.root, fine_grained=fine)
            rows = [LabeledSentence(ex.tokens, ex.label, ex.tree) for ex in examples]
    elif cfg.name == TEXT:  # the text options lowercase it too
        found = text_corpora(split, cfg.root, cfg.corpora, text_options(cfg))
        return [LabeledSentence(words, 0) for words in found]
    else:
        known = ", ".join([*CLASSES, LABELED, TEXT])
        raise ValueError(f"unknown data set {cfg.name!r}; known: {known}")
    return _prepare(rows, cfg)


def read_file(cfg: Any, path: str | Path, whole_trees: bool = False) -> list[LabeledSentence]:
    """Labeled sentences from a file in the data set's own format.

    ListOps: ``label<TAB>expression`` lines. SST: one labeled tree per line (SST-2 drops
    sentences whose root label is neutral, as its test split does). Labeled files: see
    ``read_labeled_file``; raw text: one tokenized sentence per line.
    """
    if cfg.name == LABELED:
        rows = read_labeled_file(path, whole_trees)
    elif cfg.name == TEXT:
        return [LabeledSentence(words, 0) for words in read_text(read_sentences(path), cfg, path)]
    elif cfg.name == "listops":
        rows = [LabeledSentence(ex.tokens, ex.label, ex.tree) for ex in read_listops(path)]
    elif cfg.name in ("sst5", "sst2"):
        examples = read_sst_file(path, fine_grained=cfg.name == "sst5")
        if whole_trees:
            rows = [_whole_tree(ex, to_binary=False, phrases=False) for ex in examples]
        else:
            rows = [LabeledSentence(ex.tokens, ex.label, ex.tree) for ex in examples]
    else:
        raise ValueError(f"unknown data set {cfg.name!r}; known: {', '.join(CLASSES)}")
    return _prepare(rows, cfg)


def text_options(cfg: Any) -> TextOptions:
    """The text options of a ``text`` data section."""
    return TextOptions(cfg.drop_punctuation, cfg.lowercase, cfg.normalize_numbers)


def read_text(sentences: Sequence[list[str]], cfg: Any, where: str | Path) -> list[list[str]]:
    """Plain-text sentences as the text options of ``cfg`` show them; a sentence left
    without words (punctuation only) is an error naming ``where`` and its line."""
    options = text_options(cfg)
    shown = []
    for number, words in enumerate(sentences, start=1):
        kept = apply_options(plain_sentence(words), options)
        if not kept:
            raise FormatError("no word is left once punctuation is removed", str(where), number, 1)
        shown.append(kept)
    return shown


def read_labeled_file(path: str | Path, whole_trees: bool = False) -> list[LabeledSentence]:
    """A labeled sentence file: ``LABEL<TAB>sentence`` lines (words separated by spaces), or
    one bracketed tree per line whose root label is the class.

    A tree keeps its other node labels; its root is relabeled ``X``, so the class is not
    among them (``whole_trees``; otherwise the tree keeps the class as its root label, which
    no token-level model reads). Labels are names, mapped to classes by the task. A line
    without a tab, an empty label or sentence, or an empty line is an error naming the file
    and line; so is a tree file with a line that is not one whole tree.
    """
    path = Path(path)
    text = read_utf8(path)
    first = next((line for line in text.split("\n") if line.strip(WHITESPACE)), "")
    if first.lstrip(WHITESPACE).startswith("("):
        rows = []
        for entry in iter_treebank(path, one_per_line=True, unwrap=False):
            tree = entry.tree
            if whole_trees:
                tree = Tree("X", tree.children)
            rows.append(LabeledSentence(entry.tree.leaves(), entry.tree.label, tree))
        return rows
    rows = []
    for number, line in enumerate(text_lines(text), start=1):
        if not line.strip(WHITESPACE):
            raise FormatError("empty line", str(path), number, 1)
        label, sep, sentence = line.partition("\t")
        if not sep:
            raise FormatError(
                "expected 'LABEL<TAB>sentence' (or one bracketed tree per line)",
                str(path),
                number,
                1,
            )
        if not label.strip():
            raise FormatError("empty label before the tab", str(path), number, 1)
        words = sentence.split()
        if not words:
            raise FormatError("no words after the tab", str(path), number, len(label) + 2)
        rows.append(LabeledSentence(words, label.strip(), None))
    return rows


def read_sentences(path: str | Path) -> list[list[str]]:
    """One sentence per line, words separated by spaces; an empty line is an error naming
    the file and line (the newline ending the last line is not an empty line)."""
    return lines_to_sentences(text_lines(read_utf8(path)), str(path))


def lines_to_sentences(lines: Sequence[str], where: str) -> list[list[str]]:
    """The words of each line; an empty line is an error naming ``where`` and the line."""
    sentences = []
    for number, line in enumerate(lines, start=1):
        words = line.split()
        if not words:
            raise FormatError("empty line", where, number, 1)
        sentences.append(words)
    return sentences


def read_examples(
    cfg: Any, source: str, whole_trees: bool, splits: Sequence[str]
) -> tuple[list[LabeledSentence], str]:
    """The examples of ``source``, a split name of ``splits`` or a file in the data set's
    format, and a name for them in errors; no example at all is an error."""
    if source in splits:
        examples, where = load_split(cfg, source, whole_trees), f"{cfg.name} {source}"
    elif Path(source).is_file():
        examples, where = read_file(cfg, source, whole_trees), source
    else:
        raise FileNotFoundError(
            f"{source!r} is neither a split name ({', '.join(splits)}) nor an existing file"
        )
    if not examples:
        raise ValueError(f"{where}: no examples")
    return examples, where
