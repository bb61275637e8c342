"""The cost of syntax injected into a ``transformers`` model, per family: forward tokens
per second with ``distance`` in 4 heads of 2 layers against the plain model, in the same
run, float32 and bfloat16 (autocast).

Each family is a random model of MiniLM's size (6 layers, d = 384, 12 heads; the
grouped-query decoders with 4 key and value heads), built from its config (nothing is
fetched); a batch of 16 sentences of 48 pieces, one word a piece, right-branching trees.
The syntax is made once per batch (``injection.inputs``), outside the timed pass, as a
data pipeline makes it.

    OMP_NUM_THREADS=1 python -m benchmarks.injection --threads 1
"""

from __future__ import annotations

import argparse
import time

import torch

from benchmarks.common import (
    add_run_arguments,
    finish_run_arguments,
    fmt,
    interleaved_median_ms,
    machine_info,
    machine_line,
    markdown_table,
    start_device,
    write_results,
)
from treeattn.models.syntax_injection import inject_syntax
from treeattn.parsing.tree_source import right_branching

FAMILIES = ("bert", "roberta", "distilbert", "gpt2", "llama", "qwen2", "mistral")
PRECISIONS = ("float32", "bfloat16")


def family_config(family: str, hidden: int, layers: int, heads: int, vocab: int = 1000):
    """A config of ``family`` with these sizes (feed-forward 4 * hidden; decoders with a
    third of the heads for keys and values)."""
    import transformers

    ff, positions = 4 * hidden, 512
    encoder = {"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads}
    encoder |= {"intermediate_size": ff, "vocab_size": vocab, "max_position_embeddings": positions}
    decoder = {**encoder, "num_key_value_heads": max(1, heads // 3)}
    configs = {
        "bert": lambda: transformers.BertConfig(**encoder),
        "roberta": lambda: transformers.RobertaConfig(**encoder),
        "distilbert": lambda: transformers.DistilBertConfig(
            vocab_size=vocab, dim=hidden, n_layers=layers, n_heads=heads, hidden_dim=ff
        ),
        "gpt2": lambda: transformers.GPT2Config(
            vocab_size=vocab,
            n_embd=hidden,
            n_layer=layers,
            n_head=heads,
            n_positions=positions,
            bos_token_id=0,
            eos_token_id=0,
        ),
        "llama": lambda: transformers.LlamaConfig(**decoder),
        "qwen2": lambda: transformers.Qwen2Config(**decoder),
        "mistral": lambda: transformers.MistralConfig(**decoder, sliding_window=positions),
    }
    return configs[family]()


def _forward(model, ids, mask, precision: str, extra: dict):
    """One forward pass of ``model`` without gradients, in ``precision``."""
    on = precision == "bfloat16"

    def step():
        with torch.no_grad(), torch.autocast(ids.device.type, torch.bfloat16, enabled=on):
            return model(input_ids=ids, attention_mask=mask, **extra)

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(parser, "injection.json and .md", 1.0, "2 layers of d = 48, 4 sentences")
    args = finish_run_arguments(parser.parse_args())
    device = start_device(args)
    if device is None:
        return
    import transformers

    begin = time.perf_counter()
    hidden, layers, heads, batch, length = (48, 2, 6, 4, 16) if args.quick else (384, 6, 12, 16, 48)
    chosen = [layers - 2, layers - 1]
    torch.manual_seed(args.seed)
    ids = torch.randint(3, 1000, (batch, length), device=device)
    mask = torch.ones_like(ids)
    words = torch.arange(length, device=device).repeat(batch, 1)
    trees = [right_branching([f"w{i}" for i in range(length)])] * batch
    rows, found = [], {}
    for family in FAMILIES:
        config = family_config(family, hidden, layers, heads)
        model = transformers.AutoModel.from_config(config, attn_implementation="sdpa")
        plain = model.eval().to(device)
        injected = transformers.AutoModel.from_config(config, attn_implementation="sdpa")
        injected.load_state_dict(plain.state_dict())
        injected = injected.eval().to(device)
        injection = inject_syntax(injected, "distance", layers=chosen, heads=[0, 1, 2, 3])
        syntax = injection.inputs(trees, words, mask == 0)
        for precision in PRECISIONS:
            steps = {
                "plain": _forward(plain, ids, mask, precision, {}),
                "injected": _forward(injected, ids, mask, precision, {"syntax": syntax}),
            }
            times = interleaved_median_ms(steps, device, args.repeats, args.case_seconds, 1)
            ms = {name: value for name, (value, _) in times.items()}
            tokens = batch * length
            found[f"{family} {precision}"] = ms
            rows.append(
                [
                    family,
                    precision,
                    fmt(tokens / ms["plain"] * 1e3, 0),
                    fmt(tokens / ms["injected"] * 1e3, 0),
                    fmt(ms["injected"] / ms["plain"], 2),
                ]
            )
    headers = [
        "family",
        "precision",
        "plain tokens/s",
        "injected tokens/s",
        "time injected / plain",
    ]
    markdown = markdown_table(headers, rows)
    info = machine_info(device)
    print(f"{machine_line(info)}\n\n{markdown}")
    write_results(args, "injection", info, time.perf_counter() - begin, markdown, times=found)


if __name__ == "__main__":
    main()
