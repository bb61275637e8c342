"""What ``treeattn view`` shows of a trained model, as plain data: for a few sentences,
their trees, every layer and head's attention, and what each mechanism's paper looks at.

The attention is read, not recomputed differently: forward hooks on the model's own
attention layers ask each layer for the probabilities its forward pass mixed values with
(``attention_weights``), the hierarchical encoder returns its weights itself, and the latent
trees of structured attention come from the same scores and marginals as in the forward
pass. The page itself is drawn by ``treeattn.viz.page``, which imports no model.

On a pretrained backbone, every BERT layer's attention over pieces comes first (as words:
``word_attention``), then the layers on top; syntax injected into the backbone shows the
gate or the constituent prior of each chosen layer, read off the edit the layer received.

Attention goes to the page as one byte a probability (``LEVELS`` steps, base64 per head),
the panels' values as integers in thousandths; a page that would still pass ``MAX_BYTES``
shows fewer heads, then fewer sentences, and says so.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from treeattn.analysis.hierarchical import layer_weights
from treeattn.analysis.induction import trees_from_links, uses_start_token
from treeattn.analysis.label_heads import label_head_contributions
from treeattn.analysis.latent_trees import decode_heads
from treeattn.attention.constituent import LINKS, ConstituentAttention, constituent_prior
from treeattn.attention.distance import BIAS, DistanceAttention
from treeattn.attention.label import LabelAttention
from treeattn.attention.registry import LAYER
from treeattn.attention.structured import StructuredAttention, arc_marginals
from treeattn.models.backbone import Backbone, BertLayer, first_pieces
from treeattn.models.head_edit import HeadEdit
from treeattn.models.hierarchical import HierarchicalEncoder
from treeattn.models.pretrained import BackboneEncoder
from treeattn.parsing import Parser
from treeattn.parsing.tree_source import PARSER, TreeSource
from treeattn.tasks.parse import ParseTask
from treeattn.tasks.sentences import LabeledSentence
from treeattn.tasks.trained import Trained, load_trained
from treeattn.tasks.translate import Pair
from treeattn.trees import Tree, to_dependency
from treeattn.viz.page import render_page

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


@dataclass
class Captured:
    """One sentence's pass: per layer, attention (H, q, q) and the mechanism's extras.
    Layers are counted as the page counts them: a backbone's first (``backbone_layers``
    of them), then the model's own."""

    attention: list[torch.Tensor] = field(default_factory=list)
    backbone_layers: int = 0
    links: list[torch.Tensor] = field(default_factory=list)  # constituent: (n-1,) per layer
    priors: list[torch.Tensor] = field(default_factory=list)  # constituent: (n, n) per layer
    prior_layers: list[int] = field(default_factory=list)  # constituent: the layer of each
    gates: list[torch.Tensor] = field(default_factory=list)  # distance: (n, n), local layers
    local_heads: list[list[int]] = field(default_factory=list)  # distance: per local layer
    gate_layers: list[int] = field(default_factory=list)  # distance: the layer of each gate
    marginals: list[torch.Tensor] = field(default_factory=list)  # structured: (H, n+1, n+1)
    best_heads: list[list[list[int]]] = field(default_factory=list)  # structured: per head

    @property
    def top_layers(self) -> list[int]:
        """The page's indices of the model's own layers (above a backbone)."""
        return list(range(self.backbone_layers, len(self.attention)))


def _hook(module: nn.Module, found: Captured):
    """A forward hook that keeps what ``module`` attended with in this pass; the forward
    pass itself is untouched."""

    def keep(_module: nn.Module, inputs: tuple, _output: Any) -> None:
        x, pad_mask, context = inputs
        found.attention.append(module.attention_weights(x, pad_mask, context)[0])
        layer = len(found.attention) - 1
        if isinstance(module, ConstituentAttention):
            links = context[LINKS]  # this layer's, a^l
            found.links.append(links[0])
            found.priors.append(constituent_prior(links, module.prior_diagonal)[0])
            found.prior_layers.append(layer)
        if isinstance(module, DistanceAttention):
            local = module.local_heads_in(context.get(LAYER, 0))
            if local:
                bias = context[(BIAS, module.gate, module.tau)]  # (B, 1, n, n) log gate
                found.gates.append(bias[0, 0].exp())
                found.local_heads.append(list(range(local)))
                found.gate_layers.append(layer)

    return keep


def word_attention(pieces: torch.Tensor, word_of_piece: torch.Tensor) -> torch.Tensor:
    """Attention over pieces (H, p, p) as attention over words (H, n, n), as BERT analyses
    read it: attention to a word is the sum over its pieces, from a word the mean over its
    pieces; ``[CLS]``, ``[SEP]`` (``word_of_piece`` -1) are left out, so rows sum to the
    share the words get, at most 1."""
    n = int(word_of_piece.max()) + 1
    owner = word_of_piece[:, None] == torch.arange(n, device=word_of_piece.device)
    owner = owner.to(pieces.dtype)  # (p, n): one 1 a word's piece
    to_words = pieces @ owner  # (H, p, n)
    return owner.T @ to_words / owner.sum(0)[:, None]


