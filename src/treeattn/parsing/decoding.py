"""The network's scores as trees: the best constituency tree of the span chart (CKY, unary
chains split again), the best dependency tree of the arc scores (Eisner, projective, or
Chu-Liu-Edmonds) with each arc's best relation, and each word's best tag."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tqdm import tqdm

from treeattn.data.batching import bucket_batches
from treeattn.engine.task import evaluating
from treeattn.parsing.encoding import ParseSet
from treeattn.parsing.network import LabelAttentionParser, ParserOutput, best_named
from treeattn.parsing.vocab import EMPTY, ParserVocab
from treeattn.structs import CKY, Eisner, arcs_to_heads, best_heads
from treeattn.structs.cky import tree_spans
from treeattn.trees import Tree
from treeattn.trees.dependency import DependencyTree
from treeattn.trees.transforms import tree_from_chain_spans

Parsed = tuple[Tree | None, DependencyTree]


def decode(
    network: LabelAttentionParser,
    out: ParserOutput,
    lengths: torch.Tensor,
    words: Sequence[list[str]],
    vocab: ParserVocab,
    leaf_tags: Sequence[list[str]] | None = None,
) -> list[Parsed]:
    """Each sentence's constituency tree (None for a dependency-only parser) and dependency
    tree (its ``xpos``: the predicted tags). The trees' leaves carry ``leaf_tags`` when
    given, else the predicted tags."""
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
    if network.sizes.decoder == "eisner":
        heads = arcs_to_heads(Eisner(out.arc_scores, lengths).argmax, lengths)
    else:
        heads = best_heads(out.arc_scores, lengths)
    heads = heads[:, 1:].clamp(min=0)  # (B, n): word k's head, 0 = root
    rel_ids = best_named(network.rel_scores(out, heads)).cpu()
    heads = heads.cpu()
    dependencies = [
        DependencyTree(
            sentence,
            heads[b, :n].tolist(),
            vocab.rels.decode(rel_ids[b, :n].tolist()),
            xpos=tags[b],
        )
        for b, (sentence, n) in enumerate(zip(words, counts, strict=True))
    ]
    return list(zip(constituents, dependencies, strict=True))


@torch.inference_mode()
def parse_all(
    network: LabelAttentionParser,
    data: ParseSet,
    vocab: ParserVocab,
    device: torch.device,
    max_tokens: int,
    gold_tags: bool = False,
    progress: bool = False,
) -> list[Parsed]:
    """Every sentence of ``data`` decoded, in its order, in batches of similar length of at
    most ``max_tokens`` padded tokens. With ``gold_tags`` the constituency trees carry the
    examples' own tags (for EVALB); ``progress`` shows a bar."""
    found: dict[int, Parsed] = {}
    batches = bucket_batches(data.lengths, max_tokens, False)
    # A bar only on a terminal (tqdm reads disable=None so): a log file gets none.
    bar = tqdm(total=len(data), unit="sentence", disable=None if progress else True, leave=False)
    with evaluating(network), bar:
        for indices in batches:
            batch = data.batch(indices).to(device)
            out = network(batch.words, batch.chars, batch.pad_mask, sentences=batch.sentences)
            examples = [data.examples[i] for i in indices]
            words = [ex.words for ex in examples]
            leaf_tags = [ex.tags for ex in examples] if gold_tags else None
            parsed = decode(network, out, batch.lengths, words, vocab, leaf_tags)
            found.update(zip(indices, parsed, strict=True))
            bar.update(len(indices))
    return [found[i] for i in range(len(data))]
