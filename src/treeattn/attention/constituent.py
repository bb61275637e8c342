"""Constituent attention: the Tree Transformer (Wang, Lee & Chen, EMNLP 2019).

Every layer scores how strongly each pair of neighbouring words belongs to one constituent
and multiplies the attention probabilities by a *constituent prior* built from those
scores, so a word attends mostly inside the constituents it shares with others:

- Neighbouring attention: word i's query meets the keys of words i+1 and i-1,
  ``s[i, i+1] = q_i . k_{i+1} / (d / 2)``; a softmax over the two neighbours only gives
  ``p[i, i+1]`` and ``p[i, i-1]``, and the link between i and i+1 is
  ``a_hat_i = sqrt(p[i, i+1] p[i+1, i])``: high only when both words choose each other.
- Hierarchical constraint: ``a^l = a^(l-1) + (1 - a^(l-1)) a_hat^l`` with ``a^(-1) = 0``, so
  links only grow with depth and constituents only merge.
- Constituent prior: ``C[i, j] = prod_{k=i}^{j-1} a_k`` for i < j, symmetric, 1 on the
  diagonal (the empty product); attention probabilities become
  ``E = C * softmax(Q K^T / sqrt(d_k))``, not renormalised, as in the paper.

The prior is computed in O(n^2) per sentence from one cumulative sum of log links (in
float64, so that long sentences keep their precision), where the original release took
two triangular matrix products, O(n^3). Links stay in [0, 1]; one at 0 (a forced break)
or 1 gives no NaN in values or gradients.

The layer reads the previous layer's links from ``context["constituent_links"]`` and
writes its own there for the next one (the encoder gives every forward pass a fresh
context), so a stack of these layers is the Tree Transformer; a lone layer starts from
``a^(-1) = 0``.

Inside a pretrained encoder (``ConstituentInjection``) each chosen layer scores the links
between neighbouring words from the first piece of each word in its input states, with a
link module of its own (``LinkScorer``, the one new part; it trains with the model); links
only grow from one chosen layer to the next (the lowest starts from none), and the prior
multiplies the chosen heads' probabilities, not renormalised. A word's pieces share its
row and column, so they see each other (``C[w, w] = 1``).

Injected into a causal model's self-attention, the prior takes its causal form
(``causal_constituent_prior``): the encoder form's link between words i-1 and i reads word
i+1 (word i chooses between its neighbours i-1 and i+1), so row i of its prior would see
the next word. Row i of the causal prior is instead the encoder form's prior computed on
the prefix of words 0..i, where word i is the last: every link is the paper's but the
prefix's last, in which word i has one neighbour and chooses it with probability 1.
Layers, the hierarchical constraint and the prior's product are unchanged; the encoder
form is untouched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from treeattn import plugins
from treeattn.attention.head_edit import HeadEdit
from treeattn.attention.heads import merge_heads, split_heads
from treeattn.attention.injection import SyntaxInjection, SyntaxInputs, word_values, words_to_pieces
from treeattn.attention.inspection import Captures, MechanismView, Panel, SentenceView
from treeattn.attention.registry import INDUCED_TREES, Analysis, Capabilities, Mechanism
from treeattn.trees import Tree
from treeattn.trees.induction import trees_from_links

LINKS = "constituent_links"  # the context key that carries a^(l-1) to layer l
# Links are clamped here before their log, so a link at 0 gives a finite log and a zero
# gradient instead of -inf and NaN; the prior across it is exp(-69), nothing.
SMALLEST_LINK = 1e-30


def neighbour_links(query: torch.Tensor, key: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """``a_hat`` (B, n-1): the link between words i and i+1 from queries and keys (B, n, d).

    Word i's softmax runs over its real neighbours only: the first word and the last real
    word have one, so their one probability is 1. Links past a sentence's end are 0.
    """
    if query.shape[1] < 2:
        return query.new_zeros(query.shape[0], 0)
    log_p_right, log_p_left, link_real = _neighbour_choices(query, key, lengths)
    log_link = 0.5 * (log_p_right[:, :-1] + log_p_left[:, 1:])
    return torch.where(link_real, log_link.exp(), 0.0)


def closing_links(query: torch.Tensor, key: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(B, n-1): the link between words i and i+1 as ``neighbour_links`` gives it for the
    prefix of words 0..i+1, where word i+1 is the last and chooses its one neighbour with
    probability 1: ``sqrt(p[i, i+1])``. It reads words i-1, i and i+1 only."""
    if query.shape[1] < 2:
        return query.new_zeros(query.shape[0], 0)
    log_p_right, _, link_real = _neighbour_choices(query, key, lengths)
    return torch.where(link_real, (0.5 * log_p_right[:, :-1]).exp(), 0.0)


