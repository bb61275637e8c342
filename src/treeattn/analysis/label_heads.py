"""Which label attention heads make each predicted constituent (Mrini et al. 2020, §2 and
Fig. 6).

Without the position-wise feed-forward layer, the LAL output of a word is the
concatenation of one vector per head, so a span vector (fencepost j minus fencepost i) is
too: head h owns the forward half of its part and the backward half. The contribution of
head h to a span is, as in the authors' release, the sum of the entries of its two halves;
over the heads of one span the contributions are min-max scaled to [0, 1] and then passed
through a softmax, so each span's contributions are positive and sum to 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from treeattn.parsing import Parser
from treeattn.structs import CKY
from treeattn.structs.cky import tree_spans
from treeattn.viz.attention import plot_attention


@dataclass
class SpanContributions:
    label: str
    words: list[str]
    contributions: list[float]  # one per head, summing to 1


def head_contributions(span_vectors: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(..., H) contributions of the H heads to span vectors (..., D), D = H * d_proj laid out
    as [forward halves of every head; backward halves of every head]."""
    halves = span_vectors.view(*span_vectors.shape[:-1], 2, n_heads, -1)
    raw = halves.sum(-1).sum(-2)  # (..., H): each head's two halves summed
    low = raw.amin(-1, keepdim=True)
    spread = (raw.amax(-1, keepdim=True) - low).clamp(min=1e-12)
    return torch.softmax((raw - low) / spread, -1)


@torch.no_grad()
def label_head_contributions(parser: Parser, sentence: str | list[str]) -> list[SpanContributions]:
    """Each constituent the parser predicts for ``sentence``, with the contribution of every
    label attention head; the parser must have been trained without the position-wise
    feed-forward layer, with concatenated heads."""
    sizes = parser.model.sizes
    if not (sizes.label_attention and sizes.lal_combine == "concat"):
        raise ValueError("head contributions need a label attention layer with concatenated heads")
    if sizes.lal_feed_forward:
        raise ValueError(
            "head contributions need a parser trained without the position-wise feed-forward "
            "layer (model.lal_feed_forward=false), which mixes the heads' parts"
        )
    if not parser.constituency:
        raise ValueError("head contributions are for constituency parsers")
    words = parser.words([sentence])[0]

    batch = parser.encode([words]).batch([0])
    batch = batch.to(parser.device)
    model = parser.model
    vectors = model.encode(batch.words, batch.chars, batch.pad_mask, batch.sentences)
    posts = model.fenceposts(vectors)[0]
    lengths = batch.lengths
    scores = model.span_scores(posts[None], lengths)
    names = parser.vocab.labels.names
    found = []
    for label, start, end in tree_spans(CKY(scores, lengths).argmax, lengths)[0]:
        if not label:
            continue  # the empty label: no constituent
        share = head_contributions(posts[end] - posts[start], model.top.n_heads)
        found.append(SpanContributions(names[label], words[start:end], share.tolist()))
    return found


@dataclass(frozen=True)
class LabelHeads:
    """Every predicted constituent of one sentence with its heads' contributions."""

    sentence: str
    spans: list[SpanContributions]

    def format(self, top: int = 3) -> str:
        """A line per constituent naming its ``top`` strongest heads (from 1)."""
        lines = [f"{'constituent':<40} strongest heads (contribution)"]
        for span in self.spans:
            ranked = sorted(enumerate(span.contributions, 1), key=lambda x: -x[1])[:top]
            heads = "  ".join(f"{head}: {share:.3f}" for head, share in ranked)
            lines.append(f"{(span.label + ' ' + ' '.join(span.words))[:40]:<40} {heads}")
        return "\n".join(lines)

    def plot(self, out: str | Path) -> Path:
        """A heat map, constituents x heads, as a PNG or SVG file."""
        rows = [f"{span.label}: {' '.join(span.words)}"[:40] for span in self.spans]
        heads = [str(h) for h in range(1, len(self.spans[0].contributions) + 1)]
        matrix = [span.contributions for span in self.spans]
        title = f"label attention heads: {self.sentence}"
        title = title if len(title) <= 90 else title[:89] + "…"
        return plot_attention(
            matrix, rows, heads, out, title, axes=("label attention head", "constituent")
        )


def label_heads(parser: Parser, sentence: str | list[str]) -> LabelHeads:
    """``label_head_contributions``; a sentence with no predicted constituent is an error."""
    spans = label_head_contributions(parser, sentence)
    if not spans:
        raise ValueError("the parser predicts no constituent for this sentence")
    text = sentence if isinstance(sentence, str) else " ".join(sentence)
    return LabelHeads(text, spans)
