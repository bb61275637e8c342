"""What ``treeattn view`` shows of a trained model, as plain data: for a few sentences,
their trees, every layer and head's attention, and what each mechanism's paper looks at.

The attention and what each mechanism shows beside it are read off the forward pass
(``analysis.capture``); the panels, a tree the model induced and latent trees are the
mechanism's to draw (its ``MechanismView``), so that this module names no mechanism. The
page itself is drawn by ``treeattn.viz.page``, which imports no model.

On a pretrained backbone, every BERT layer's attention over pieces comes first (as words),
then the layers on top; syntax injected into the backbone shows what its mechanism reads
off the edit each chosen layer received.

Attention goes to the page as one byte a probability (``LEVELS`` steps, base64 per head),
the panels' values as integers in thousandths; a page that would still pass ``MAX_BYTES``
shows fewer heads, then fewer sentences, and says so.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from treeattn.analysis.capture import Captured, capture, mechanism_view, parts
from treeattn.analysis.induction import uses_start_token
from treeattn.analysis.label_heads import label_head_contributions
from treeattn.attention.inspection import MechanismView, Panel, SentenceView, head_numbers
from treeattn.attention.label import LabelAttention
from treeattn.attention.registry import capabilities_of
from treeattn.models.registry import TREE, encoder_entry
from treeattn.parsing import Parser
from treeattn.parsing.tree_source import PARSER, TreeSource
from treeattn.tasks.parse import ParseTask
from treeattn.tasks.sentences import LabeledSentence
from treeattn.tasks.trained import Trained, load_trained
from treeattn.tasks.translate import Pair
from treeattn.trees import COLLINS_HEAD_RULES, Tree, strip_label, to_dependency
from treeattn.viz.page import count_of, render_page

SCALE = 1000  # the panels' probabilities are stored as integers in thousandths
LEVELS = 255  # attention is stored as one byte a probability (0..255), base64 per head
MAX_SENTENCES = 20
MAX_HEADS = 8
MAX_BYTES = 4_500_000  # fewer heads, then fewer sentences, keep a page below this
SHOWN_TASKS = ("classify", "mlm", "translate")  # tasks whose encoder reads a sentence


def quantize(values: torch.Tensor) -> list[int]:
    """Probabilities, flattened, as integers in thousandths (a panel's values)."""
    return (values.detach().float().clamp(0, 1) * SCALE).round().to(torch.int64).flatten().tolist()


def encode_attention(weights: torch.Tensor) -> str:
    """One head's attention (q, k), row by row, as base64 of one byte a probability
    (``LEVELS`` steps): a third of the size of JSON numbers, and read as fast."""
    levels = (weights.detach().float().clamp(0, 1) * LEVELS).round().to(torch.uint8)
    return base64.b64encode(levels.cpu().numpy().tobytes()).decode("ascii")


def decode_attention(text: str, size: int) -> torch.Tensor:
    """``encode_attention``'s inverse: (size, size) probabilities to 1 / (2 LEVELS)."""
    levels = torch.frombuffer(bytearray(base64.b64decode(text)), dtype=torch.uint8)
    return levels.view(size, size).float() / LEVELS


def tree_json(
    tree: Tree, node_index: dict[tuple[int, int, int], int] | None = None, first: int = 0
) -> dict:
    """A tree as the page draws it: ``{"label", "node", "children"}``, a leaf as its word's
    index (the tree's first word is word ``first``). ``node`` is the model's index of the
    phrase node (hierarchical models: nodes by span and their order among nodes of one
    span, top down), else None."""
    seen: dict[tuple[int, int], int] = {}

    def walk(node: Tree | str, start: int) -> tuple[Any, int]:
        if isinstance(node, str):
            return start, start + 1
        children, end = [], start
        for child in node.children:
            drawn, end = walk(child, end)
            children.append(drawn)
        k = seen.get((start, end), 0)
        seen[(start, end)] = k + 1
        index = None if node_index is None else node_index.get((start, end, k))
        return {"label": node.label, "node": index, "children": children}, end

    return walk(tree, first)[0]


def _model_nodes(item) -> tuple[list[list[int]], dict[tuple[int, int, int], int]]:
    """The spans of the model's phrase nodes (pre-order) and their index by (start, end,
    order among nodes of that span)."""
    spans = list(zip(item.tree.node_start.tolist(), item.tree.node_end.tolist(), strict=True))
    index: dict[tuple[int, int, int], int] = {}
    for t, (start, end) in enumerate(spans):
        k = sum(1 for s in spans[:t] if s == (start, end))
        index[(start, end, k)] = t
    return [list(s) for s in spans], index


def labelled(tree: Tree) -> bool:
    """Whether head rules can read the tree: some phrase of it has a label they know (not
    a tree whose labels are hidden, as SST's and the trees made like them)."""
    return any(strip_label(t.label) in COLLINS_HEAD_RULES for t in tree.subtrees())


def _heads_of(tree: Tree) -> list[int] | None:
    """Dependency heads of the tree's words by head rules (0 = root), or None where the
    rules do not apply: a tree without labels they know, or one they cannot convert."""
    if not labelled(tree):
        return None
    try:
        return list(to_dependency(tree).heads)
    except ValueError:
        return None


def _panel(
    title: str,
    rows: Sequence[str],
    cols: Sequence[str],
    values,
    note: str = "",
    relative: bool = False,
    layers: Sequence[int] | None = None,
) -> dict:
    """A grid the page draws beside the attention: ``values`` one (rows x cols) tensor, or a
    list of them, one per layer (then the layer slider picks: ``layers`` are the page's
    layers they belong to, by default the first ones); colours from 0 to 1, or with
    ``relative`` to the grid's largest value."""
    per_layer = isinstance(values, list)
    grids = values if per_layer else [values]
    return {
        "title": title,
        "note": note,
        "rows": list(rows),
        "cols": list(cols),
        "per_layer": per_layer,
        "layers": list(range(len(grids)) if layers is None else layers),
        "relative": relative,
        "values": [quantize(v) for v in grids],
    }


def _panel_data(panel: Panel) -> dict:
    """A mechanism's ``Panel`` as the page reads it."""
    return _panel(
        panel.title, panel.rows, panel.cols, panel.values, panel.note, panel.relative, panel.layers
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
):
    """One sentence's data; ``text``: the sentence as written (default: its words);
    ``with_nodes``: the model attends over phrase nodes (an encoder that gives a tree)."""
    words = list(example.tokens)
    nodes: list[str] = []
    spans: list[list[int]] = []
    node_index = None
    if with_nodes:
        spans, node_index = _model_nodes(item)  # its queries: the phrase nodes, then the words
    tree, first = example.tree, 0
    if tree is None and view.draws_own_tree and found.captures:  # the model's own tree
        first = int(uses_start_token(saved))  # over the words: a start token left out
        tree = view.tree(found.captures, words[first:])
    arcs = None if tree is None else _heads_of(tree)
    latent = view.latent(found.captures, heads)
    data: dict[str, Any] = {
        "text": " ".join(words) if text is None else text,
        "words": words,
        "tree": None if tree is None else tree_json(tree, node_index, first),
        # Word i's head (0: the root; None: a token outside the tree).
        "arcs": None if arcs is None else [None] * first + [h and h + first for h in arcs],
        "attention": [[encode_attention(h) for h in layer[:heads]] for layer in found.attention],
        # One entry a layer where the model has latent trees: none in a backbone's.
        "latent": [[]] * found.backbone_layers + latent if latent else [],
    }
    sentence = SentenceView(words, names, heads, found.backbone_layers, len(spans), found.attention)
    panels = [_panel_data(panel) for panel in view.panels(found.captures, sentence)]
    if spans:
        labels = _node_labels(item, saved)
        nodes = [f"{label} {s}-{e}" for label, (s, e) in zip(labels, spans, strict=True)]
    data["nodes"] = nodes
    data["panels"] = panels
    return data


def _node_labels(item, saved: Trained) -> list[str]:
    vocab = saved.task.node_vocab
    return [vocab.tokens[int(i)] for i in item.node_ids]


def _trees_for(saved: Trained, examples: list[LabeledSentence], where: str):
    """The examples, each with a tree to draw: a sentence without one is parsed by the
    shipped parser (a Tree Transformer's own tree is read off its links instead)."""
    view = mechanism_view(saved.cfg.model.attention)
    layers = [m for m in saved.model.modules() if capabilities_of(m) is not None]
    induces = view.draws_own_tree and bool(layers)
    if induces or all(ex.tree is not None for ex in examples):
        return examples
    missing = [i for i, ex in enumerate(examples) if ex.tree is None]
    # The model's own tree source; a task that keeps none (mlm) is shown the parser's trees.
    source = saved.task.tree_source or TreeSource(PARSER)
    found = source.trees([examples[i].tokens for i in missing], where, progress=False, cache=False)
    out = list(examples)
    for i, tree in zip(missing, found, strict=True):
        out[i] = LabeledSentence(examples[i].tokens, examples[i].label, tree)
    return out


def _with_translations(saved: Trained, pairs: list[Pair], where: str) -> list[Pair]:
    """Each source with the model's own translation as its target, so that the decoder
    read with teacher forcing attends as it did when it translated."""
    found = saved.task.translations(saved.model, saved.encode(pairs, where), saved.device)
    return [replace(pair, target=text) for pair, text in zip(pairs, found, strict=True)]


def _as_sentence(saved: Trained, example, encoded) -> LabeledSentence:
    """A translation source as the encoder reads it: its pieces, under its tree."""
    if not isinstance(example, Pair):
        return example
    pieces = saved.task.pieces
    tree = None if example.tree is None else encoded.inputs.model_tree(example.tree, pieces)
    return LabeledSentence([p for word in example.words for p in pieces(word)], -1, tree)


@torch.no_grad()
def cross_attention(saved: Trained, batch) -> tuple[list[str], list[torch.Tensor]]:
    """The translation's pieces (the decoder's outputs, the end word last) and each decoder
    layer's cross-attention over the source keys, (t, keys) as the mean over heads, for a
    batch of one sentence."""
    record: list[torch.Tensor] = []
    saved.model(batch.inputs, batch.targets[:, :-1], record)
    subwords = saved.task.target_subwords.processor
    ids = batch.targets[0, 1:].tolist()
    pieces = [subwords.id_to_piece(i) for i in ids[:-1]] + ["</s>"]
    means = [weights[0].mean(0) for weights in record]  # (t, keys) per decoder layer
    return pieces, means


def _add_cross_attention(data: dict, pieces: list[str], means, translation: str) -> None:
    """The translation and the decoder's cross-attention panels, into one sentence's data."""
    keys = data["nodes"] + data["words"]
    m = len(data["nodes"])
    data["translation"] = translation
    data["panels"].append(
        _panel(
            "decoder cross-attention over the source (mean over heads)",
            pieces,
            keys,
            means,
            "each row: where the decoder looks when it writes that piece of the "
            "translation, with teacher forcing on the model's own output",
            relative=True,
        )
    )
    if m:
        on_nodes = [w[:, :m].sum(-1).mean() for w in means]
        shares = [torch.stack([x, 1 - x])[None] for x in on_nodes]
        data["panels"].append(
            _panel(
                "decoder cross-attention on phrase nodes and on words",
                ["target pieces"],
                ["on nodes", "on words"],
                shares,
                "mean over heads and target pieces (Nguyen et al., Table 4)",
            )
        )


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


def _page_data(about: dict, mechanism: str, task: str, sentences: list[dict]) -> dict:
    """The page's data: ``about`` (title, source, heads, notes), the model's kind and the
    sentences; ``layers`` is 0 for a model with no word-to-word attention shown."""
    layers = len(sentences[0]["attention"])
    return {
        **about,
        "mechanism": mechanism,
        "task": task,
        "layers": layers,
        "scale": SCALE,
        "levels": LEVELS,
        "sentences": sentences,
    }


def view_data(
    saved: Trained,
    examples: list[LabeledSentence],
    where: str,
    title: str,
    total: int | None = None,
    max_heads: int = MAX_HEADS,
    max_bytes: int = MAX_BYTES,
    texts: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Everything the page shows, for ``examples`` (the first of ``total`` sentences, when
    given) and the first ``max_heads`` heads of each layer, fewer heads and then fewer
    sentences where the page would pass ``max_bytes``; the page says what was left out.
    ``texts``: each sentence as written, for its heading (default: a translation's source,
    else the words)."""
    if not examples:
        raise ValueError(f"{where}: no sentences to show")
    translates = isinstance(examples[0], Pair)
    if translates:
        shown = _with_translations(saved, examples, where)
        texts = [pair.source for pair in shown] if texts is None else texts
    else:
        shown = _trees_for(saved, examples, where)
    texts = [None] * len(shown) if texts is None else list(texts)
    encoded = saved.encode(shown, where)
    items = encoded.sources if translates else encoded.items
    sentences = [_as_sentence(saved, example, encoded) for example in shown]
    batches = [encoded.batch([k]).to(saved.device) for k in range(len(shown))]
    found = [capture(saved, batch.inputs) for batch in batches]
    view = mechanism_view(saved.cfg.model.attention)
    with_nodes = encoder_entry(saved.cfg.model.attention).output == TREE
    crossed = [cross_attention(saved, batch) for batch in batches] if translates else []
    n_heads = max(layer.shape[0] for layer in found[0].attention)
    names, notes = _layer_names(saved, found[0])

    def build(heads: int) -> list[dict]:
        built = [
            sentence_data(
                saved, sentence, items[k], found[k], heads, names, view, texts[k], with_nodes
            )
            for k, sentence in enumerate(sentences)
        ]
        for data, (pieces, means), pair in zip(built, crossed, shown, strict=False):
            _add_cross_attention(data, pieces, means, pair.target)
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
    unlabelled = [s for s in sentences[:kept] if s.tree is not None and not labelled(s.tree)]
    if unlabelled:
        notes.append(
            f"no dependency arcs for {count_of(len(unlabelled), 'tree')} without Penn Treebank "
            "labels, which head rules need (each tree is drawn as the model reads it: SST's "
            "trees, and those made like them, are binarized with their labels hidden as X); "
            "`treeattn parse` gives the parser's labelled trees"
        )
    backbone = parts(saved.model.encoder)[0]
    injected = None if backbone is None else getattr(backbone.injectable, "syntax_injection", None)
    if injected is not None and max(injected.heads) >= heads:
        some = "not all" if min(injected.heads) < heads else "not"
        notes.append(
            f"the {injected.name} heads {head_numbers(injected.heads)} are {some} among the "
            f"{heads} heads shown (--max-heads)"
        )
    about = {"title": title, "source": where, "heads": heads, "notes": notes}
    data = _page_data(about, saved.cfg.model.attention, saved.cfg.task, shown_data)
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


def label_head_names(parser: Parser, n_heads: int) -> tuple[list[str], bool]:
    """The label attention heads' names: a parser with one head per constituent label
    (or, for dependencies only, per relation) names each after its label, in the label
    set's order; any other, "head 1", "head 2", ...; and whether they are labels."""
    labels = parser.vocab.labels.names[1:] if parser.constituency else parser.vocab.rels.names
    if len(labels) == n_heads:
        return [f"{h + 1} {label}" for h, label in enumerate(labels)], True
    return [f"head {h + 1}" for h in range(n_heads)], False


@torch.no_grad()
def parser_view_data(
    parser: Parser,
    sentences: Sequence[Sequence[str]],
    where: str,
    title: str,
    total: int | None = None,
    max_heads: int = MAX_HEADS,
    texts: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A parser's page for ``sentences`` (each a list of words; ``texts``: each as written,
    for its heading): each predicted tree with its dependency arcs, and what the label
    attention layer's heads look at: each head's attention over the sentence and, where
    the layer's output keeps the heads apart (concatenated heads, no feed-forward layer
    after it), each head's contribution to each predicted constituent (Mrini et al.,
    Fig. 6; ``analysis.label_heads``)."""
    if not sentences:
        raise ValueError(f"{where}: no sentences to show")
    top = parser.model.top
    if not isinstance(top, LabelAttention):
        raise ValueError(f"{title}: the parser has no label attention layer to show")
    n_heads = top.n_heads
    heads = min(n_heads, max_heads)
    head_names, named = label_head_names(parser, n_heads)
    head_names = head_names[:heads]
    parses = parser.parse([list(words) for words in sentences], where=where)
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
            tokens = ["<s>", *parse.words, "</s>"]
            panels = [
                _panel(
                    "label attention heads: attention over the sentence",
                    head_names,
                    tokens,
                    over_tokens if over_tokens.dim() == 2 else over_tokens.mean(1),
                    "each head's one query (one head per label) over the words",
                    relative=True,
                )
            ]
            try:
                spans = label_head_contributions(parser, parse.words)
            except ValueError as why:  # heads mixed after the layer: no share per head
                spans = []
                panels[0]["note"] += f"; no contribution per span: {why}"
            if spans:
                panels.append(
                    _panel(
                        "label-head contributions per predicted constituent",
                        [f"{span.label}: {' '.join(span.words)}"[:40] for span in spans],
                        head_names,
                        torch.tensor([span.contributions[:heads] for span in spans]),
                        "each head's share of the span's vector (Mrini et al., Fig. 6)",
                        relative=True,
                    )
                )
            shown.append(
                {
                    "text": text,
                    "words": parse.words,
                    "tree": None if parse.tree is None else tree_json(parse.tree),
                    "arcs": list(parse.dependencies.heads),
                    "attention": [],
                    "latent": [],
                    "nodes": [],
                    "panels": panels,
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
    about = {"title": title, "source": where, "heads": heads, "notes": notes}
    return _page_data(about, "label", "parse", shown)


def view_page(
    checkpoint: str | Path,
    lines: Sequence[str] | None = None,
    where: str = "<input>",
    split: str | None = None,
    max_sentences: int = MAX_SENTENCES,
    max_heads: int = MAX_HEADS,
    device: str = "cpu",
    max_bytes: int = MAX_BYTES,
) -> str:
    """The page's HTML for a checkpoint and input ``lines`` (one sentence or bracketed tree
    a line, as ``treeattn predict`` reads them), or the sentences of ``split`` (default:
    the model's held-out split, ``Task.held_out_split``) when no lines are given; the first
    ``max_sentences`` of them."""
    saved = load_trained(checkpoint, device)
    split = split or saved.task.held_out_split
    if isinstance(saved.task, ParseTask):
        parser = Parser.load(checkpoint, device)
        if lines is None:
            examples, where = saved.read(split)
            words = [example.words for example in examples]
        else:  # raw text, tokenized as the parser tokenizes it
            words = parser.words(list(lines[:max_sentences]), where)
        shown = words[:max_sentences]
        texts = None if lines is None else [line.strip() for line in lines[: len(shown)]]
        total = len(words) if lines is None else len(lines)
        data = parser_view_data(parser, shown, where, str(checkpoint), total, max_heads, texts)
        return render_page(data)
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
    texts = None
    if lines is not None:
        lines = [line.strip() for line in lines[: len(shown)]]
        texts = [
            " ".join(ex.tokens) if line.startswith("(") else line
            for line, ex in zip(lines, shown, strict=True)
        ]
    data = view_data(saved, shown, where, str(checkpoint), total, max_heads, max_bytes, texts)
    return render_page(data)
