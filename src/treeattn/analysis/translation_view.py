"""What the page of ``treeattn view`` adds for a translation model: each source with the
model's own translation, the source as its encoder reads it (pieces, under their tree),
and the decoder's cross-attention over the source, per decoder layer, with the share on
phrase nodes where the encoder gives them (Nguyen et al., Table 4)."""

from __future__ import annotations

from dataclasses import replace

import torch

from treeattn.analysis.page_data import panel
from treeattn.tasks.sentences import LabeledSentence
from treeattn.tasks.trained import Trained
from treeattn.tasks.translate import Pair


def with_translations(saved: Trained, pairs: list[Pair], where: str) -> list[Pair]:
    """Each source with the model's own translation as its target, so that the decoder
    read with teacher forcing attends as it did when it translated."""
    found = saved.task.translations(saved.model, saved.encode(pairs, where), saved.device)
    return [replace(pair, target=text) for pair, text in zip(pairs, found, strict=True)]


def as_sentence(saved: Trained, example, encoded) -> LabeledSentence:
    """A translation source as the encoder reads it: its pieces, under its tree; any other
    example as it is."""
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


def add_cross_attention(data: dict, pieces: list[str], means, translation: str) -> None:
    """The translation and the decoder's cross-attention panels, into one sentence's data."""
    keys = data["nodes"] + data["words"]
    m = len(data["nodes"])
    data["translation"] = translation
    data["panels"].append(
        panel(
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
            panel(
                "decoder cross-attention on phrase nodes and on words",
                ["target pieces"],
                ["on nodes", "on words"],
                shares,
                "mean over heads and target pieces (Nguyen et al., Table 4)",
            )
        )
