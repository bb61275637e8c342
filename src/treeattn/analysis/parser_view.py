"""A parser's page for ``treeattn view``: each predicted tree with the dependency arcs the
parser gives (labelled, their scheme named, and where they are not the tree's own
head-rule arcs, how many words they attach elsewhere), and what its label attention
layer's heads look at (Mrini et al. 2020): each head's attention over the sentence and,
where the layer's output keeps the heads apart, each head's contribution to each
predicted constituent (``analysis.label_heads``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from treeattn.analysis.label_heads import label_head_contributions
from treeattn.analysis.page_data import (
    PARSED,
    arcs_fields,
    head_rule_scheme,
    page_data,
    panel,
    tree_json,
    trees_line,
    words_that_differ,
)
from treeattn.attention.label import LabelAttention
from treeattn.parsing import Parser
from treeattn.parsing.decoding import TREE_SCHEME
from treeattn.parsing.parser import Parse
from treeattn.viz.page import count_of


def label_head_names(parser: Parser, n_heads: int) -> tuple[list[str], bool]:
    """The label attention heads' names: a parser with one head per constituent label
    (or, for dependencies only, per relation) names each after its label, in the label
    set's order; any other, "head 1", "head 2", ...; and whether they are labels."""
    labels = parser.vocab.labels.names[1:] if parser.constituency else parser.vocab.rels.names
    if len(labels) == n_heads:
        return [f"{h + 1} {label}" for h, label in enumerate(labels)], True
    return [f"head {h + 1}" for h in range(n_heads)], False


def own_arcs_name(parser: Parser) -> str:
    """The parser's own arcs as the page names them."""
    return "the parser's UD dependencies" if parser.ud else "the parser's own arcs"


def parse_arcs(parser: Parser, parse: Parse) -> dict[str, Any]:
    """A parse's arcs as the page reads them; under a tree whose head-rule arcs they are
    not, a line saying so and how many words they attach elsewhere."""
    drawn = parse.dependencies
    if drawn.metadata.get("scheme") == TREE_SCHEME or parse.tree is None:
        return arcs_fields(drawn)
    differ = words_that_differ(drawn, parse.tree)
    note = f"arcs: {own_arcs_name(parser)}, which may attach a phrase elsewhere than the tree does"
    if differ is not None:
        note += f"; {count_of(differ, 'word')} of {len(drawn.heads)} differ"
    return arcs_fields(drawn, note=note)


def arcs_line(parser: Parser, parses: Sequence[Parse]) -> str:
    """The page's line naming the arcs drawn: the scheme each dependency tree names."""
    schemes = list(dict.fromkeys(p.dependencies.metadata.get("scheme", "") for p in parses))
    if schemes == [TREE_SCHEME]:
        return head_rule_scheme()
    named = "; ".join(s for s in schemes if s) or "unnamed"
    line = f"arcs: {own_arcs_name(parser)} ({named})"
    if parser.constituency:
        line += (
            ", not the head-rule conversion of the tree drawn above them "
            "(`--dependencies tree` draws that)"
        )
    return line


def label_head_panels(
    parser: Parser, words: list[str], over_tokens: torch.Tensor, head_names: list[str]
) -> list[dict]:
    """The label attention heads' panels for one sentence: each head's attention over the
    sentence (``over_tokens`` (H, T), or (H, ..., T) averaged), and each head's share of
    each predicted constituent where the layer keeps the heads apart."""
    heads = len(head_names)
    shown = [
        panel(
            "label attention heads: attention over the sentence",
            head_names,
            ["<s>", *words, "</s>"],
            over_tokens if over_tokens.dim() == 2 else over_tokens.mean(1),
            "each head's one query (one head per label) over the words",
            relative=True,
        )
    ]
    try:
        spans = label_head_contributions(parser, words)
    except ValueError as why:  # heads mixed after the layer: no share per head
        spans = []
        shown[0]["note"] += f"; no contribution per span: {why}"
    if spans:
        shown.append(
            panel(
                "label-head contributions per predicted constituent",
                [f"{span.label}: {' '.join(span.words)}"[:40] for span in spans],
                head_names,
                torch.tensor([span.contributions[:heads] for span in spans]),
                "each head's share of the span's vector (Mrini et al., Fig. 6)",
                relative=True,
            )
        )
    return shown


@torch.no_grad()
def parser_view_data(
    parser: Parser,
    sentences: Sequence[Sequence[str]],
    where: str,
    title: str,
    total: int | None = None,
    max_heads: int = 8,
    texts: Sequence[str] | None = None,
    dependencies: str | None = None,
) -> dict[str, Any]:
    """A parser's page for ``sentences`` (each a list of words; ``texts``: each as written,
    for its heading): each predicted tree with its dependency arcs in ``dependencies``
    (``Parser.parse``'s schemes; default: the parser's), and what the label attention
    layer's heads look at (``label_head_panels``)."""
    if not sentences:
        raise ValueError(f"{where}: no sentences to show")
    top = parser.model.top
    if not isinstance(top, LabelAttention):
        raise ValueError(f"{title}: the parser has no label attention layer to show")
    n_heads = top.n_heads
    heads = min(n_heads, max_heads)
    head_names, named = label_head_names(parser, n_heads)
    head_names = head_names[:heads]
    parses = parser.parse(
        [list(words) for words in sentences], where=where, dependencies=dependencies
    )
    texts = [" ".join(parse.words) for parse in parses] if texts is None else texts
    seen: list[torch.Tensor] = []
    hook = top.register_forward_hook(lambda m, inputs, _out: seen.append(m.head_weights(*inputs)))
    shown = []
    try:
        for parse, text in zip(parses, texts, strict=True):
            seen.clear()
            batch = parser.encode([parse.words]).batch([0]).to(parser.device)
            parser.model.encode(batch.words, batch.chars, batch.pad_mask, batch.sentences)
            over_tokens = seen[0][0, :heads]  # (H, T): the start token, the words, the stop
            shown.append(
                {
                    "text": text,
                    "words": parse.words,
                    "tree": None if parse.tree is None else tree_json(parse.tree),
                    "tree_origin": PARSED,
                    **parse_arcs(parser, parse),
                    "attention": [],
                    "latent": [],
                    "nodes": [],
                    "panels": label_head_panels(parser, parse.words, over_tokens, head_names),
                }
            )
    finally:
        hook.remove()
    total = len(shown) if total is None else total
    notes = [f"showing the first {len(shown)} of {total} sentences"] if total > len(shown) else []
    if heads < n_heads:
        notes.append(f"showing the first {heads} of {n_heads} label attention heads")
    if named:
        notes.append(
            "one label attention head per label, each named after its label in the label "
            "set's order, as the paper has one head per syntactic category; no loss ties a "
            "head to its label"
        )
    about = {
        "title": title,
        "source": where,
        "heads": heads,
        "notes": notes,
        "trees_line": trees_line([PARSED] * len(shown)) if parser.constituency else "",
        "arcs_line": arcs_line(parser, parses),
    }
    return page_data(about, "label", "parse", shown)
