"""What ``treeattn view`` shows of a trained model, as plain data: for a few sentences,
their trees, every layer and head's attention, and what each mechanism's paper looks at.

The attention and what each mechanism shows beside it are read off the forward pass
(``analysis.capture``); the panels, a tree the model induced and latent trees are the
mechanism's to draw (its ``MechanismView``), so that this module names no mechanism. What
every page is made of (attention as bytes, panels, trees and their arcs) is
``analysis.page_data``'s; a translation model's additions are ``analysis.translation_view``'s,
and a parser's page is ``analysis.parser_view``'s. The page itself is drawn by
``treeattn.viz.page``, which imports no model.

On a pretrained backbone, every BERT layer's attention over pieces comes first (as words),
then the layers on top; syntax injected into the backbone shows what its mechanism reads
off the edit each chosen layer received.

Attention goes to the page as one byte a probability (``page_data.LEVELS`` steps, base64
per head), the panels' values as integers in thousandths; a page that would still pass
``MAX_BYTES`` shows fewer heads, then fewer sentences, and says so. The page names where
each tree it draws comes from (the data's, the input's, the parser's, or induced from the
model's own links) and what its arcs are.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from treeattn.analysis.capture import Captured, capture, mechanism_view, parts
from treeattn.analysis.induction import uses_start_token
from treeattn.analysis.page_data import (
    FILES,
    GIVEN,
    GOLD,
    INDUCED,
    PARSED,
    RIGHT_BRANCHING,
    arcless_notes,
    arcs_fields,
    encode_attention,
    head_rule_arcs,
    head_rule_scheme,
    page_data,
    panel,
    tree_json,
    trees_line,
)
from treeattn.analysis.parser_view import parser_view_data
from treeattn.analysis.translation_view import (
    add_cross_attention,
    as_sentence,
    cross_attention,
    with_translations,
)
from treeattn.attention.inspection import MechanismView, Panel, SentenceView, head_numbers
from treeattn.attention.registry import capabilities_of
from treeattn.models.registry import TREE, encoder_entry
from treeattn.parsing import Parser
from treeattn.parsing import tree_source as sources
from treeattn.parsing.tree_source import PARSER, TreeSource
from treeattn.tasks.parse import ParseTask
from treeattn.tasks.sentences import LabeledSentence
from treeattn.tasks.trained import Trained, load_trained
from treeattn.tasks.translate import Pair
from treeattn.trees import Tree
from treeattn.viz.page import render_page

__all__ = ["MAX_BYTES", "sentence_data", "view_data", "view_page"]

MAX_SENTENCES = 20
MAX_HEADS = 8
MAX_BYTES = 4_500_000  # fewer heads, then fewer sentences, keep a page below this
SHOWN_TASKS = ("classify", "mlm", "translate")  # tasks whose encoder reads a sentence
# A tree source's kind as the page names where its trees come from.
SOURCE_ORIGINS = {
    sources.GOLD: GOLD,
    sources.PARSER: PARSED,
    sources.RIGHT_BRANCHING: RIGHT_BRANCHING,
    sources.FILES: FILES,
}


@dataclass(frozen=True)
class Drawn:
    """The tree a sentence is drawn with, where it comes from (``page_data.TREE_ORIGINS``)
    and its first word's index (a start token before it is outside the tree)."""

    tree: Tree | None
    origin: str
    first: int = 0


def _model_nodes(item) -> tuple[list[list[int]], dict[tuple[int, int, int], int]]:
    """The spans of the model's phrase nodes (pre-order) and their index by (start, end,
    order among nodes of that span)."""
    spans = list(zip(item.tree.node_start.tolist(), item.tree.node_end.tolist(), strict=True))
    index: dict[tuple[int, int, int], int] = {}
    for t, (start, end) in enumerate(spans):
        k = sum(1 for s in spans[:t] if s == (start, end))
        index[(start, end, k)] = t
    return [list(s) for s in spans], index


def _panel_data(shown: Panel) -> dict:
    """A mechanism's ``Panel`` as the page reads it."""
    return panel(
        shown.title, shown.rows, shown.cols, shown.values, shown.note, shown.relative, shown.layers
    )


