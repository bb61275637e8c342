"""The network's scores as trees: the best constituency tree of the span chart (CKY, unary
chains split again), the best dependency tree of the arc scores (Eisner, projective, or
Chu-Liu-Edmonds) with each arc's best relation, and each word's best tag.

A constituency parser's dependencies come from one of two places: its own arcs
(``INDEPENDENT``, decoded apart from the tree, as the parse task evaluates them) or the
head-rule conversion of its predicted tree (``FROM_TREE``, the conversion its training
dependencies came from), which always agrees with the brackets. Each dependency tree names
what it follows in its ``scheme`` metadata, a ``# scheme = ...`` comment in CoNLL-U."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from treeattn.data.batching import bucket_batches
from treeattn.engine.task import evaluating
from treeattn.parsing.encoding import ParseSet
from treeattn.parsing.network import (
    UNNAMED_OUTPUTS,
    LabelAttentionParser,
    ParserOutput,
    best_named,
)
from treeattn.parsing.vocab import EMPTY, ParserVocab
from treeattn.structs import CKY, Eisner, arcs_to_heads, best_heads
from treeattn.structs.cky import tree_spans
from treeattn.trees import Tree
from treeattn.trees.dependency import DependencyTree
from treeattn.trees.head_rules import to_dependency
from treeattn.trees.transforms import tree_from_chain_spans

Parsed = tuple[Tree | None, DependencyTree]

FROM_TREE, INDEPENDENT = "from-tree", "independent"
DEPENDENCY_SOURCES = (FROM_TREE, INDEPENDENT)
# What users ask for by scheme: ``ud``, the arcs of a parser trained on Universal
# Dependencies (its own arcs); ``tree``, the head-rule conversion of its tree.
UD, TREE = "ud", "tree"
SCHEMES = {UD: INDEPENDENT, TREE: FROM_TREE}
JOINT_TREEBANK, JOINT_UD = "joint", "ud-en-ewt"  # a joint parser's arcs are EWT's
ROOT = "root"  # the root word's relation, in UD and in the head-rule conversion alike
TREE_SCHEME = "head-rule dependencies of the constituency tree (PHRASE/CHILD relations)"
OWN_ARCS_SCHEME = (
    "the parser's own arcs, decoded apart from its constituency tree (head-rule "
    "PHRASE/CHILD relations)"
)


def arcs_are_ud(treebank: str) -> bool:
    """Whether a parser trained on ``treebank`` (``training_treebank``) learned Universal
    Dependencies with its arcs: a UD treebank's parser, or a joint one."""
    return treebank == JOINT_TREEBANK or treebank.startswith(("ud-", "ud_"))


def dependency_scheme(dependencies: str, constituency: bool, treebank: str = "") -> str:
    """What a parser's dependency trees follow, for CoNLL-U's ``# scheme`` comment: the
    head-rule conversion of the tree, or the parser's own arcs: Universal Dependencies for
    a parser trained on them (``arcs_are_ud``), else the relations of ``treebank`` (its
    training data: the PTB sample's head rules, a file)."""
    if constituency and dependencies == FROM_TREE:
        return TREE_SCHEME
    if arcs_are_ud(treebank):
        ud = JOINT_UD if treebank == JOINT_TREEBANK else treebank
        return f"Universal Dependencies ({ud}), the parser's own arcs"
    if constituency:
        return OWN_ARCS_SCHEME
    return f"the parser's own arcs, relations of its training treebank ({treebank or 'unnamed'})"


def training_treebank(data: Mapping[str, Any]) -> str:
    """The data a parser was trained on, from its run config's ``data`` section: the data
    set's name, or the training file's name for ``files``."""
    name = data.get("name", "")
    return Path(data.get("paths", {}).get("train", "")).name if name == "files" else name


def best_relations(
    rel_logits: torch.Tensor, is_root: torch.Tensor, root_id: int | None
) -> torch.Tensor:
    """(B, n) label-set ids of each word's relation from ``rel_logits`` (B, n, outputs):
    ``root_id`` for a root word (``is_root`` (B, n)), the best other relation for every
    other word; with no ``root_id`` (no relation is ``root``), the best one."""
    named = rel_logits[..., UNNAMED_OUTPUTS:]
    if root_id is None:
        return named.argmax(-1)
    root_column = torch.arange(named.shape[-1], device=named.device) == root_id
    # A root word may take only root, any other word anything but root.
    barred = is_root[..., None] != root_column
    return named.masked_fill(barred, float("-inf")).argmax(-1)


def tree_dependencies(tree: Tree, tags: list[str]) -> DependencyTree:
    """The head-rule dependencies of a predicted ``tree`` (its ``xpos``: ``tags``), the
    conversion the training dependencies came from, naming ``TREE_SCHEME``."""
    converted = to_dependency(tree, source="predicted tree")
    return DependencyTree(
        tree.leaves(),
        converted.heads,
        converted.relations,
        xpos=tags,
        metadata={"scheme": TREE_SCHEME},
    )


