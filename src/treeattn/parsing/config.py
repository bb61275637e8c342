"""The parser's settings: the network's sizes, the loss weights and the dependency decoder.
The same dataclass is the ``model`` section of a ``task: parse`` config."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from treeattn.engine.config import build_section, check_positive
from treeattn.models.pretrained import BackboneSettings


@dataclass
class ParserConfig(BackboneSettings):
    """The parser's settings. ``backbone`` (``BackboneSettings``): a pretrained encoder read
    beside the words and characters, whose word vectors join the content part."""

    d_word: int = 100
    d_char: int = 64
    d_content: int = 128
    d_position: int = 128
    max_length: int = 300  # words of the longest sentence (position embeddings)
    n_layers: int = 3
    n_heads: int = 8
    d_kv: int = 32
    d_ff: int = 512
    dropout: float = 0.2
    word_dropout: float = 0.2
    label_attention: bool = True  # False: a plain partitioned self-attention layer instead
    lal_heads: int = 0  # 0: one per constituent label (else per dependency relation)
    lal_d_kv: int = 32
    lal_d_proj: int = 16
    lal_query: str = "vector"  # or matrix (W^Q, Table 2)
    lal_combine: str = "concat"  # or self (heads combined as self-attention, Table 2)
    lal_residual_dropout: float = 0.0  # RD (Table 1)
    lal_feed_forward: bool = True  # PFL (Table 1)
    d_label_hidden: int = 128
    d_tag_hidden: int = 128
    d_arc: int = 256
    d_rel: int = 32
    dependency_weight: float = 0.5  # L = L_c + w L_d (the release's 0.5)
    tag_weight: float = 1.0
    decoder: str = "eisner"  # or mst (Chu-Liu-Edmonds)

    @classmethod
    def from_dict(cls, raw: Any, where: str = "config") -> ParserConfig:
        """Settings from a mapping (the ``model`` section of the config ``where``); an
        unknown key, a value of the wrong type or one no parser can use is an error naming
        it."""
        config = build_section(cls, raw, where, "model")
        config.check(where)
        return config

    def check(self, where: str = "config") -> None:
        """Reject values no parser can use, naming the key (``model.*`` of ``where``)."""
        sizes = {
            f"model.{f.name}": getattr(self, f.name)
            for f in fields(self)
            if f.type == "int" and f.name != "lal_heads"
        }
        if self.backbone is not None:
            del sizes["model.d_word"]  # 0: no word embeddings beside the backbone
            if self.d_word < 0:
                raise ValueError(f"{where}: model.d_word must be 0 (none) or more")
        check_positive(sizes, where)
        for key, value, allowed in (
            ("lal_query", self.lal_query, ("vector", "matrix")),
            ("lal_combine", self.lal_combine, ("concat", "self")),
            ("decoder", self.decoder, ("eisner", "mst")),
        ):
            if value not in allowed:
                raise ValueError(f"{where}: model.{key}={value!r}; use {' or '.join(allowed)}")
        for key in ("d_kv", "lal_d_kv", "lal_d_proj", "d_ff"):
            if getattr(self, key) % 2:
                raise ValueError(f"{where}: model.{key} must be even (content and position halves)")
        self.check_backbone(where)
        if self.lal_heads < 0:
            raise ValueError(f"{where}: model.lal_heads must be 0 (one per label) or more")