def sentence_data(
    saved: Trained,
    example: LabeledSentence,
    item,
    found: Captured,
    heads: int,
    names: list[str],
    view: MechanismView,
    text: str | None = None,
    with_nodes: bool = False,
    drawn: Drawn | None = None,
):
    """One sentence's data; ``text``: the sentence as written (default: its words);
    ``with_nodes``: the model attends over phrase nodes (an encoder that gives a tree);
    ``drawn``: the tree to draw (default: the example's, from the data)."""
    words = list(example.tokens)
    nodes: list[str] = []
    spans: list[list[int]] = []
    node_index = None
    if with_nodes:
        spans, node_index = _model_nodes(item)  # its queries: the phrase nodes, then the words
    drawn = Drawn(example.tree, GOLD) if drawn is None else drawn
    tree, first = drawn.tree, drawn.first
    latent = view.latent(found.captures, heads)
    data: dict[str, Any] = {
        "text": " ".join(words) if text is None else text,
        "words": words,
        "tree": None if tree is None else tree_json(tree, node_index, first),
        "tree_origin": None if tree is None else drawn.origin,
        **arcs_fields(None if tree is None else head_rule_arcs(tree), first),
        "attention": [[encode_attention(h) for h in layer[:heads]] for layer in found.attention],
        # One entry a layer where the model has latent trees: none in a backbone's.
        "latent": [[]] * found.backbone_layers + latent if latent else [],
    }
    sentence = SentenceView(words, names, heads, found.backbone_layers, len(spans), found.attention)
    panels = [_panel_data(shown) for shown in view.panels(found.captures, sentence)]
    if spans:
        labels = _node_labels(item, saved)
        nodes = [f"{label} {s}-{e}" for label, (s, e) in zip(labels, spans, strict=True)]
    data["nodes"] = nodes
    data["panels"] = panels
    return data


def _node_labels(item, saved: Trained) -> list[str]:
    vocab = saved.task.node_vocab
    return [vocab.tokens[int(i)] for i in item.node_ids]


def induces_trees(saved: Trained) -> bool:
    """Whether the model reads a tree off its own layers' links (its mechanism draws its
    own tree, as ``treeattn induce`` reads it), which the page draws instead of any other."""
    view = mechanism_view(saved.cfg.model.attention)
    return view.draws_own_tree and any(capabilities_of(m) for m in saved.model.modules())


def tree_origin(saved: Trained, tree_line: bool | None) -> str:
    """Where the tree that came with an example is from: ``tree_line``, the example was an
    input line that is a tree itself (None: an example of the data)."""
    if tree_line:
        return GIVEN
    source = getattr(saved.task, "tree_source", None)
    kind = sources.GOLD if source is None else source.kind
    if not encoder_entry(saved.cfg.model.attention).needs_trees:
        return GOLD  # a model that reads no tree keeps the data's
    if tree_line is not None and kind == sources.GOLD:
        return PARSED  # raw text, for a model trained on gold trees: its parser's
    return SOURCE_ORIGINS[kind]


def _drawn_tree(
    saved: Trained,
    view: MechanismView,
    example: LabeledSentence,
    found: Captured,
    induces: bool,
    parsed: bool,
    tree_line: bool | None,
) -> Drawn:
    """The tree one sentence is drawn with: for a model that induces its own, the one read
    off its links (not a tree it never read); else the example's (``parsed``: by the
    viewer), with where it comes from."""
    if induces and found.captures:
        first = int(uses_start_token(saved))  # over the words: a start token left out
        return Drawn(view.tree(found.captures, list(example.tokens)[first:]), INDUCED, first)
    return Drawn(example.tree, PARSED if parsed else tree_origin(saved, tree_line))


def _trees_for(
    saved: Trained, examples: list[LabeledSentence], where: str, induces: bool
) -> tuple[list[LabeledSentence], list[int]]:
    """The examples, each with a tree to draw, and which of them were parsed here: a
    sentence without one is parsed by the shipped parser (a model that induces its own
    tree is left as it is)."""
    if induces or all(ex.tree is not None for ex in examples):
        return examples, []
    missing = [i for i, ex in enumerate(examples) if ex.tree is None]
    # The model's own tree source; a task that keeps none (mlm) is shown the parser's trees.
    source = saved.task.tree_source or TreeSource(PARSER)
    found = source.trees([examples[i].tokens for i in missing], where, progress=False, cache=False)
    out = list(examples)
    for i, tree in zip(missing, found, strict=True):
        out[i] = LabeledSentence(examples[i].tokens, examples[i].label, tree)
    return out, missing