def _bert_hook(found: Captured, word_of_piece: torch.Tensor):
    """A forward hook (with keywords) on a BERT layer: its attention as words, and the
    syntax edit it received, as words too (a word's first piece holds its row and
    column: ``syntax_injection.words_to_pieces``)."""
    n = int(word_of_piece.max()) + 1
    first = first_pieces(word_of_piece[None], n)[0]

    def keep(module: BertLayer, args: tuple, kwargs: dict, _output: Any) -> None:
        bound = {**dict(zip(("states", "allowed", "edit"), args, strict=False)), **kwargs}
        found.attention.append(word_attention(module.attention_weights(**bound)[0], word_of_piece))
        edit: HeadEdit | None = bound.get("edit")
        if edit is None or not edit.heads:
            return
        layer = len(found.attention) - 1
        if edit.bias is not None:  # distance: the log gate
            found.gates.append(edit.bias[0, 0][first][:, first].exp())
            found.local_heads.append(list(edit.heads))
            found.gate_layers.append(layer)
        else:  # constituent: C, whose first off-diagonal is the links
            prior = edit.prior[0, 0][first][:, first]
            found.priors.append(prior)
            found.links.append(prior.diagonal(1))
            found.prior_layers.append(layer)

    return keep


def _parts(encoder: nn.Module) -> tuple[Backbone | None, nn.Module | None]:
    """The pretrained backbone under ``encoder`` (None without one) and the encoder of the
    model's own layers (None for a backbone with nothing on top)."""
    if isinstance(encoder, BackboneEncoder):
        return encoder.backbone, encoder.top
    return None, encoder


def _structured_hook(module: StructuredAttention, found: Captured):
    """A forward hook on ``module``'s arc scorer: the marginals its layer attends with (the
    same function of the same scores) and each head's best tree."""

    def keep(_module: nn.Module, _inputs: tuple, scores: torch.Tensor) -> None:
        size = scores.shape[-1]
        lengths = torch.tensor([size - 1], device=scores.device)
        marginals = arc_marginals(scores, lengths, module.structure)[0]  # (H, n+1, n+1)
        found.marginals.append(marginals)
        # Each word's parent distribution over the words: column i of the arcs.
        found.attention.append(marginals[:, 1:, 1:].transpose(-1, -2))
        best = decode_heads(scores[0], lengths.expand(scores.shape[1]), module.structure)
        found.best_heads.append([row[1:] for row in best.tolist()])

    return keep


@torch.no_grad()
def capture(saved: Trained, inputs) -> Captured:
    """Run the encoder of ``saved`` on one sentence's typed batch ``inputs`` (B = 1)."""
    encoder = saved.model.encoder
    backbone, top = _parts(encoder)
    found = Captured()
    handles = []
    if backbone is not None:
        keep = _bert_hook(found, inputs.pieces.word_of_piece[0])
        handles += [
            layer.register_forward_hook(keep, with_kwargs=True) for layer in backbone.encoder.layers
        ]
    own = [] if top is None else list(top.modules())
    handles += [m.register_forward_hook(_hook(m, found)) for m in own if _attends(m)]
    handles += [
        m.arc_scorer.register_forward_hook(_structured_hook(m, found))
        for m in own
        if isinstance(m, StructuredAttention)
    ]
    if not handles and not isinstance(top, HierarchicalEncoder):
        raise ValueError("the model has no attention layer whose weights can be shown")
    try:
        if isinstance(top, HierarchicalEncoder):  # returns its weights itself
            words = None
            if backbone is not None:
                words = encoder.project(encoder.word_vectors(inputs))
            found.attention += [w[0] for w in layer_weights(top, inputs, words)]
        else:
            encoder.encode_inputs(inputs)
    finally:
        for handle in handles:
            handle.remove()
    if backbone is not None:
        found.backbone_layers = len(backbone.encoder.layers)
    return found


def _attends(module: nn.Module) -> bool:
    """Whether ``module`` is a from-scratch attention layer (``_hook`` reads it)."""
    return hasattr(module, "attention_weights") and not isinstance(module, BertLayer)


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


def _heads_of(tree: Tree) -> list[int] | None:
    """Dependency heads of the tree's words by head rules (0 = root), or None where the
    rules cannot convert it."""
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


def _numbers(indices: Sequence[int]) -> str:
    """0-based indices as the page counts them: "1-3" for a run, else "2, 4"."""
    shown = [i + 1 for i in indices]
    if len(shown) > 1 and shown == list(range(shown[0], shown[-1] + 1)):
        return f"{shown[0]}-{shown[-1]}"
    return ", ".join(map(str, shown))


