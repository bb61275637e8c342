"""Training-update time in float32 against bfloat16 autocast (``train.precision``) for one
config, on its own training data.

The task of the config reads its training split (the first ``--sentences`` examples), and
one model takes the same ``--updates`` batches (max_tokens as the config says, shuffled
with a fixed seed) in rounds that interleave the two precisions: zero_grad, forward and
loss (under autocast for bfloat16), backward, clipping and an AdamW step, as the trainer
takes them. Reported: the median milliseconds per update of each and their ratio, and the
loss of the first batch in each precision (from the same weights) to show what bfloat16
changes in it, and which of the two ``train.precision: auto`` picks on this device.

    OMP_NUM_THREADS=1 python -m benchmarks.precision configs/sst5-minilm-vanilla.yaml --threads 1
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from benchmarks.common import (
    add_run_arguments,
    finish_run_arguments,
    fmt,
    machine_info,
    machine_line,
    markdown_table,
    start_device,
    write_results,
)
from treeattn.data.batching import bucket_batches
from treeattn.engine.precision import AUTO, resolve_precision
from treeattn.tasks import load_config, make_task

PRECISIONS = ("float32", "bfloat16")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(parser, "precision.json and .md", 0.0, "2 updates, 40 sentences", 3)
    parser.add_argument("config", help="a training config (its train split is read)")
    parser.add_argument("--updates", type=int, default=8, help="updates per round (8)")
    parser.add_argument("--sentences", type=int, default=400, help="examples read (400)")
    args = finish_run_arguments(parser.parse_args())
    device = start_device(args)
    if device is None:
        return
    if args.quick:
        args.updates, args.sentences = 2, 40
    begin = time.perf_counter()
    cfg = load_config(args.config, ["train.progress=false"])
    task = make_task(cfg)
    examples, where = task.read("train")
    task.fit(examples)
    data = task.encode(examples[: args.sentences], where)
    torch.manual_seed(args.seed)
    model = task.build_model().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    shuffled = bucket_batches(data.lengths, cfg.train.max_tokens, True, seed=args.seed)
    batches = [data.batch(indices).to(device) for indices in shuffled[: args.updates]]

    def loss_of(batch, precision: str) -> torch.Tensor:
        with torch.autocast(device.type, torch.bfloat16, enabled=precision == "bfloat16"):
            return task.loss(model, batch)

    model.eval()
    with torch.no_grad():
        first_loss = {p: float(loss_of(batches[0], p)) for p in PRECISIONS}
    model.train()

    def update_ms(precision: str) -> float:
        start = time.perf_counter()
        for batch in batches:
            optimizer.zero_grad(set_to_none=True)
            loss_of(batch, precision).backward()
            nn.utils.clip_grad_norm_(model.parameters(), cfg.train.clip_norm)
            optimizer.step()
        return (time.perf_counter() - start) * 1000 / len(batches)

    update_ms("float32")  # warm-up: Adam's state, the allocator
    times: dict[str, list[float]] = {p: [] for p in PRECISIONS}
    for _ in range(args.repeats):
        for precision in PRECISIONS:  # interleaved: a slow spell falls on both
            times[precision].append(update_ms(precision))
    median = {p: statistics.median(times[p]) for p in PRECISIONS}
    rows = [
        [p, fmt(median[p], 0), fmt(median["float32"] / median[p], 2), fmt(first_loss[p], 4)]
        for p in PRECISIONS
    ]
    headers = ["precision", "ms / update", "speed vs float32", "first batch's loss"]
    chosen, why = resolve_precision(AUTO, device)
    markdown = markdown_table(headers, rows) + f"\n\ntrain.precision: auto picks {chosen} ({why})"
    info = machine_info(device)
    print(f"{machine_line(info)}, {args.config}\n\n{markdown}")
    write_results(
        args,
        "precision",
        info,
        time.perf_counter() - begin,
        markdown,
        times=times,
        first_loss=first_loss,
        auto=chosen,
    )


if __name__ == "__main__":
    main()