def _sizes(sentences: list[dict]) -> list[int]:
    return [len(json.dumps(sentence, separators=(",", ":"))) for sentence in sentences]


def _fit(build, heads: int, max_bytes: int) -> tuple[int, int]:
    """How many heads, then sentences, fit in ``max_bytes``: ``build(k)`` gives every
    sentence's data with k heads, whose size grows by about the same amount each head."""
    one = _sizes(build(1))
    per_head = [0] * len(one)
    if heads > 1:
        per_head = [b - a for a, b in zip(one, _sizes(build(2)), strict=True)]
    fits = [k for k in range(1, heads + 1) if sum(one) + (k - 1) * sum(per_head) <= max_bytes]
    if fits:
        return fits[-1], len(one)
    return 1, max(1, int((torch.tensor(one).cumsum(0) <= max_bytes).sum()))


def view_data(
    saved: Trained,
    examples: list[LabeledSentence],
    where: str,
    title: str,
    total: int | None = None,
    max_heads: int = MAX_HEADS,
    max_bytes: int = MAX_BYTES,
    texts: Sequence[str] | None = None,
    tree_lines: Sequence[bool] | None = None,
) -> dict[str, Any]:
    """Everything the page shows, for ``examples`` (the first of ``total`` sentences, when
    given) and the first ``max_heads`` heads of each layer, fewer heads and then fewer
    sentences where the page would pass ``max_bytes``; the page says what was left out.
    ``texts``: each sentence as written, for its heading (default: a translation's source,
    else the words); ``tree_lines``: for input lines, whether each is a tree itself (None:
    examples of the data), so that the page can say where each tree comes from."""
    if not examples:
        raise ValueError(f"{where}: no sentences to show")
    translates = isinstance(examples[0], Pair)
    induces = induces_trees(saved)
    parsed: list[int] = []
    if translates:
        shown = with_translations(saved, examples, where)
        texts = [pair.source for pair in shown] if texts is None else texts
    else:
        shown, parsed = _trees_for(saved, examples, where, induces)
    texts = [None] * len(shown) if texts is None else list(texts)
    lines = [None] * len(shown) if tree_lines is None else list(tree_lines)
    encoded = saved.encode(shown, where)
    items = encoded.sources if translates else encoded.items
    sentences = [as_sentence(saved, example, encoded) for example in shown]
    batches = [encoded.batch([k]).to(saved.device) for k in range(len(shown))]
    found = [capture(saved, batch.inputs) for batch in batches]
    view = mechanism_view(saved.cfg.model.attention)
    with_nodes = encoder_entry(saved.cfg.model.attention).output == TREE
    crossed = [cross_attention(saved, batch) for batch in batches] if translates else []
    trees = [
        _drawn_tree(saved, view, sentence, captured, induces, k in parsed, lines[k])
        for k, (sentence, captured) in enumerate(zip(sentences, found, strict=True))
    ]
    n_heads = max(layer.shape[0] for layer in found[0].attention)
    names, notes = _layer_names(saved, found[0])

    def build(heads: int) -> list[dict]:
        built = [
            sentence_data(
                saved,
                sentence,
                items[k],
                found[k],
                heads,
                names,
                view,
                texts[k],
                with_nodes,
                trees[k],
            )
            for k, sentence in enumerate(sentences)
        ]
        for data, (pieces, means), pair in zip(built, crossed, shown, strict=False):
            add_cross_attention(data, pieces, means, pair.target)
        return built

    heads, kept = _fit(build, min(n_heads, max_heads), max_bytes)
    total = len(shown) if total is None else total
    why = f", to keep the page under {max_bytes / 1e6:.1f} MB"
    if total > kept:
        cut = why if kept < len(shown) else ""
        notes.append(f"showing the first {kept} of {total} sentences{cut}")
    if heads < n_heads:
        cut = why if heads < min(n_heads, max_heads) else ""
        notes.append(f"showing the first {heads} of {n_heads} heads in each layer{cut}")
    shown_data = build(heads)[:kept]
    notes += arcless_notes([t.tree for t in trees[:kept]], [t.origin for t in trees[:kept]])
    backbone = parts(saved.model.encoder)[0]
    injected = None if backbone is None else getattr(backbone.injectable, "syntax_injection", None)
    if injected is not None and max(injected.heads) >= heads:
        some = "not all" if min(injected.heads) < heads else "not"
        notes.append(
            f"the {injected.name} heads {head_numbers(injected.heads)} are {some} among the "
            f"{heads} heads shown (--max-heads)"
        )
    about = {
        "title": title,
        "source": where,
        "heads": heads,
        "notes": notes,
        "trees_line": trees_line([t.origin for t in trees[:kept] if t.tree is not None]),
        "arcs_line": head_rule_scheme() if any(s["arcs"] for s in shown_data) else "",
    }
    data = page_data(about, saved.cfg.model.attention, saved.cfg.task, shown_data)
    return {**data, "layer_names": names}


