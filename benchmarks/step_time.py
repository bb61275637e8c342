"""Training-step time of three sentence encoders as sentence length grows: a vanilla
Transformer, the Tree Transformer with hierarchical accumulation (Nguyen et al. 2020) and a
binary Tree-LSTM (Tai et al. 2015).

Run from the repository root::

    python -m benchmarks.step_time            # full: n = 16, 32, 64, 128, 256
    python -m benchmarks.step_time --quick    # smoke run, a few seconds

One step is zero_grad, forward, cross-entropy on random class labels, backward and an Adam
step, in training mode (dropout on), for a batch of 16 sentences of exactly n words with
random binary trees (a span split at a uniformly random point, recursively; seeded), so
m = n - 1 nodes. All encoders: d = 64, dropout 0.1; the Transformers have 4 heads, 2 layers
and d_ff 256 (the Tree-LSTM has one recurrent cell, no heads or layers).

- ``vanilla``: ``TransformerEncoder`` (vanilla attention over the n words) and a linear
  head on the mean of the word states (``SentenceClassifier``).
- ``hierarchical``: ``HierarchicalEncoder`` over the n words and m nodes (node labels all
  1, a node vocabulary of 2) and a linear head on the root node (``TreeClassifier``).
- ``tree-lstm``: ``TreeLSTMEncoder`` and the same root-node head.

Trees, tokens and labels are tensors before timing; the timed step has no Python loop over
tokens (the Tree-LSTM loops over tree heights, which is its nature). Time is the median of
several steps after two warm-up steps (the first builds Adam's state); slow cases get fewer
repeats so a case takes about ``--case-seconds``. Writes ``step_time.{json,md,png}`` to
``--out``: the PNG is a log-log plot of ms per step against n, one line per encoder.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.common import (
    add_run_arguments,
    finish_run_arguments,
    machine_info,
    machine_line,
    markdown_table,
    median_ms,
    start_device,
    tree_batch,
    write_results,
)
from treeattn.models.classifier import SentenceClassifier, TreeClassifier
from treeattn.models.encoder import TransformerEncoder
from treeattn.models.hierarchical import HierarchicalEncoder
from treeattn.models.inputs import EncoderInputs

ENCODERS = ("vanilla", "hierarchical", "tree-lstm")


def build_model(name: str, args: argparse.Namespace, max_length: int, max_depth: int) -> nn.Module:
    d, dropout = args.d, args.dropout
    if name == "vanilla":
        encoder = TransformerEncoder(
            args.vocab,
            d,
            args.heads,
            args.layers,
            args.d_ff,
            dropout,
            "vanilla",
            max_length=max_length,
        )
        return SentenceClassifier(encoder, args.classes, pooling="mean", dropout=dropout)
    if name == "hierarchical":
        encoder = HierarchicalEncoder(
            args.vocab,
            2,
            d,
            args.heads,
            args.layers,
            args.d_ff,
            dropout,
            max_length=max_length,
            max_depth=max_depth,
        )
        return TreeClassifier(encoder, args.classes, pooling="root", dropout=dropout)
    if name == "tree-lstm":
        # Imported here so that the other encoders still run where it is missing.
        from treeattn.models.tree_lstm import TreeLSTMEncoder

        encoder = TreeLSTMEncoder(args.vocab, 2, d, dropout, max_length=max_length)
        return TreeClassifier(encoder, args.classes, pooling="root", dropout=dropout)
    raise ValueError(f"unknown encoder {name!r}; choose from {ENCODERS}")


def make_batch(n: int, args: argparse.Namespace, device: torch.device) -> dict:
    """Everything a step needs, as tensors on ``device``: tokens, pad mask, labels and
    the trees with their node labels (all 1)."""
    trees = tree_batch(n, args.batch, "random", random.Random(args.seed + n)).to(device)
    gen = torch.Generator().manual_seed(args.seed + n)
    m = trees.node_start.shape[1]
    inputs = EncoderInputs(
        torch.randint(1, args.vocab, (args.batch, n), generator=gen).to(device),
        torch.zeros(args.batch, n, dtype=torch.bool, device=device),
        trees=trees,
        node_labels=torch.ones(args.batch, m, dtype=torch.long, device=device),
    )
    labels = torch.randint(0, args.classes, (args.batch,), generator=gen).to(device)
    return {"inputs": inputs, "labels": labels}


def time_steps(model: nn.Module, batch: dict, args, device: torch.device) -> tuple[float, int]:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        logits = model(batch["inputs"])
        F.cross_entropy(logits, batch["labels"]).backward()
        optimizer.step()

    step()  # builds Adam's state; median_ms adds one more warm-up
    return median_ms(step, device, args.repeats, args.case_seconds, min_repeats=3)


def plot(rows: list[dict], encoders: Sequence[str], info: dict, args, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for name in encoders:
        points = [(r["n"], r["ms"]) for r in rows if r["encoder"] == name and r["ms"]]
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    # Ticks at 1, 2, 5 x 10^k written plainly: the range often spans less than a decade.
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(args.sizes, [str(n) for n in args.sizes])
    ax.set_xlabel("sentence length n (words)")
    ax.set_ylabel("ms per training step (median)")
    ax.set_title(
        f"Training step, batch {args.batch}, d={args.d}, {args.layers} layers\n"
        f"{machine_line(info)}, {info['cpu_cores']} cores",
        fontsize=9,
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a / b


def summary(rows: list[dict], sizes: Sequence[int]) -> tuple[list[list[str]], list[str]]:
    """Table rows (one per n) and the target lines: hierarchical within 2x of vanilla at
    n = 128, faster than the Tree-LSTM at every n >= 32 (reported, not asserted)."""
    ms = {(r["encoder"], r["n"]): r["ms"] for r in rows}
    table, targets = [], []
    for n in sizes:
        v, h, t = (ms.get((e, n)) for e in ENCODERS)
        hv, ht = ratio(h, v), ratio(h, t)
        table.append(
            [str(n)]
            + ["-" if x is None else f"{x:.1f}" for x in (v, h, t)]
            + ["-" if x is None else f"{x:.2f}" for x in (hv, ht)]
        )
        if n == 128 and hv is not None:
            ok = "met" if hv <= 2 else "NOT met"
            targets.append(f"target n=128: hierarchical/vanilla = {hv:.2f} ({ok}, want <= 2)")
        if n >= 32 and ht is not None:
            ok = "met" if ht < 1 else "NOT met"
            targets.append(f"target n={n}: hierarchical/tree-lstm = {ht:.2f} ({ok}, want < 1)")
    return table, targets


HEADERS = ["n", "vanilla ms", "hierarchical ms", "tree-lstm ms", "hier/vanilla", "hier/tree-lstm"]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.step_time",
        description=(
            "Training-step time (forward, backward, Adam step) of the vanilla Transformer, "
            "the hierarchical-accumulation Tree Transformer and a Tree-LSTM against sentence "
            "length. Run from the repository root."
        ),
    )
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[16, 32, 64, 128, 256], help="sentence lengths"
    )
    parser.add_argument(
        "--encoders", nargs="+", choices=ENCODERS, default=list(ENCODERS), help="what to time"
    )
    parser.add_argument("--batch", type=int, default=16, help="sentences per batch (16)")
    parser.add_argument("--d", type=int, default=64, help="model width (64)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (4)")
    parser.add_argument("--layers", type=int, default=2, help="Transformer layers (2)")
    parser.add_argument("--d-ff", type=int, default=256, help="feed-forward width (256)")
    parser.add_argument("--dropout", type=float, default=0.1, help="dropout (0.1)")
    parser.add_argument("--vocab", type=int, default=1000, help="word vocabulary size (1000)")
    parser.add_argument("--classes", type=int, default=5, help="output classes (5)")
    add_run_arguments(parser, "step_time.{json,md,png}", 15.0, "n = 8, 16, batch 4")
    return finish_run_arguments(parser.parse_args(argv), quick_sizes=[8, 16], quick_batch=4)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    device = start_device(args)
    if device is None:
        return 2
    info = machine_info(device)
    print(f"machine: {machine_line(info)}; batch {args.batch}, d={args.d}", flush=True)

    batches = {n: make_batch(n, args, device) for n in args.sizes}
    max_length = max(args.sizes)
    max_depth = max(64, *(b["inputs"].trees.paths.shape[2] for b in batches.values()))
    rows, skipped = [], {}
    begin = time.perf_counter()
    for name in args.encoders:
        torch.manual_seed(args.seed)
        try:
            model = build_model(name, args, max_length, max_depth).to(device)
        except ImportError as error:
            skipped[name] = f"cannot build: {error}"
            print(f"{name}: skipped, {skipped[name]}", flush=True)
            continue
        params = sum(p.numel() for p in model.parameters())
        for n in args.sizes:
            ms, repeats = time_steps(model, batches[n], args, device)
            rows.append(
                {"encoder": name, "n": n, "ms": ms, "repeats": repeats, "parameters": params}
            )
            print(f"{name:>12}  n={n:<4}  {ms:9.1f} ms/step  ({repeats} repeats)", flush=True)
    elapsed = time.perf_counter() - begin

    table, targets = summary(rows, args.sizes)
    print(" | ".join(HEADERS))
    for row in table:
        print(" | ".join(row))
    for line in targets:
        print(line)

    markdown = [
        "# Training-step time against sentence length",
        "",
        f"Machine: {machine_line(info)} ({info['cpu_cores']} cores). Batch {args.batch} "
        f"random binary trees, d={args.d}, {args.heads} heads, {args.layers} layers, d_ff "
        f"{args.d_ff}, dropout {args.dropout}; forward + backward + Adam step, median of up "
        f"to {args.repeats} steps.",
        "",
        markdown_table(HEADERS, table),
        "",
        *[f"- {name} skipped: {why}" for name, why in skipped.items()],
        *[f"- {line}" for line in targets],
        "",
        "![step time](step_time.png)",
    ]
    write_results(
        args,
        "step_time",
        info,
        elapsed,
        "\n".join(markdown),
        rows=rows,
        skipped=skipped,
        targets=targets,
    )
    plot(rows, args.encoders, info, args, args.out / "step_time.png")
    print(f"wrote {args.out / 'step_time.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
