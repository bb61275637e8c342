"""The label attention parser's network (Mrini et al. 2020), sized for a CPU and trained
from scratch: word embeddings and a character LSTM (the content part) beside learned
position embeddings (the position part), a partitioned Transformer encoder (Kitaev & Klein
2018), the Label Attention Layer with its position-wise feed-forward layer, then three
heads over the same vectors: span scores for constituency (§3.2), biaffine arc and label
scores for dependency (§3.3) and a part-of-speech tagger (in place of tags as input).

A sentence of n words is read as T = n + 2 tokens: a start token, the words, a stop token.
Fencepost k (k = 0..n, the gap before word k + 1) joins the forward half of token k and the
backward half of token k + 1, split within each label head's part of the LAL output as the
release does; the span over words i+1..j is fencepost j minus fencepost i (§3.2:
s_ij = [h->_j - h->_{i-1}; h<-_{j+1} - h<-_i]). Fencepost 0 stands for the dependency root
and fencepost k for word k.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from treeattn.attention.label import LabelAttention
from treeattn.parsing.config import ParserConfig
from treeattn.parsing.partitioned import PartitionedAttention, PartitionedEncoderLayer

# The tag and relation classifiers have three outputs before those of the first name: the
# padding, unknown and mask entries of the vocabularies parsers were first trained with.
# They are never gold, so training pushes them down, and they are never predicted; they
# stay so that every trained parser loads and a seeded run trains as it always did.
UNNAMED_OUTPUTS = 3


@dataclass
class ParserOutput:
    span_scores: torch.Tensor | None  # (B, n, n, L): words i..j inclusive, label 0 empty
    tag_logits: torch.Tensor  # (B, n, UNNAMED_OUTPUTS + n_tags)
    arc_scores: torch.Tensor  # (B, n+1, n+1): [b, head, dependent], 0 = root
    rel_heads: torch.Tensor  # (B, n+1, d_rel): each position as a head
    rel_dependents: torch.Tensor  # (B, n+1, d_rel): each position as a dependent
    rel_scores: torch.Tensor | None = None  # (B, n, UNNAMED_OUTPUTS + n_rels), given heads


class CharLSTM(nn.Module):
    """Each word's characters (B, T, C) -> (B, T, d): the final states of a BiLSTM."""

    def __init__(self, n_chars: int, d_out: int, d_emb: int = 32) -> None:
        super().__init__()
        self.embed = nn.Embedding(n_chars, d_emb, padding_idx=0)
        self.lstm = nn.LSTM(d_emb, d_out // 2, batch_first=True, bidirectional=True)
        self.d_out = d_out

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        b, t, c = chars.shape
        flat = chars.view(b * t, c)
        lengths = (flat != 0).sum(1)
        real = lengths > 0
        out = flat.new_zeros(b * t, self.d_out, dtype=self.embed.weight.dtype)
        if real.any():
            packed = pack_padded_sequence(
                self.embed(flat[real]), lengths[real].cpu(), batch_first=True, enforce_sorted=False
            )
            _, (final, _) = self.lstm(packed)  # (2, words, d_out / 2)
            out[real] = torch.cat([final[0], final[1]], -1)
        return out.view(b, t, self.d_out)


class Biaffine(nn.Module):
    """[x; 1]^T U_o [y; 1] with ``n_out`` matrices U_o (Dozat & Manning): over every pair
    (``forward``) or for given pairs (``paired``)."""

    def __init__(self, d_in: int, n_out: int = 1) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n_out, d_in + 1, d_in + 1))

    @staticmethod
    def _with_ones(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, x.new_ones(*x.shape[:-1], 1)], -1)

    def forward(self, heads: torch.Tensor, dependents: torch.Tensor) -> torch.Tensor:
        """(B, n, n) scores [b, h, m] of one output for every head h and dependent m."""
        x, y = self._with_ones(heads), self._with_ones(dependents)
        return torch.einsum("bhi,ij,bmj->bhm", x, self.weight[0], y)

    def paired(self, heads: torch.Tensor, dependents: torch.Tensor) -> torch.Tensor:
        """(B, n, n_out) scores of the pairs (heads[b, k], dependents[b, k])."""
        x, y = self._with_ones(heads), self._with_ones(dependents)
        return torch.einsum("bni,oij,bnj->bno", x, self.weight, y)