def _layer_names(saved: Trained, found: Captured) -> tuple[list[str], list[str]]:
    """The page's names of its layers (a backbone's, then the model's own) and what the
    page says about them."""
    layers = len(found.attention)
    backbone = saved.cfg.model.backbone if found.backbone_layers else None
    if backbone is None:
        return [f"layer {i + 1}" for i in range(layers)], []
    name = "MiniLM" if backbone == "minilm" else Path(backbone).name
    own = saved.cfg.model.attention
    names = [f"{name} layer {i + 1}" for i in range(found.backbone_layers)]
    names += [f"{own} layer {i + 1}" for i in range(layers - found.backbone_layers)]
    notes = [
        f"{name}'s attention over pieces is shown over words: attention to a word is the sum "
        "over its pieces, from a word the mean over its pieces; [CLS] and [SEP] are left "
        "out, so a row sums to less than 1"
    ]
    top = parts(saved.model.encoder)[1]
    if top is not None and layers == found.backbone_layers:
        notes.append(f"the {own} encoder on top of {name} has no attention to show")
    return names, notes


def view_page(
    checkpoint: str | Path,
    lines: Sequence[str] | None = None,
    where: str = "<input>",
    split: str | None = None,
    max_sentences: int = MAX_SENTENCES,
    max_heads: int = MAX_HEADS,
    device: str = "cpu",
    max_bytes: int = MAX_BYTES,
    dependencies: str | None = None,
) -> str:
    """The page's HTML for a checkpoint and input ``lines`` (one sentence or bracketed tree
    a line, as ``treeattn predict`` reads them), or the sentences of ``split`` (default:
    the model's held-out split, ``Task.held_out_split``) when no lines are given; the first
    ``max_sentences`` of them. ``dependencies``: for a parser, the scheme of the arcs drawn
    (``Parser.parse``'s; default: the parser's own); a model's page draws its tree's
    head-rule arcs."""
    saved = load_trained(checkpoint, device)
    split = split or saved.task.held_out_split
    if isinstance(saved.task, ParseTask):
        parser = Parser.load(checkpoint, device)
        if lines is None:
            examples, where = saved.read(split)
            words = [example.words for example in examples]
        else:  # raw text, tokenized as the parser tokenizes it for those arcs
            words = parser.words(
                list(lines[:max_sentences]), where, parser.token_scheme(dependencies)
            )
        shown = words[:max_sentences]
        texts = None if lines is None else [line.strip() for line in lines[: len(shown)]]
        total = len(words) if lines is None else len(lines)
        data = parser_view_data(
            parser, shown, where, str(checkpoint), total, max_heads, texts, dependencies
        )
        return render_page(data)
    if dependencies is not None:
        raise ValueError(
            f"{checkpoint}: the dependencies drawn are chosen for a parser's page; a model's "
            "page draws the head-rule arcs of the tree it reads"
        )
    if saved.cfg.task not in SHOWN_TASKS:
        raise ValueError(
            f"{checkpoint}: treeattn view shows {', '.join(SHOWN_TASKS)} and parse models, "
            f"not a {saved.cfg.task} model"
        )
    if lines is None:
        examples, where = saved.read(split)
        total = len(examples)
    else:
        total = len(lines)
        examples = saved.task.read_inputs(list(lines[:max_sentences]), where)
    shown = examples[:max_sentences]
    # A raw line's heading is the line; a bracketed tree's, its words.
    texts = tree_lines = None
    if lines is not None:
        lines = [line.strip() for line in lines[: len(shown)]]
        texts = [
            " ".join(ex.tokens) if line.startswith("(") else line
            for line, ex in zip(lines, shown, strict=True)
        ]
        tree_lines = [line.startswith(("(", "[")) for line in lines]
    data = view_data(
        saved, shown, where, str(checkpoint), total, max_heads, max_bytes, texts, tree_lines
    )
    return render_page(data)
