"""The constituent prior of a trained Tree Transformer (Wang et al. 2019, Fig. 3): for one
sentence, every layer's prior C over its words, drawn as heat maps side by side
(``treeattn constituent-prior``). The constituent mechanism declares this analysis
(``attention.constituent.PRIOR_MAPS``); the links it reads are those every tree-inducing
model gives (``analysis.induction``), the start token's left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from treeattn.analysis.induction import encode_words, layer_links, uses_start_token
from treeattn.analysis.loading import load_for
from treeattn.attention.constituent import PRIOR_MAPS, constituent_prior
from treeattn.tasks.trained import Trained
from treeattn.viz.attention import plot_priors


def load_prior_model(checkpoint: str | Path, device: str = "auto") -> Trained:
    """A trained model whose mechanism declares the prior's heat maps (``PRIOR_MAPS``)."""
    return load_for(checkpoint, PRIOR_MAPS, device)


def sentence_priors(saved: Trained, words: Sequence[str]) -> list[np.ndarray]:
    """Every layer's constituent prior (n, n) for one sentence, bottom layer first."""
    if len(words) > saved.cfg.model.max_length:
        raise ValueError(f"{len(words)} words, more than max_length={saved.cfg.model.max_length}")
    tokens = torch.tensor([encode_words(saved, words)], device=saved.device)
    pad_mask = torch.zeros_like(tokens, dtype=torch.bool)
    links = layer_links(saved.model, tokens, pad_mask)[:, 0]  # (L, n-1)
    if uses_start_token(saved):  # the prior among the words only
        links = links[:, 1:]
    return [constituent_prior(layer[None])[0].cpu().numpy() for layer in links]


def draw_priors(
    saved: Trained, sentence: str, out: str | Path, layers: Sequence[int] | None = None
) -> Path:
    """Heat maps of the constituent prior of ``layers`` (from 0; default: all) for one
    sentence, words separated by spaces, side by side in one image file."""
    words = sentence.split()
    if not words:
        raise ValueError("the sentence is empty")
    priors = sentence_priors(saved, words)
    layers = list(range(len(priors))) if layers is None else list(layers)
    for layer in layers:
        if not 0 <= layer < len(priors):
            raise ValueError(f"layer {layer} is not in 0..{len(priors) - 1}")
    titles = [f"layer {layer}" for layer in layers]
    return plot_priors([priors[layer] for layer in layers], words, titles, out)