def _panels(found: Captured, words: list[str], heads: int, names: list[str]) -> list[dict]:
    """What each mechanism's paper looks at, for one sentence; ``names``: the page's layers."""
    panels = []
    gaps = [f"{a}|{b}" for a, b in zip(words, words[1:], strict=False)]
    if found.links:
        panels.append(
            _panel(
                "link probabilities a (Tree Transformer)",
                [names[i] for i in found.prior_layers],
                gaps,
                torch.stack(found.links),
                "how strongly each pair of neighbours belongs to one constituent, per layer; "
                "links only grow upward",
            )
        )
        every = "every head's" if found.backbone_layers == 0 else "the chosen heads'"
        panels.append(
            _panel(
                "constituent prior C",
                words,
                words,
                found.priors,
                f"multiplies {every} attention probabilities in this layer",
                layers=found.prior_layers,
            )
        )
    if found.gates:
        # Every local layer has the same local heads (either mechanism's options).
        in_layers = ", ".join(names[i] for i in found.gate_layers)
        note = (
            f"heads {_numbers(found.local_heads[0])} attend inside each word's syntactic "
            f"local range in {in_layers}; the other heads attend everywhere"
        )
        panels.append(_panel("local range per word (gate)", words, words, found.gates[0], note))
    if found.marginals:
        roots = [m[:, 0, 1:] for m in found.marginals]  # (H, n) per layer
        head_names = [f"head {h + 1}" for h in range(heads)]
        panels.append(
            _panel(
                "latent tree: root marginals",
                head_names,
                words,
                [r[:heads] for r in roots],
                "probability that each word hangs from the root; the heat map shows each "
                "word's parent distribution (the marginals of the latent tree)",
                layers=found.top_layers,
            )
        )
    return panels


def _shares(weights: torch.Tensor, m: int) -> torch.Tensor:
    """(2, 2) mean share of node and leaf queries' attention on nodes and on leaves, over
    heads, from one layer's weights (H, m + n, m + n) of one sentence."""
    on_nodes = weights[..., :m].sum(-1).mean(0)  # (q,)
    rows = [on_nodes[:m].mean(), on_nodes[m:].mean()]
    return torch.stack([torch.stack([r, 1 - r]) for r in rows])


def sentence_data(
    saved: Trained,
    example: LabeledSentence,
    item,
    found: Captured,
    heads: int,
    names: list[str],
):
    words = list(example.tokens)
    nodes: list[str] = []
    spans: list[list[int]] = []
    node_index = None
    if isinstance(_parts(saved.model.encoder)[1], HierarchicalEncoder):
        spans, node_index = _model_nodes(item)  # its queries: the phrase nodes, then the words
    tree, first = example.tree, 0
    if tree is None and found.links:  # the Tree Transformer's own tree, read off its links
        first = int(uses_start_token(saved))  # over the words: a start token's link dropped
        links = [torch.stack(found.links)[:, first:].cpu().numpy()]
        tree = trees_from_links([words[first:]], links)[0]
    arcs = None if tree is None else _heads_of(tree)
    data: dict[str, Any] = {
        "words": words,
        "tree": None if tree is None else tree_json(tree, node_index, first),
        # Word i's head (0: the root; None: a token outside the tree).
        "arcs": None if arcs is None else [None] * first + [h and h + first for h in arcs],
        "attention": [[encode_attention(h) for h in layer[:heads]] for layer in found.attention],
        "latent": [layer[:heads] for layer in found.best_heads],
    }
    if found.best_heads:  # one entry a layer: none in a backbone's
        data["latent"] = [[]] * found.backbone_layers + data["latent"]
    panels = _panels(found, words, heads, names)
    if spans:
        m = len(spans)
        labels = _node_labels(item, saved)
        nodes = [f"{label} {s}-{e}" for label, (s, e) in zip(labels, spans, strict=True)]
        panels.append(
            _panel(
                "attention on phrase nodes and on words",
                ["node queries", "word queries"],
                ["on nodes", "on words"],
                [_shares(found.attention[i], m) for i in found.top_layers],
                "mean share over heads and queries (Nguyen et al., Table 4)",
                layers=found.top_layers,
            )
        )
    data["nodes"] = nodes
    data["panels"] = panels
    return data


def _node_labels(item, saved: Trained) -> list[str]:
    vocab = saved.task.node_vocab
    return [vocab.tokens[int(i)] for i in item.node_ids]