def _neighbour_choices(
    query: torch.Tensor, key: torch.Tensor, lengths: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each word's choice between its neighbours: ``log p[i, i+1]`` and ``log p[i, i-1]``
    (B, n), and which links join two real words (B, n-1)."""
    n, scale = query.shape[1], query.shape[2] / 2
    to_right = (query[:, :-1] * key[:, 1:]).sum(-1) / scale  # s[i, i+1], i = 0..n-2
    to_left = (query[:, 1:] * key[:, :-1]).sum(-1) / scale  # s[i+1, i], i = 0..n-2
    positions = torch.arange(n, device=query.device)
    real = positions[None, :] < lengths[:, None]  # (B, n)
    link_real = real[:, 1:]  # link i joins two real words (i + 1 < length)
    # Per word: its score toward the right and the left neighbour, -inf where there is none.
    right = F.pad(to_right.masked_fill(~link_real, -torch.inf), (0, 1), value=-torch.inf)
    left = F.pad(to_left.masked_fill(~link_real, -torch.inf), (1, 0), value=-torch.inf)
    # A word without a real neighbour (padding, a one-word sentence) takes 0 on both sides,
    # so that its (unused) softmax is defined and no NaN reaches a gradient.
    alone = (right == -torch.inf) & (left == -torch.inf)
    right, left = right.masked_fill(alone, 0.0), left.masked_fill(alone, 0.0)
    total = torch.logaddexp(right, left)
    return right - total, left - total, link_real


def hierarchical_links(previous: torch.Tensor | None, new: torch.Tensor) -> torch.Tensor:
    """``a^l = a^(l-1) + (1 - a^(l-1)) a_hat^l``; ``previous`` None is ``a^(-1) = 0``."""
    if previous is None:
        return new
    return previous + (1 - previous) * new


def constituent_prior(links: torch.Tensor, diagonal: float = 1.0) -> torch.Tensor:
    """The prior C (B, n, n) from links (B, n-1): ``C[i, j] = prod_{k=i}^{j-1} a_k``, and
    ``diagonal`` on the diagonal (the paper's empty product is 1).

    With ``S_j = sum_{k<j} log a_k``, ``log C[i, j] = S_j - S_i`` for i < j: one cumulative
    sum and one difference per pair, O(n^2). The upper and lower triangles are chosen by
    position (not by an absolute value, whose derivative is 0 where links are exactly 1).
    """
    log_links = links.to(torch.float64).clamp(min=SMALLEST_LINK).log()
    prefix = F.pad(log_links.cumsum(-1), (1, 0))  # (B, n): S_0 = 0 .. S_{n-1}
    difference = prefix[:, None, :] - prefix[:, :, None]  # [i, j] = S_j - S_i
    n = prefix.shape[-1]
    upper = torch.ones(n, n, dtype=torch.bool, device=links.device).triu()
    log_prior = torch.where(upper, difference, difference.mT)
    prior = log_prior.exp().to(links.dtype)
    if diagonal == 1.0:
        return prior
    eye = torch.eye(n, dtype=torch.bool, device=links.device)
    return prior.masked_fill(eye, diagonal)


def causal_constituent_prior(links: torch.Tensor, closing: torch.Tensor) -> torch.Tensor:
    """The causal prior C (B, n, n): row i is the last row of ``constituent_prior`` of the
    prefix of words 0..i, so it reads no word after i; 0 above the diagonal.

    In that prefix every link but the last is the sentence's own (``links``, (B, n-1):
    link k reads words up to k+2 <= i), and the last, between words i-1 and i, is the
    prefix's closing link (``closing`` (B, n-1), from ``closing_links``). So for j < i,
    ``C[i, j] = prod_{k=j}^{i-2} links_k * closing_{i-1}``: with ``S_m = sum_{k<m} log
    links_k``, ``log C[i, j] = S_{i-1} - S_j + log closing_{i-1}``, O(n^2) as the encoder
    form. Row i of the encoder form differs only in reading link i (word i+1) onwards.
    """
    log_links = links.to(torch.float64).clamp(min=SMALLEST_LINK).log()
    log_closing = closing.to(torch.float64).clamp(min=SMALLEST_LINK).log()
    prefix = F.pad(log_links.cumsum(-1), (1, 0))  # (B, n): S_0 = 0 .. S_{n-1}
    # Row i's own part, S_{i-1} + log closing_{i-1}; row 0 has no link and only its diagonal.
    rows = F.pad(prefix[:, :-1] + log_closing, (1, 0))  # (B, n)
    n = prefix.shape[-1]
    below = torch.ones(n, n, dtype=torch.bool, device=links.device).tril(-1)
    # [i, j] = S_{i-1} + log c_{i-1} - S_j below the diagonal; shut above it before the exp,
    # where the difference may overflow (and its gradient, times 0, be NaN).
    log_prior = (rows[:, :, None] - prefix[:, None, :]).masked_fill(~below, -torch.inf)
    prior = log_prior.exp()
    eye = torch.eye(n, dtype=torch.bool, device=links.device)
    return prior.masked_fill(eye, 1.0).to(links.dtype)


class LinkScorer(nn.Module):
    """The Tree Transformer's neighbouring attention for one layer: its own query and key
    maps (d to d) of the word states, giving the links between neighbouring words."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.link_query = nn.Linear(d_model, d_model)
        self.link_key = nn.Linear(d_model, d_model)

    def forward(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """words (B, n, d), lengths (B,) -> the new links ``a_hat`` (B, n-1)."""
        return neighbour_links(self.link_query(words), self.link_key(words), lengths)

    def prefix_links(
        self, words: torch.Tensor, lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The new links ``a_hat`` and the closing links (``closing_links``), (B, n-1) each,
        for the causal prior."""
        query, key = self.link_query(words), self.link_key(words)
        return neighbour_links(query, key, lengths), closing_links(query, key, lengths)


class ConstituentInjection(SyntaxInjection):
    """The constituent prior in the chosen heads of a pretrained encoder (the module's
    docstring). After a pass, ``inputs.passing["links"]`` (B, n-1) holds the highest chosen
    layer's links: ``tree_from_distances(words, 1 - links)`` splits each sentence at its
    weakest link first."""

    name = "constituent"
    causal_form = True

    def __init__(
        self, layers: Sequence[int], heads: Sequence[int], n_layers: int, n_heads: int, d_model: int
    ) -> None:
        super().__init__(layers, heads, n_layers, n_heads, d_model)
        self.links = nn.ModuleDict({str(layer): LinkScorer(d_model) for layer in self.layers})

    def edit(self, layer: int, states: torch.Tensor, inputs: SyntaxInputs) -> HeadEdit:
        index = inputs.first_piece[:, :, None].expand(-1, -1, states.shape[-1])
        words, scorer = states.gather(1, index), self.links[str(layer)]
        lengths, passing = inputs.word_lengths, inputs.passing
        if self.causal:  # each link, and each prefix's closing one, grow from layer to layer
            new, new_closing = scorer.prefix_links(words, lengths)
            passing["closing"] = hierarchical_links(passing.get("closing"), new_closing)
            passing["links"] = hierarchical_links(passing.get("links"), new)
            prior = causal_constituent_prior(passing["links"], passing["closing"])
        else:
            passing["links"] = hierarchical_links(passing.get("links"), scorer(words, lengths))
            prior = constituent_prior(passing["links"])
        pieces = words_to_pieces(prior, inputs.word_of_piece, inputs.pad_mask, 1.0, 0.0)
        return HeadEdit(self.heads, prior=pieces)

    def inspect(self, edit: HeadEdit, first_piece: torch.Tensor) -> dict[str, Any]:
        prior = word_values(edit.prior, first_piece)  # C, whose first off-diagonal is a
        # (the causal form's is below the diagonal: each prefix's closing link)
        return {"links": prior.diagonal(-1 if self.causal else 1, -2, -1), "prior": prior}


class ConstituentView(MechanismView):
    """The links and the prior of every layer (Wang et al.'s Fig. 3), and the tree read
    off the links where the sentence has none."""

    draws_own_tree = True

    def capture(
        self, module: nn.Module, x: torch.Tensor, pad_mask: torch.Tensor, context: dict
    ) -> dict[str, Any]:
        links = context[LINKS]  # this layer's, a^l
        return {"links": links, "prior": constituent_prior(links, module.prior_diagonal)}

    def panels(self, captured: Captures, sentence: SentenceView) -> list[Panel]:
        layers = [layer for layer, found in captured if "links" in found]
        if not layers:
            return []
        words = sentence.words
        gaps = [f"{a}|{b}" for a, b in zip(words, words[1:], strict=False)]
        # Inside a pretrained encoder the prior is in the chosen heads only.
        every = "the chosen heads'" if sentence.backbone_layers else "every head's"
        return [
            Panel(
                "link probabilities a (Tree Transformer)",
                [sentence.layer_names[layer] for layer in layers],
                gaps,
                torch.stack([found["links"][0] for _, found in captured]),
                "how strongly each pair of neighbours belongs to one constituent, per layer; "
                "links only grow upward",
            ),
            Panel(
                "constituent prior C",
                words,
                words,
                [found["prior"][0] for _, found in captured],
                f"multiplies {every} attention probabilities in this layer",
                layers=layers,
            ),
        ]

    def tree(self, captured: Captures, words: Sequence[str]) -> Tree | None:
        links = torch.stack([found["links"][0] for _, found in captured])
        # A start token read before the words has the first link, which the tree leaves out.
        links = links[:, links.shape[1] - (len(words) - 1) :]
        return trees_from_links([words], [links.cpu().numpy()])[0]


# Heat maps of every layer's prior for one sentence (``analysis.constituent_prior``).
PRIOR_MAPS = plugins.analyses.register(
    Analysis("constituent-prior", "heat maps of the constituent prior C per layer")
).name

CAPABILITIES = Capabilities(
    description="Tree Transformer: attention times a learned constituent prior",
    latent=True,
    injection=ConstituentInjection,
    view=ConstituentView(),
    analyses=frozenset({INDUCED_TREES, PRIOR_MAPS}),
)


class ConstituentAttention(nn.Module):
    """Multi-head self-attention times the Tree Transformer's constituent prior.

    The links come from their own query and key maps (``link_query``, ``link_key``, d to
    d, as the paper's neighbouring attention); the prior is shared by all heads. Option
    ``prior_diagonal``: C's diagonal, how much a word may attend to itself. The paper's
    is 1; the authors' release gives it about 3e-5 (the square root of its 1e-9 guard),
    so a word attends almost only to the others of its constituent.
    """

    def __init__(
        self, d_model: int, n_heads: int, dropout: float = 0.0, prior_diagonal: float = 1.0
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        if not 0.0 <= prior_diagonal <= 1.0:
            raise ValueError(f"prior_diagonal must lie in [0, 1], got {prior_diagonal}")
        self.prior_diagonal = float(prior_diagonal)
        self.n_heads = n_heads
        self.link_query = nn.Linear(d_model, d_model)
        self.link_key = nn.Linear(d_model, d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, pad_mask: torch.Tensor, context: dict | None = None
    ) -> torch.Tensor:
        """x: (B, n, d); pad_mask: (B, n), True at padding (at the end). Returns (B, n, d)
        and leaves this layer's links (B, n-1) in ``context["constituent_links"]``."""
        context = {} if context is None else context
        lengths = (~pad_mask).sum(1)
        new = neighbour_links(self.link_query(x), self.link_key(x), lengths)
        links = hierarchical_links(context.get(LINKS), new)
        context[LINKS] = links
        q, k, v = (split_heads(part, self.n_heads) for part in self.qkv(x).chunk(3, dim=-1))
        probs = self._prior_probs(q, k, pad_mask, links)
        return self.out(merge_heads(self.dropout(probs) @ v))

    def _prior_probs(
        self, q: torch.Tensor, k: torch.Tensor, pad_mask: torch.Tensor, links: torch.Tensor
    ) -> torch.Tensor:
        """E = C * softmax(Q K^T / sqrt(d_k)), (B, H, n, n), not renormalised."""
        prior = constituent_prior(links, self.prior_diagonal)  # (B, n, n)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(pad_mask[:, None, None, :], -torch.inf)
        return torch.softmax(scores, dim=-1) * prior[:, None]

    def attention_weights(
        self, x: torch.Tensor, pad_mask: torch.Tensor, context: dict
    ) -> torch.Tensor:
        """(B, H, n, n) the probabilities ``forward`` mixes values with (before dropout),
        for ``context`` as this layer's pass left it (holding its own links); for looking
        inside."""
        q, k, _ = (split_heads(part, self.n_heads) for part in self.qkv(x).chunk(3, dim=-1))
        return self._prior_probs(q, k, pad_mask, context[LINKS])


plugins.mechanisms.register(
    Mechanism("constituent", layer=ConstituentAttention, capabilities=CAPABILITIES)
)
