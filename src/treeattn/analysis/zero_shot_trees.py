"""Trees from a pretrained model with no training: a syntactic distance between each pair of
adjacent words, per layer, split top-down at the largest distance (Shen et al. 2018,
``trees.distance.tree_from_distances``).

Three distances, each read from one layer:

* ``hidden``: between adjacent words' hidden states (L2, or cosine distance 1 - cos), each
  word the mean of its pieces' states; layer 0 is the embeddings.
* ``attention``: between adjacent words' attention distributions over the pieces the model
  reads (Jensen-Shannon distance, base 2, or Hellinger distance), each word's row the mean
  of its pieces' rows, the distance taken per head and averaged over the heads (Kim et al.
  2020, "Are pre-trained language models aware of phrases?").
* ``perturbed``: perturbed masking (Wu et al., ACL 2020), for models with a mask token.
  The impact of word j on word i is the L2 distance between i's state with i masked and
  with i and j masked (every piece of a masked word replaced by the mask token); high
  impact joins words, so the distance between words k and k+1 is minus the mean of their
  impacts on each other. That reads only the matrix's two off-diagonals, so only the
  copies they need are run (2n - 1 of them, not n^2); ``impact_matrix`` gives the whole.

The model reads each sentence as raw text, punctuation included (``models.pieces``); the
distances are taken between the words the tree is built over (``kept``: for the PTB sample
its words without punctuation, as unsupervised parsing is scored), so two words a comma
separates are adjacent.

>>> model = ZeroShotModel.load("minilm")  # doctest: +SKIP
>>> found = model.distances([["The", "cat", "sat", "."]], [[0, 1, 2]], ["hidden"])  # doctest: +SKIP
>>> found["hidden"][0].shape  # (layers 0..6, gaps)  # doctest: +SKIP
(7, 2)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from treeattn.analysis.zero_shot_names import METHODS
from treeattn.data.batching import bucket_batches
from treeattn.models.backbone import Backbone, load_backbone
from treeattn.models.pieces import PieceBatch
from treeattn.models.transformers_encoder import TransformersEncoder
from treeattn.trees import Tree
from treeattn.trees.distance import tree_from_distances


# ---------------------------------------------------------------------------- distances
def l2_distance(a: Tensor, b: Tensor) -> Tensor:
    """(..., d), (..., d) -> (...)."""
    return (a - b).norm(dim=-1)


def cosine_distance(a: Tensor, b: Tensor) -> Tensor:
    """1 - cos(a, b): (..., d), (..., d) -> (...)."""
    return 1.0 - torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-12)


def jensen_shannon_distance(p: Tensor, q: Tensor) -> Tensor:
    """sqrt(JS(p, q)) in base 2, in [0, 1], of distributions over the last axis."""
    middle = (p + q) / 2

    def kl_to_middle(x: Tensor) -> Tensor:
        # xlogy: a zero probability adds nothing (0 log 0 = 0).
        return (torch.xlogy(x, x) - torch.xlogy(x, middle)).sum(-1)

    divergence = (kl_to_middle(p) + kl_to_middle(q)) / (2 * np.log(2))
    return divergence.clamp(min=0).sqrt()


def hellinger_distance(p: Tensor, q: Tensor) -> Tensor:
    """sqrt(1 - sum sqrt(p q)), in [0, 1], of distributions over the last axis."""
    overlap = (p * q).clamp(min=0).sqrt().sum(-1)
    return (1.0 - overlap).clamp(min=0).sqrt()


HIDDEN_DISTANCES: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "l2": l2_distance,
    "cosine": cosine_distance,
}
ATTENTION_DISTANCES: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "js": jensen_shannon_distance,
    "hellinger": hellinger_distance,
}


def adjacent_hidden_distances(vectors: Tensor, kind: str = "l2") -> Tensor:
    """Word vectors (..., n, d) -> distances (..., n-1) between words k and k+1."""
    return HIDDEN_DISTANCES[kind](vectors[..., :-1, :], vectors[..., 1:, :])


def adjacent_attention_distances(rows: Tensor, kind: str = "js") -> Tensor:
    """Attention rows (..., H, n, k) (word n's distribution over k keys, per head) ->
    distances (..., n-1) between words k and k+1, averaged over the heads."""
    return ATTENTION_DISTANCES[kind](rows[..., :-1, :], rows[..., 1:, :]).mean(-2)


def impact_distances(impacts: Tensor) -> Tensor:
    """(..., 2, n-1): the impacts of word k+1 on word k (row 0) and of k on k+1 (row 1)
    -> distances (..., n-1): high impact either way joins the words, so a gap's distance
    is the sentence's largest mean impact less its own (0 or more; the split reads only
    their order)."""
    joined = impacts.mean(-2)
    if joined.shape[-1] == 0:
        return joined
    return joined.max(-1, keepdim=True).values - joined


def right_skewed(distances: np.ndarray, bias: float) -> np.ndarray:
    """Kim et al. (2020)'s right-skewness bias: distances (layers, m-1) between m words,
    gap k (from 0) raised by ``bias`` x the layer's mean distance x (1 - k / (m-1)), so
    that earlier gaps split first and trees lean right, as English does; 0: none."""
    gaps = distances.shape[-1]
    if not bias or not gaps:
        return distances
    slope = 1.0 - np.arange(gaps) / gaps
    return distances + bias * distances.mean(-1, keepdims=True) * slope


def layer_trees(words: Sequence[str], distances: np.ndarray, bias: float = 0.0) -> list[Tree]:
    """One binary tree per layer: ``distances`` (layers, n-1) split top-down, after the
    right-skewness ``bias`` (``right_skewed``) where one is given."""
    return [tree_from_distances(words, row.tolist()) for row in right_skewed(distances, bias)]


# ---------------------------------------------------------------------------- the model
def mask_token_id(tokenizer) -> int | None:
    """The id of the tokenizer's special mask token (``[MASK]``, ``<mask>``), or None."""
    for token_id, token in tokenizer.get_added_tokens_decoder().items():
        if token.special and token.content.strip("[]<>").lower() == "mask":
            return int(token_id)
    return None


