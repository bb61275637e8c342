"""Liu & Lapata's (TACL 2018) two-level document model: words -> sentences -> document,
with a latent dependency tree over the words of each sentence and over the sentences."""

from __future__ import annotations

import torch
from torch import nn

from treeattn.models.classifier import masked_mean
from treeattn.models.encoder import EncoderLayer, TransformerEncoder, sinusoidal_positions


class StructuredDocumentClassifier(nn.Module):
    """Logits (B, classes) from documents of token ids (B, S, n): S sentences of n tokens.

    Id 0 is padding; a sentence of padding only is a padded sentence. Padding comes after
    the real tokens of a sentence and after the real sentences of a document. Each sentence
    is encoded by structured-attention layers and mean-pooled into a vector; the sentence
    vectors (plus sentence positions) go through structured-attention layers of their own,
    and their mean is classified. ``structure``: ``"nonprojective"`` or ``"projective"``.
    """

    def __init__(
        self,
        vocab_size: int,
        n_classes: int,
        d_model: int = 64,
        n_heads: int = 1,
        n_layers: int = 1,
        d_ff: int = 256,
        dropout: float = 0.1,
        structure: str = "nonprojective",
        max_length: int = 512,
        max_sentences: int = 256,
    ) -> None:
        super().__init__()
        options = {"structure": structure}
        self.d_model = d_model
        self.max_sentences = max_sentences
        self.words = TransformerEncoder(
            vocab_size,
            d_model,
            n_heads,
            n_layers,
            d_ff,
            dropout,
            attention="structured",
            max_length=max_length,
            attention_options=options,
        )
        self.register_buffer(
            "sentence_positions", sinusoidal_positions(max_sentences, d_model), persistent=False
        )
        self.sentences = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, dropout, "structured", **options)
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        b, s, n = tokens.shape
        if s > self.max_sentences:
            raise ValueError(f"document of {s} sentences; max_sentences={self.max_sentences}")
        word_pad = tokens == 0
        sentence_pad = word_pad.all(-1)  # (B, S)
        if sentence_pad.all(-1).any():
            raise ValueError("a document has no sentence with a real token")
        real_sentences = (~sentence_pad).sum(1, keepdim=True)
        if not torch.equal(sentence_pad, torch.arange(s, device=tokens.device) >= real_sentences):
            raise ValueError("a document has an empty sentence before a real one")
        real = ~sentence_pad.reshape(-1)
        # Only real sentences are encoded: a latent tree needs at least one word.
        states = self.words(tokens.reshape(b * s, n)[real], word_pad.reshape(b * s, n)[real])
        vectors = states.new_zeros(b * s, self.d_model)
        vectors[real] = masked_mean(states, word_pad.reshape(b * s, n)[real])
        x = vectors.view(b, s, self.d_model) + self.sentence_positions[:s]
        for layer in self.sentences:
            x = layer(x, sentence_pad, {})
        document = masked_mean(self.norm(x), sentence_pad)
        return self.head(self.dropout(document))