def _trees_for(saved: Trained, examples: list[LabeledSentence], where: str):
    """The examples, each with a tree to draw: a sentence without one is parsed by the
    shipped parser (a Tree Transformer's own tree is read off its links instead)."""
    induces = any(isinstance(m, ConstituentAttention) for m in saved.model.modules())
    if induces or all(ex.tree is not None for ex in examples):
        return examples
    missing = [i for i, ex in enumerate(examples) if ex.tree is None]
    source = TreeSource(PARSER, None, cache=False)
    found = source.trees([examples[i].tokens for i in missing], where, progress=False)
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
) -> dict[str, Any]:
    """Everything the page shows, for ``examples`` (the first of ``total`` sentences, when
    given) and the first ``max_heads`` heads of each layer, fewer heads and then fewer
    sentences where the page would pass ``max_bytes``; the page says what was left out."""
    if not examples:
        raise ValueError(f"{where}: no sentences to show")
    translates = isinstance(examples[0], Pair)
    if translates:
        shown = _with_translations(saved, examples, where)
    else:
        shown = _trees_for(saved, examples, where)
    encoded = saved.encode(shown, where)
    items = encoded.sources if translates else encoded.items
    sentences = [_as_sentence(saved, example, encoded) for example in shown]
    batches = [encoded.batch([k]).to(saved.device) for k in range(len(shown))]
    found = [capture(saved, batch.inputs) for batch in batches]
    crossed = [cross_attention(saved, batch) for batch in batches] if translates else []
    n_heads = max(layer.shape[0] for layer in found[0].attention)
    names, notes = _layer_names(saved, found[0])

    def build(heads: int) -> list[dict]:
        built = [
            sentence_data(saved, sentence, items[k], found[k], heads, names)
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
    injection = getattr(_parts(saved.model.encoder)[0], "encoder", None)
    injected = getattr(injection, "syntax_injection", None)
    if injected is not None and max(injected.heads) >= heads:
        some = "not all" if min(injected.heads) < heads else "not"
        notes.append(
            f"the {injected.mechanism} heads {_numbers(injected.heads)} are {some} among the "
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
    top = _parts(saved.model.encoder)[1]
    if top is not None and layers == found.backbone_layers:
        notes.append(f"the {own} encoder on top of {name} has no attention to show")
    return names, notes


@torch.no_grad()
def parser_view_data(
    parser: Parser,
    sentences: Sequence[str],
    where: str,
    title: str,
    total: int | None = None,
    max_heads: int = MAX_HEADS,
) -> dict[str, Any]:
    """A parser's page for tokenized ``sentences`` (words split on spaces): each predicted
    tree with its dependency arcs, and what the label attention layer's heads look at: each
    head's attention over the sentence and, where the layer's output keeps the heads apart
    (concatenated heads, no feed-forward layer after it), each head's contribution to each
    predicted constituent (Mrini et al., Fig. 6; ``analysis.label_heads``)."""
    if not sentences:
        raise ValueError(f"{where}: no sentences to show")
    top = parser.model.top
    if not isinstance(top, LabelAttention):
        raise ValueError(f"{title}: the parser has no label attention layer to show")
    n_heads = top.n_heads
    heads = min(n_heads, max_heads)
    head_names = [f"head {h + 1}" for h in range(heads)]
    parses = parser.parse(list(sentences), tokenized=True, where=where)
    seen: list[torch.Tensor] = []
    hook = top.register_forward_hook(lambda m, inputs, _out: seen.append(m.head_weights(*inputs)))
    shown = []
    try:
        for parse in parses:
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
                spans = label_head_contributions(parser, " ".join(parse.words), tokenized=True)
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
    about = {"title": title, "source": where, "heads": heads, "notes": notes}
    return _page_data(about, "label", "parse", shown)


def view_page(
    checkpoint: str | Path,
    lines: Sequence[str] | None = None,
    where: str = "<input>",
    split: str = "test",
    max_sentences: int = MAX_SENTENCES,
    max_heads: int = MAX_HEADS,
    device: str = "cpu",
    max_bytes: int = MAX_BYTES,
) -> str:
    """The page's HTML for a checkpoint and input ``lines`` (one sentence or bracketed tree
    a line, as ``treeattn predict`` reads them), or the sentences of ``split`` when no lines
    are given; the first ``max_sentences`` of them."""
    saved = load_trained(checkpoint, device)
    if isinstance(saved.task, ParseTask):
        parser = Parser.load(checkpoint, device)
        if lines is None:
            examples, where = saved.read(split)
            words = [example.words for example in examples]
        else:  # raw text, tokenized as the parser tokenizes it
            words = parser.words(list(lines[:max_sentences]), False, where)
        shown = [" ".join(sentence) for sentence in words[:max_sentences]]
        total = len(words) if lines is None else len(lines)
        title = str(checkpoint)
        return render_page(parser_view_data(parser, shown, where, title, total, max_heads))
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
    data = view_data(saved, shown, where, str(checkpoint), total, max_heads, max_bytes)
    return render_page(data)