def _rows_of(batch: PieceBatch, rows: Tensor) -> PieceBatch:
    """The batch's rows ``rows`` (an index tensor), repeats allowed."""
    return PieceBatch(
        batch.piece_ids[rows],
        batch.pad_mask[rows],
        batch.word_of_piece[rows],
        batch.first_piece[rows],
        batch.word_pad_mask[rows],
    )


@dataclass
class ZeroShotModel:
    """A pretrained encoder or decoder read for trees: its words' hidden states, attention
    rows and perturbed-masking impacts, every layer at once, with no training."""

    backbone: Backbone
    name: str
    max_tokens: int = 4096  # pieces per batch (copies included)

    @classmethod
    def load(cls, source: str | os.PathLike[str], max_tokens: int = 4096) -> ZeroShotModel:
        """``source`` as ``load_backbone`` takes it: ``minilm``, ``smollm2-135m`` or a
        local ``transformers`` folder; nothing is fetched."""
        backbone = load_backbone(source, pooling="mean", tune="none")
        return cls(backbone, str(source), max_tokens)

    def __post_init__(self) -> None:
        self.backbone.eval()
        encoder = self.backbone.encoder
        if isinstance(encoder, TransformersEncoder):
            # Only the eager implementation returns attention probabilities.
            encoder.model.set_attn_implementation("eager")

    @property
    def n_layers(self) -> int:
        return len(self.backbone.encoder.layers)

    @property
    def mask_id(self) -> int | None:
        return mask_token_id(self.backbone.splitter.tokenizer)

    def methods(self) -> list[str]:
        """The methods this model allows: perturbed masking needs a mask token."""
        return [m for m in METHODS if m != "perturbed" or self.mask_id is not None]

    def layers(self, method: str) -> list[int]:
        """The layers a method reads: hidden states from the embeddings (0) up, attention
        and impacts inside layers 1..L (impacts at the embeddings are all zero)."""
        return list(range(0 if method == "hidden" else 1, self.n_layers + 1))

    @torch.no_grad()
    def _states(self, batch: PieceBatch, attention: bool) -> tuple[list[Tensor], list[Tensor]]:
        """Every hidden state (B, p, d), and with ``attention`` every layer's probabilities
        (B, H, p, p), bottom first."""
        encoder = self.backbone.encoder
        if isinstance(encoder, TransformersEncoder):
            out = encoder.model(
                input_ids=batch.piece_ids,
                attention_mask=(~batch.pad_mask).long(),
                output_hidden_states=True,
                output_attentions=attention,
                use_cache=False,
            )
            return list(out.hidden_states), list(out.attentions) if attention else []
        states = encoder(batch.piece_ids, batch.pad_mask)
        if not attention:
            return states, []
        allowed = ~batch.pad_mask[:, None, None, :]
        probs = [
            layer.attention_weights(states[i], allowed) for i, layer in enumerate(encoder.layers)
        ]
        return states, probs

    def _pool(self, states: Tensor, batch: PieceBatch) -> Tensor:
        """Piece values (B, p, ...) -> word values (B, n, ...), each the mean of its pieces."""
        flat = states.reshape(*states.shape[:2], -1)
        return self.backbone.pool(flat, batch).reshape(
            states.shape[0], batch.first_piece.shape[1], *states.shape[2:]
        )

    def distances(
        self,
        sentences: Sequence[Sequence[str]],
        kept: Sequence[Sequence[int]],
        methods: Sequence[str],
        hidden_distance: str = "l2",
        attention_distance: str = "js",
    ) -> dict[str, list[np.ndarray]]:
        """For each method, each sentence's distances (layers, len(kept) - 1) between its
        adjacent kept words (indices into its words, increasing); the model reads every
        word."""
        found: dict[str, list[np.ndarray | None]] = {m: [None] * len(sentences) for m in methods}
        reads = [m for m in methods if m != "perturbed"]
        if reads:
            counts = self.backbone.splitter.counts(sentences)
            for indices in bucket_batches(counts, self.max_tokens, False):
                batch = self.backbone.pieces([sentences[i] for i in indices])
                states, probs = self._states(batch, "attention" in reads)
                if "hidden" in reads:
                    words = torch.stack([self._pool(s, batch) for s in states])  # (L+1, B, n, d)
                if "attention" in reads:
                    # (B, H, q, k) -> word rows (B, n, H, k) -> (L, B, H, n, k)
                    rows = torch.stack([self._pool(a.transpose(1, 2), batch) for a in probs])
                    rows = rows.permute(0, 1, 3, 2, 4)
                for row, i in enumerate(indices):
                    chosen = torch.tensor(kept[i], dtype=torch.long)
                    if "hidden" in reads:
                        vectors = words[:, row, chosen]
                        gaps = adjacent_hidden_distances(vectors, hidden_distance)
                        found["hidden"][i] = gaps.float().numpy()
                    if "attention" in reads:
                        chosen_rows = rows[:, row][:, :, chosen]
                        gaps = adjacent_attention_distances(chosen_rows, attention_distance)
                        found["attention"][i] = gaps.float().numpy()
        if "perturbed" in methods:
            for i, words in enumerate(sentences):
                impacts = self.adjacent_impacts(words, kept[i])[1:]  # layer 0: all zero
                found["perturbed"][i] = impact_distances(impacts).float().numpy()
        return {m: [d for d in values if d is not None] for m, values in found.items()}

    # -- perturbed masking ---------------------------------------------------------------

    @torch.no_grad()
    def impacts(self, words: Sequence[str], pairs: Tensor) -> Tensor:
        """Perturbed masking: (m, 2) pairs (i, j) of word indices -> impacts (L+1, m) of j
        on i at every hidden state (L2 distance between i's state with i masked and with
        i and j masked; 0 where i == j). Each masked copy of the sentence is one row of a
        batch, as many rows at once as ``max_tokens`` allows."""
        mask_id = self.mask_id
        if mask_id is None:
            raise ValueError(f"{self.name}: no mask token; perturbed masking needs a masked LM")
        sentence = self.backbone.pieces([words])
        targets, others = pairs[:, 0].contiguous(), pairs[:, 1].contiguous()
        alone = torch.unique(targets)
        # Copy c masks word first[c] and word second[c]: one per target alone, then pairs.
        first = torch.cat([alone, targets])
        second = torch.cat([alone, others])
        owner = sentence.word_of_piece[0]
        masked = (owner[None] == first[:, None]) | (owner[None] == second[:, None])
        ids = torch.where(masked, mask_id, sentence.piece_ids[0][None])
        per_chunk = max(1, self.max_tokens // ids.shape[1])
        states = []  # (L+1, copies, d): each copy's state of its word first[c]
        for start in range(0, len(ids), per_chunk):
            rows = torch.zeros(len(ids[start : start + per_chunk]), dtype=torch.long)
            batch = _rows_of(sentence, rows)
            batch.piece_ids = ids[start : start + per_chunk]
            hidden, _ = self._states(batch, attention=False)
            target = first[start : start + per_chunk]
            picked = [self._pool(h, batch)[torch.arange(len(target)), target] for h in hidden]
            states.append(torch.stack(picked))
        states = torch.cat(states, dim=1)
        base = states[:, : len(alone)][:, torch.searchsorted(alone, targets)]
        return l2_distance(base, states[:, len(alone) :])

    def impact_matrix(self, words: Sequence[str]) -> Tensor:
        """(L+1, n, n): the impact of word j on word i at every hidden state."""
        n = len(words)
        grid = torch.cartesian_prod(torch.arange(n), torch.arange(n))
        return self.impacts(words, grid).reshape(-1, n, n)

    def adjacent_impacts(self, words: Sequence[str], kept: Sequence[int]) -> Tensor:
        """(L+1, 2, m-1) for the m kept words: the impact of kept word k+1 on k (row 0)
        and of k on k+1 (row 1); 2m - 1 masked copies."""
        chosen = torch.tensor(kept, dtype=torch.long)
        if len(chosen) < 2:
            return torch.zeros(self.n_layers + 1, 2, 0)
        left, right = chosen[:-1], chosen[1:]
        pairs = torch.cat([torch.stack([left, right], 1), torch.stack([right, left], 1)])
        return self.impacts(words, pairs).reshape(self.n_layers + 1, 2, -1)


def is_pretrained_source(source: str) -> bool:
    """Whether ``source`` names a pretrained model (``minilm``, a packaged LM's name, a
    local folder) rather than a trained checkpoint file."""
    from treeattn.models.packaged_lm import is_packaged_lm

    return source == "minilm" or is_packaged_lm(source) or Path(source).is_dir()