class LabelAttentionParser(nn.Module):
    """(words, chars, pad_mask) over T = n + 2 tokens -> ``ParserOutput``; with a pretrained
    backbone (``sizes.backbone``) the sentences' words too."""

    def __init__(
        self,
        sizes: ParserConfig,
        n_words: int,
        n_chars: int,
        n_tags: int,
        n_labels: int,
        n_rels: int,
        backbone_sha256: str | None = None,
    ) -> None:
        """``n_labels`` counts the chart's labels, the empty one included (1: no
        constituency); ``n_tags`` and ``n_rels`` the names of tags and relations.
        ``backbone_sha256``: the hash the backbone's weights must have (a parser file's)."""
        super().__init__()
        s = self.sizes = sizes
        parts = (s.d_content, s.d_position)
        d_model = sum(parts)
        self.word_embed = nn.Embedding(n_words, s.d_word, padding_idx=0) if s.d_word else None
        self.chars = CharLSTM(n_chars, s.d_char)
        d_backbone = 0
        self.backbone = None
        if s.backbone is not None:
            from treeattn.models.backbone import load_backbone

            options = s.backbone_options()
            options["sha256"] = backbone_sha256 or options["sha256"]
            self.backbone = load_backbone(s.backbone, **options)
            d_backbone = self.backbone.output_size
        # The content vector: Linear([word embedding; character LSTM; backbone vector]).
        self.content = nn.Linear(s.d_word + s.d_char + d_backbone, s.d_content)
        self.position = nn.Embedding(s.max_length + 2, s.d_position)
        self.embed_norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(s.dropout)
        self.layers = nn.ModuleList(
            PartitionedEncoderLayer(parts, s.n_heads, s.d_kv, s.d_ff, s.dropout)
            for _ in range(s.n_layers)
        )
        if s.label_attention:
            # One head per constituent label, or per relation for a dependency-only parser.
            heads = s.lal_heads or max(1, n_labels - 1 if n_labels > 1 else n_rels)
            self.top = LabelAttention(
                d_model,
                heads,
                s.lal_d_kv,
                s.lal_d_proj,
                query=s.lal_query,
                combine=s.lal_combine,
                residual_dropout=s.lal_residual_dropout,
                attention_dropout=s.dropout,
                d_position=s.d_position,
            )
            d_out = self.top.output_size
        else:  # the ablation: one more partitioned self-attention layer
            self.top = PartitionedAttention(parts, s.n_heads, s.d_kv, s.dropout)
            self.top_norm = nn.LayerNorm(d_model)
            d_out = d_model
        # Per-head halves for the concatenated LAL output; otherwise the vector's even and
        # odd features, so that both halves hold content and position (as benepar does).
        self.per_head = s.label_attention and s.lal_combine == "concat"
        self.feed_forward = None
        if s.lal_feed_forward:  # PFL: position-wise feed-forward, residual, LN
            self.feed_forward = nn.Sequential(
                nn.Linear(d_out, s.d_ff), nn.ReLU(), nn.Dropout(s.dropout), nn.Linear(s.d_ff, d_out)
            )
            self.ff_norm = nn.LayerNorm(d_out)
        self.constituency = n_labels > 1
        if self.constituency:
            self.label_hidden = nn.Linear(d_out, s.d_label_hidden)
            self.label_norm = nn.LayerNorm(s.d_label_hidden)
            self.label_out = nn.Linear(s.d_label_hidden, n_labels - 1)
        self.tagger = nn.Sequential(
            nn.Linear(d_out, s.d_tag_hidden),
            nn.LayerNorm(s.d_tag_hidden),
            nn.ReLU(),
            nn.Linear(s.d_tag_hidden, UNNAMED_OUTPUTS + n_tags),
        )
        self.arc_head, self.arc_dependent = nn.Linear(d_out, s.d_arc), nn.Linear(d_out, s.d_arc)
        self.arc = Biaffine(s.d_arc)
        self.rel_head, self.rel_dependent = nn.Linear(d_out, s.d_rel), nn.Linear(d_out, s.d_rel)
        self.rel = Biaffine(s.d_rel, UNNAMED_OUTPUTS + n_rels)

    def encode(
        self,
        words: torch.Tensor,
        chars: torch.Tensor,
        pad_mask: torch.Tensor,
        sentences: Sequence[Sequence[str]] | None = None,
    ) -> torch.Tensor:
        """(B, T, D) the top layer's vectors of every token; ``sentences`` (each sentence's
        words) are what the backbone reads, when there is one."""
        s = self.sizes
        if self.training and s.word_dropout:
            # Word dropout: a word's embedding is sometimes withheld (<unk>, id 1), so that
            # the model learns to read unknown words from their characters. The start and
            # stop tokens are never withheld.
            lengths = (~pad_mask).sum(1, keepdim=True)
            position = torch.arange(words.shape[1], device=words.device)
            is_word = (position > 0) & (position < lengths - 1)
            dropped = torch.rand(words.shape, device=words.device) < s.word_dropout
            words = words.masked_fill(dropped & is_word, 1)
        features = [self.chars(chars)]
        if self.word_embed is not None:
            features.insert(0, self.word_embed(words))
        if self.backbone is not None:
            features.append(self.backbone_vectors(sentences, words.shape[1]))
        content = self.content(torch.cat(features, -1))
        positions = torch.arange(words.shape[1], device=words.device)
        position = self.position(positions).expand(words.shape[0], -1, -1)
        x = self.dropout(self.embed_norm(torch.cat([content, position], -1)))
        for layer in self.layers:
            x = layer(x, pad_mask)
        if s.label_attention:
            x = self.top(x, pad_mask)
        else:
            x = self.top_norm(x + self.dropout(self.top(x, pad_mask)))
        if self.feed_forward is not None:
            x = self.ff_norm(x + self.dropout(self.feed_forward(x)))
        return x

    def batch_lengths(self, sentences: Sequence[Sequence[str]]) -> list[int]:
        """Each sentence's length where a batch pads the most work: its backbone's pieces
        (the backbone costs most of a pass), else its words with the start and stop tokens."""
        if self.backbone is None:
            return [len(words) + 2 for words in sentences]
        return self.backbone.splitter.counts(sentences)

    def backbone_vectors(
        self, sentences: Sequence[Sequence[str]] | None, width: int
    ) -> torch.Tensor:
        """(B, T, d) the backbone's vector of each word; the start and stop tokens and the
        padding get zero (the words sit at tokens 1..n, as in ``words``)."""
        if sentences is None:
            raise ValueError("a parser with a backbone reads the sentences' words too")
        vectors = self.backbone(sentences)  # (B, n, d), zero past each sentence's end
        return F.pad(vectors, (0, 0, 1, width - 1 - vectors.shape[1]))

    def fenceposts(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T - 1, D) fenceposts from the token vectors (B, T, D): the forward half of
        token k and the backward half of token k + 1."""
        b, t, d = x.shape
        if self.per_head:
            per_head = x.view(b, t, -1, self.sizes.lal_d_proj)
            half = self.sizes.lal_d_proj // 2
            forward, backward = per_head[..., :half].flatten(2), per_head[..., half:].flatten(2)
        else:
            forward, backward = x[..., 0::2], x[..., 1::2]
        return torch.cat([forward[:, :-1], backward[:, 1:]], -1)

    def forward(
        self,
        words: torch.Tensor,
        chars: torch.Tensor,
        pad_mask: torch.Tensor,
        heads: torch.Tensor | None = None,
        sentences: Sequence[Sequence[str]] | None = None,
    ) -> ParserOutput:
        """With ``heads`` (B, n) (gold heads, in training) the output holds the label scores
        of those arcs too; ``sentences`` as ``encode``'s."""
        x = self.encode(words, chars, pad_mask, sentences)
        posts = self.dropout(self.fenceposts(x))  # (B, n + 1, D)
        words_out = x[:, 1:-1]  # the words' own vectors, for tags
        lengths = (~pad_mask).sum(1) - 2
        out = ParserOutput(
            span_scores=self.span_scores(posts, lengths) if self.constituency else None,
            tag_logits=self.tagger(self.dropout(words_out)),
            arc_scores=self.arc(
                self.dropout(F.relu(self.arc_head(posts))),
                self.dropout(F.relu(self.arc_dependent(posts))),
            ),
            rel_heads=self.dropout(F.relu(self.rel_head(posts))),
            rel_dependents=self.dropout(F.relu(self.rel_dependent(posts))),
        )
        if heads is not None:
            out.rel_scores = self.rel_scores(out, heads)
        return out

    def span_scores(self, posts: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, n, n, L) label scores of every span from the fenceposts (B, n + 1, D), the
        empty label's fixed at 0: S = W2 ReLU(LN(W1 s + b1)) + b2 (§3.2). Only the cells
        of real spans (i <= j < length) are computed; the others hold 0."""
        # W1 is linear: W1 (p_j - p_i) = W1 p_j - W1 p_i, so it is applied to the n + 1
        # fenceposts, not to the (n + 1)^2 span vectors.
        hidden = F.linear(posts, self.label_hidden.weight)
        n = posts.shape[1] - 1
        position = torch.arange(n, device=posts.device)
        inside = position[None, :] < lengths[:, None]
        real = (position[:, None] <= position[None, :]) & inside[:, None, :]  # (B, n, n)
        b, i, j = real.nonzero(as_tuple=True)
        cells = hidden[b, j + 1] - hidden[b, i] + self.label_hidden.bias
        labels = self.label_out(F.relu(self.label_norm(cells)))  # (cells, L - 1)
        chart = labels.new_zeros(posts.shape[0], n, n, labels.shape[-1] + 1)
        return chart.index_put((b, i, j), F.pad(labels, (1, 0)))

    def rel_scores(self, out: ParserOutput, heads: torch.Tensor) -> torch.Tensor:
        """(B, n, UNNAMED_OUTPUTS + n_rels) label scores of each word's arc from ``heads``
        (B, n)."""
        chosen = out.rel_heads.gather(
            1, heads.clamp(min=0)[..., None].expand(-1, -1, out.rel_heads.shape[-1])
        )  # (B, n, d): each word's head
        return self.rel.paired(chosen, out.rel_dependents[:, 1:])


def output_ids(ids: torch.Tensor) -> torch.Tensor:
    """Tag or relation ids of their label set as the classifier's outputs (``IGNORE``,
    or any other negative id, kept)."""
    return torch.where(ids >= 0, ids + UNNAMED_OUTPUTS, ids)


def best_named(logits: torch.Tensor) -> torch.Tensor:
    """(...,) the label-set id of the best named output of tag or relation logits."""
    return logits[..., UNNAMED_OUTPUTS:].argmax(-1)
