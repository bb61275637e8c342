"""Syntax-guided local attention (Hou et al. 2022): the cost of the local gate.

Run from the repository root::

    python -m benchmarks.distance_attention            # n = 32, 128, 512
    python -m benchmarks.distance_attention --quick    # smoke run, a few seconds

Inputs: random binary trees over n words (seeded), their gap distances, a batch of B
sentences (B * n = 4096 tokens; at least one sentence).

- Gate construction: ``treeattn.attention.distance.local_allowed`` (vectorised: each
  token's range bounds by binary lifting over windowed gap maxima, then one comparison
  per query and key) against a literal walk, token by token, out to each side until a
  gap is too wide (a Python loop, as a reading of the paper would write it); both give
  the hard mask, which must agree exactly.
- Encoder step: forward + backward of a 2-layer encoder (d = 64, 4 heads, 2 of them local
  in both layers) with ``distance`` attention, hard and soft, against ``vanilla``, on the
  same tokens; time ratio to vanilla.

Times are medians with the cases called in turn each round (``common.interleaved_median_ms``).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence
from functools import partial

import torch

from benchmarks.common import (
    add_run_arguments,
    binary_tree,
    finish_run_arguments,
    interleaved_median_ms,
    machine_info,
    machine_line,
    markdown_table,
    start_device,
    write_results,
)
from treeattn.attention.distance import GAPS, local_allowed
from treeattn.models.encoder import TransformerEncoder
from treeattn.trees.distance import gap_distances

TOKENS = 4096
GATES = ("hard", "soft")


def walked_allowed(gaps: torch.Tensor) -> torch.Tensor:
    """The hard local mask (B, n, n), token by token in Python."""
    batch, n = gaps.shape[0], gaps.shape[1] + 1
    allowed = torch.zeros(batch, n, n, dtype=torch.bool)
    for b, row in enumerate(gaps.tolist()):
        for i in range(n):
            start = i
            while start > 0 and row[start - 1] <= row[i - 1]:
                start -= 1
            end = i + 1
            while end < n and row[end - 1] <= row[i]:
                end += 1
            allowed[b, i, start:end] = True
    return allowed


def encoder_step(encoder: TransformerEncoder, tokens, pad_mask, context) -> None:
    encoder.zero_grad(set_to_none=True)
    encoder(tokens, pad_mask, context).sum().backward()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.distance_attention",
        description="Distance attention: gate construction (vectorised against a Python "
        "walk) and encoder step time against vanilla attention.",
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 128, 512], help="words n")
    parser.add_argument("--batch", type=int, default=None, help="sentences (default 4096 / n)")
    add_run_arguments(parser, "distance_attention.{json,md}", 2.0, "n = 16, 32")
    args = parser.parse_args(argv)
    return finish_run_arguments(args, quick_sizes=[16, 32], quick_batch=args.batch)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    device = start_device(args)
    if device is None:
        return 2
    info = machine_info(device)
    print(f"machine: {machine_line(info)}; float32", flush=True)
    begin = time.perf_counter()
    rows = []
    for n in args.sizes:
        batch = args.batch or max(1, TOKENS // n)
        rng = random.Random(args.seed + n)
        trees = [binary_tree(n, "random", rng) for _ in range(batch)]
        gaps = torch.tensor([gap_distances([tree]) for tree in trees])
        started = time.perf_counter()
        walked = walked_allowed(gaps)
        walk_ms = 1000 * (time.perf_counter() - started)
        timed = interleaved_median_ms(
            {"ours": partial(local_allowed, gaps.to(device))},
            device,
            args.repeats,
            args.case_seconds,
        )
        agree = bool((local_allowed(gaps) == walked).all())

        torch.manual_seed(args.seed)
        tokens = torch.randint(3, 1000, (batch, n), device=device)
        pad_mask = torch.zeros_like(tokens, dtype=torch.bool)
        context = {GAPS: gaps.to(device)}
        steps = {}
        for name, options in [("vanilla", None)] + [
            (gate, {"local_heads": 2, "gate": gate}) for gate in GATES
        ]:
            attention = "vanilla" if options is None else "distance"
            encoder = TransformerEncoder(
                1000, attention=attention, attention_options=options, dropout=0.0
            ).to(device)
            steps[name] = partial(encoder_step, encoder, tokens, pad_mask, context)
        step_ms = interleaved_median_ms(steps, device, args.repeats, args.case_seconds)
        row = {
            "n": n,
            "batch": batch,
            "gate_ms": timed["ours"][0],
            "walk_ms": walk_ms,
            "gates_agree": agree,
            **{f"{name}_step_ms": step_ms[name][0] for name in steps},
        }
        rows.append(row)
        print(
            f"n={n:<4} B={batch:<4} gate {row['gate_ms']:8.2f} ms (walk {walk_ms:9.1f} ms, "
            f"agree {agree}) | step vanilla {row['vanilla_step_ms']:8.2f} hard "
            f"{row['hard_step_ms']:8.2f} soft {row['soft_step_ms']:8.2f} ms",
            flush=True,
        )
    elapsed = time.perf_counter() - begin
    table = markdown_table(
        [
            "n",
            "batch",
            "gate ms",
            "Python walk ms",
            "agree",
            "vanilla step ms",
            "hard step ms",
            "soft step ms",
            "hard / vanilla",
            "soft / vanilla",
        ],
        [
            [
                r["n"],
                r["batch"],
                f"{r['gate_ms']:.2f}",
                f"{r['walk_ms']:.1f}",
                "yes" if r["gates_agree"] else "NO",
                f"{r['vanilla_step_ms']:.2f}",
                f"{r['hard_step_ms']:.2f}",
                f"{r['soft_step_ms']:.2f}",
                f"{r['hard_step_ms'] / r['vanilla_step_ms']:.2f}",
                f"{r['soft_step_ms'] / r['vanilla_step_ms']:.2f}",
            ]
            for r in rows
        ],
    )
    print(table)
    write_results(args, "distance_attention", info, elapsed, table, rows=rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