def decode(
    network: LabelAttentionParser,
    out: ParserOutput,
    lengths: torch.Tensor,
    words: Sequence[list[str]],
    vocab: ParserVocab,
    leaf_tags: Sequence[list[str]] | None = None,
    dependencies: str = INDEPENDENT,
    treebank: str = "",
) -> list[Parsed]:
    """Each sentence's constituency tree (None for a dependency-only parser) and dependency
    tree (its ``xpos``: the predicted tags; its ``scheme`` metadata from
    ``dependency_scheme``, ``treebank`` naming a dependency-only parser's training data).
    The trees' leaves carry ``leaf_tags`` when given, else the predicted tags.
    ``dependencies``: ``INDEPENDENT`` (the arc scores' best tree) or ``FROM_TREE`` (the
    head-rule conversion of the constituency tree; a dependency-only parser's own arcs)."""
    if dependencies not in DEPENDENCY_SOURCES:
        raise ValueError(f"dependencies={dependencies!r}; one of {', '.join(DEPENDENCY_SOURCES)}")
    counts = lengths.tolist()
    tag_ids = best_named(out.tag_logits).cpu()
    tags = [vocab.tags.decode(row[:n].tolist()) for row, n in zip(tag_ids, counts, strict=True)]
    constituents: list[Tree | None] = [None] * len(words)
    if vocab.constituency:
        labels = vocab.labels
        chart = CKY(out.span_scores, lengths).argmax
        for b, spans in enumerate(tree_spans(chart, lengths)):
            named = [
                (labels.names[label], start, end)
                for label, start, end in spans
                if labels.names[label] != EMPTY
            ]
            leaves = leaf_tags[b] if leaf_tags is not None else tags[b]
            constituents[b] = tree_from_chain_spans(words[b], named, leaves)
    if dependencies == FROM_TREE and vocab.constituency:
        # The arcs are left undecoded: the tree's own heads are the answer.
        derived = [
            tree_dependencies(t, tags[b]) for b, t in enumerate(constituents) if t is not None
        ]
        return list(zip(constituents, derived, strict=True))
    scheme = dependency_scheme(dependencies, vocab.constituency, treebank)
    if network.sizes.decoder == "eisner":
        heads = arcs_to_heads(Eisner(out.arc_scores, lengths).argmax, lengths)
    else:
        heads = best_heads(out.arc_scores, lengths)
    heads = heads[:, 1:].clamp(min=0)  # (B, n): word k's head, 0 = root
    root_id = vocab.rels.names.index(ROOT) if ROOT in vocab.rels.names else None
    rel_ids = best_relations(network.rel_scores(out, heads), heads == 0, root_id).cpu()
    heads = heads.cpu()
    trees = [
        DependencyTree(
            sentence,
            heads[b, :n].tolist(),
            vocab.rels.decode(rel_ids[b, :n].tolist()),
            xpos=tags[b],
            metadata={"scheme": scheme},
        )
        for b, (sentence, n) in enumerate(zip(words, counts, strict=True))
    ]
    return list(zip(constituents, trees, strict=True))


@torch.inference_mode()
def parse_all(
    network: LabelAttentionParser,
    data: ParseSet,
    vocab: ParserVocab,
    device: torch.device,
    max_tokens: int,
    gold_tags: bool = False,
    progress: bool = False,
    dependencies: str = INDEPENDENT,
    treebank: str = "",
) -> list[Parsed]:
    """Every sentence of ``data`` decoded, in its order, in batches of similar length
    (``batch_lengths``) of at most ``max_tokens`` padded tokens. With ``gold_tags`` the
    constituency trees carry the examples' own tags (for EVALB); ``progress`` shows a bar;
    ``dependencies`` and ``treebank`` as ``decode`` reads them."""
    found: dict[int, Parsed] = {}
    # Sorted by what pads most: with a backbone, its pieces (PTB test: 6% padded pieces
    # against 31% sorted by words).
    lengths = network.batch_lengths([ex.words for ex in data.examples])
    batches = bucket_batches(lengths, max_tokens, False)
    # A bar only on a terminal (tqdm reads disable=None so): a log file gets none.
    bar = tqdm(total=len(data), unit="sentence", disable=None if progress else True, leave=False)
    with evaluating(network), bar:
        for indices in batches:
            batch = data.batch(indices).to(device)
            out = network(batch.words, batch.chars, batch.pad_mask, sentences=batch.sentences)
            examples = [data.examples[i] for i in indices]
            words = [ex.words for ex in examples]
            leaf_tags = [ex.tags for ex in examples] if gold_tags else None
            parsed = decode(
                network, out, batch.lengths, words, vocab, leaf_tags, dependencies, treebank
            )
            found.update(zip(indices, parsed, strict=True))
            bar.update(len(indices))
    return [found[i] for i in range(len(data))]
