"""Training throughput of the translation encoders against the plain Transformer, on the
same Multi30k batches, at the size of ``configs/multi30k-vanilla.yaml``.

Run from the repository root::

    python -m benchmarks.translation --threads 2   # full: 2,000 pairs, the configs' size
    python -m benchmarks.translation --quick       # smoke run, a few seconds, a tiny model

The first ``--lines`` training pairs of Multi30k En->De are read as ``treeattn train``
reads them (PTB words, SentencePiece pieces learned on them, the shipped parser's trees,
cached) and cut into ``--batches`` batches of ``train.max_tokens`` tokens. One step is
zero_grad, forward, label-smoothed cross-entropy, backward and an Adam step, in training
mode, on one of those batches. Each encoder (``--encoders``: ``vanilla``,
``hierarchical``, ``distance`` with the hard and the soft gate, ``constituent``,
``structured``) builds
the model of its ``configs/multi30k-*.yaml``. Steps are timed in rounds that run every
encoder once on the same batch, in an order drawn anew each round
(``common.interleaved_median_ms``); tokens per second are the batch's source pieces plus
target pieces (start word excluded) over the median step time, and the ratio is each
encoder's over vanilla's. Writes ``translation.{json,md}`` to ``--out``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import torch

from benchmarks.common import (
    add_run_arguments,
    finish_run_arguments,
    interleaved_median_ms,
    machine_info,
    machine_line,
    markdown_table,
    start_device,
    write_results,
)
from treeattn.data.batching import bucket_batches
from treeattn.data.subwords import PAD
from treeattn.tasks import load_config, make_task

CONFIGS = {
    "vanilla": "configs/multi30k-vanilla.yaml",
    "hierarchical": "configs/multi30k-hierarchical.yaml",
    "distance-hard": "configs/multi30k-distance-hard.yaml",
    "distance-soft": "configs/multi30k-distance-soft.yaml",
    "constituent": "configs/multi30k-constituent.yaml",
    "structured": "configs/multi30k-structured.yaml",
}
TRAIN_PAIRS = 29000  # Multi30k's training split
QUICK = ["model.d_model=32", "model.n_heads=2", "model.n_layers=1", "model.decoder_layers=1"]


def prepared(name: str, args: argparse.Namespace):
    """The task of encoder ``name``, fitted on the first ``--lines`` pairs, its model and
    the timed batches (the same sentences for every encoder)."""
    print(f"preparing {name}", file=sys.stderr, flush=True)
    overrides = [f"data.train_fraction={args.lines / TRAIN_PAIRS}"]
    if args.quick:
        overrides += [*QUICK, "data.source_vocab_size=300", "data.target_vocab_size=300"]
    cfg = load_config(CONFIGS[name], overrides)
    task = make_task(cfg)
    pairs, where = task.read("train")
    task.fit(pairs)
    data = task.encode(pairs, where)
    torch.manual_seed(args.seed)
    model = task.build_model()
    # Every encoder gets the same batches: they are cut by pieces, not phrase nodes.
    order = bucket_batches(data.lengths, cfg.train.max_tokens, shuffle=True, seed=args.seed)
    batches = [data.batch(indices) for indices in order[: args.batches]]
    return task, model, batches


def train_step(task, model, optimizer, batch):
    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        task.loss(model, batch).backward()
        optimizer.step()

    return step


def tokens_of(batch) -> int:
    return int((batch.inputs.tokens != PAD).sum() + (batch.targets[:, 1:] != PAD).sum())


def run(args: argparse.Namespace, device: torch.device) -> list[dict]:
    models = {name: prepared(name, args) for name in args.encoders}
    optimizers = {
        name: torch.optim.Adam(model.parameters(), lr=1e-4)
        for name, (_, model, _) in models.items()
    }
    for _, model, _ in models.values():
        model.to(device).train()
    totals = {name: [0.0, 0] for name in args.encoders}  # ms, tokens
    for k in range(args.batches):
        steps = {}
        for name, (task, model, batches) in models.items():
            batch = batches[k % len(batches)].to(device)
            steps[name] = train_step(task, model, optimizers[name], batch)
            totals[name][1] += tokens_of(batch)
        for name, (ms, _) in interleaved_median_ms(
            steps, device, args.repeats, args.case_seconds
        ).items():
            totals[name][0] += ms
        print(f"batch {k + 1}/{args.batches}", file=sys.stderr, flush=True)
    vanilla = totals["vanilla"][1] / totals["vanilla"][0] if "vanilla" in totals else None
    rows = []
    for name, (ms, tokens) in totals.items():
        rate = tokens / ms * 1e3
        params = sum(p.numel() for p in models[name][1].parameters())
        rows.append(
            {
                "encoder": name,
                "params": params,
                "ms_per_batch": ms / args.batches,
                "tokens_per_second": rate,
                "of_vanilla": None if vanilla is None else rate / (vanilla * 1e3),
            }
        )
    return rows


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.translation",
        description="Training tokens per second of each translation encoder against vanilla "
        "on the same Multi30k batches. Run from the repository root.",
    )
    parser.add_argument(
        "--encoders", nargs="+", choices=list(CONFIGS), default=list(CONFIGS), help="what to run"
    )
    parser.add_argument("--lines", type=int, default=2000, help="training pairs read (2000)")
    parser.add_argument("--batches", type=int, default=5, help="batches timed (5)")
    add_run_arguments(parser, "translation.{json,md}", 10.0, "100 pairs, a tiny model", 5)
    args = parser.parse_args(argv)
    args = finish_run_arguments(args)
    if args.quick:
        args.lines, args.batches = 100, 2
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    device = start_device(args)
    if device is None:
        return 2
    info = machine_info(device)
    print(f"machine: {machine_line(info)}", flush=True)
    started = time.perf_counter()
    rows = run(args, device)
    seconds = time.perf_counter() - started
    table = markdown_table(
        ["encoder", "parameters", "ms / batch", "tokens / s", "of vanilla"],
        [
            [
                r["encoder"],
                f"{r['params']:,}",
                f"{r['ms_per_batch']:.0f}",
                f"{r['tokens_per_second']:.0f}",
                "-" if r["of_vanilla"] is None else f"{r['of_vanilla']:.2f}",
            ]
            for r in rows
        ],
    )
    print(table)
    markdown = (
        f"Machine: {machine_line(info)}. {args.lines} Multi30k En->De training pairs, "
        f"{args.batches} batches; median of interleaved steps per batch.\n\n{table}\n"
    )
    write_results(args, "translation", info, seconds, markdown, rows=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
