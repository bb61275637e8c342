"""Shared test helpers."""

from __future__ import annotations

from typing import Any

from treeattn.engine.config import Config
from treeattn.engine.trainer import train as train_task
from treeattn.tasks import make_task


def train(cfg: Config, **kwargs: Any) -> dict[str, Any]:
    """Train the task ``cfg`` names (``treeattn.engine.trainer.train`` takes a task)."""
    return train_task(make_task(cfg), **kwargs)


def tiny_transformers_config(family: str, n_layers: int = 2, vocab: int = 40) -> Any:
    """A random ``transformers`` config of ``family`` with ``n_layers`` layers (in each
    stack of an encoder-decoder) of four query heads of size 4; two key and value heads
    for the grouped-query decoders, and a sliding window of 3 for Mistral."""
    import transformers

    sizes = {"vocab_size": vocab, "max_position_embeddings": 32}
    layers = {"hidden_size": 16, "num_hidden_layers": n_layers, "num_attention_heads": 4}
    decoder = {**layers, **sizes, "intermediate_size": 32, "num_key_value_heads": 2}
    configs = {
        "bert": lambda: transformers.BertConfig(**layers, **sizes, intermediate_size=32),
        "roberta": lambda: transformers.RobertaConfig(**layers, **sizes, intermediate_size=32),
        "electra": lambda: transformers.ElectraConfig(
            **layers, **sizes, intermediate_size=32, embedding_size=16
        ),
        "distilbert": lambda: transformers.DistilBertConfig(
            vocab_size=vocab,
            dim=16,
            n_layers=n_layers,
            n_heads=4,
            hidden_dim=32,
            max_position_embeddings=32,
        ),
        "gpt2": lambda: transformers.GPT2Config(
            vocab_size=vocab, n_embd=16, n_layer=n_layers, n_head=4, n_positions=32
        ),
        "llama": lambda: transformers.LlamaConfig(**decoder),
        "qwen2": lambda: transformers.Qwen2Config(**decoder),
        "mistral": lambda: transformers.MistralConfig(**decoder, sliding_window=3),
        "bart": lambda: transformers.BartConfig(
            **sizes,
            d_model=16,
            encoder_layers=n_layers,
            decoder_layers=n_layers,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=32,
            decoder_ffn_dim=32,
        ),
        "t5": lambda: transformers.T5Config(
            vocab_size=vocab, d_model=16, d_kv=4, d_ff=32, num_layers=n_layers, num_heads=4
        ),
    }
    return configs[family]()
