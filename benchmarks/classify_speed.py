"""What syntax costs a fine-tuned classifier: inference sentences per second and training
time of trained runs, each against the first run given (plain fine-tuning).

For each run folder (``best.pt`` and ``results.json`` of ``treeattn train``), the model
classifies every sentence of a split (the test split by default; trees as the run read
them), as ``treeattn evaluate`` does: batches sorted by length, inference mode. The
split is read and encoded once, outside the timing; each time is the median of
``--repeats`` interleaved rounds. The training seconds come from the run's results.json
(they are comparable only between runs trained on equally loaded machines).

    OMP_NUM_THREADS=1 python -m benchmarks.classify_speed runs/sst5-minilm-vanilla-s1 \
        runs/sst5-minilm-hierarchical-s1 --threads 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

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
from treeattn.tasks.trained import load_trained


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(parser, "classify_speed.json and .md", 0.0, "50 sentences", 3)
    parser.add_argument("runs", nargs="+", help="run folders; the first is the base")
    parser.add_argument("--split", default="test", help="the split to classify (test)")
    args = finish_run_arguments(parser.parse_args())
    device = start_device(args)
    if device is None:
        return
    begin = time.perf_counter()
    models = {}
    for run in map(Path, args.runs):
        trained = load_trained(run / "best.pt", device=str(device))
        examples, where = trained.read(args.split)
        if args.quick:
            examples = examples[:50]
        data = trained.encode(examples, where)
        train_seconds = json.loads((run / "results.json").read_text())["train_seconds"]
        models[run.name] = (trained, data, train_seconds)
    seconds: dict[str, list[float]] = {name: [] for name in models}
    accuracy = {}
    for _ in range(args.repeats):
        for name, (trained, data, _) in models.items():  # interleaved rounds
            start = time.perf_counter()
            with torch.inference_mode():
                scores = trained.task.evaluate(trained.model, data, device)
            seconds[name].append(time.perf_counter() - start)
            accuracy[name] = scores["accuracy"]
    base = Path(args.runs[0]).name
    base_speed = len(models[base][1]) / statistics.median(seconds[base])
    rows, speed = [], []
    for name, (_, data, train_seconds) in models.items():
        per_second = len(data) / statistics.median(seconds[name])
        rows.append(
            [
                name,
                fmt(accuracy[name], 2),
                fmt(per_second, 0),
                fmt(per_second / base_speed, 2),
                fmt(train_seconds, 0),
                fmt(train_seconds / models[base][2], 2),
            ]
        )
        speed.append({"run": name, "sentences": len(data), "seconds": seconds[name]})
    headers = [
        "run",
        f"{args.split} accuracy",
        "sentences/s",
        "speed vs base",
        "train s",
        "train time vs base",
    ]
    markdown = markdown_table(headers, rows)
    info = machine_info(device)
    print(f"{machine_line(info)}\n\n{markdown}")
    write_results(args, "classify_speed", info, time.perf_counter() - begin, markdown, speed=speed)


if __name__ == "__main__":
    main()
