"""Language models at the size of the LM configs: training-update time (to size a run) and
the evaluator's speed on BLiMP pairs, causal against masked.

For each config (default: the three ``configs/lm-*.yaml``), the task reads its training
split and learns its vocabulary (once for configs with the same data section), and
builds a fresh model (the speed of an update, or of scoring, does not depend on the
weights). Then:

- training: ``--updates`` updates (zero_grad, the task's loss, backward, clipping, an
  AdamW step) on batches the engine would draw (``train.max_tokens`` padded tokens,
  shuffled buckets), after one warm-up; each update's CPU time (``time.process_time``,
  what one free core would take: the wall time of a shared machine also counts other
  jobs) and wall time. An epoch's estimate is the median update times the epoch's
  batches; ``epochs_per_hour`` is what fits in an hour of one core.
- scoring: the first ``--pairs-per-file`` pairs of every BLiMP file, through
  ``treeattn.evaluation`` (a causal model: one pass per sentence; a masked model: one
  pass per piece), in pairs per second of CPU time and of wall time, and the estimate
  for all 67,000 pairs.

    OMP_NUM_THREADS=1 python -m benchmarks.lm_speed --threads 1
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
from treeattn.data.batching import bucket_batches
from treeattn.data.paths import require_data
from treeattn.evaluation.blimp import blimp_files, read_pairs, score_blimp
from treeattn.evaluation.models import ProjectLM
from treeattn.evaluation.scoring import Scorer
from treeattn.tasks import load_config, make_task
from treeattn.tasks.trained import Trained

CONFIGS = ("lm-causal-vanilla", "lm-masked-vanilla", "lm-masked-constituent")
BLIMP_PAIRS = 67_000


def _timed_updates(
    task, model, data, updates: int, seed: int
) -> tuple[list[float], list[float], int]:
    """CPU and wall seconds of each of ``updates`` updates after one warm-up, and the
    batches of an epoch."""
    cfg = task.cfg
    batches = bucket_batches(data.lengths, cfg.train.max_tokens, True, seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.train.lr)
    model.train()
    cpu, wall = [], []
    for k, indices in enumerate(batches[: updates + 1]):
        batch = data.batch(indices)
        started_cpu, started = time.process_time(), time.perf_counter()
        optimizer.zero_grad()
        task.loss(model, batch).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.train.clip_norm)
        optimizer.step()
        if k:  # the first builds AdamW's state
            cpu.append(time.process_time() - started_cpu)
            wall.append(time.perf_counter() - started)
    return cpu, wall, len(batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(parser, "lm_speed.json and .md", 0.0, "PTB only, tiny runs", 1)
    parser.add_argument("configs", nargs="*", help="LM configs (default: configs/lm-*.yaml)")
    parser.add_argument("--updates", type=int, default=10, help="timed updates (10)")
    parser.add_argument(
        "--pairs-per-file", type=int, default=6, help="BLiMP pairs scored per file (6)"
    )
    args = finish_run_arguments(parser.parse_args())
    device = start_device(args)
    if device is None:
        return
    begin = time.perf_counter()
    configs = args.configs or [f"configs/{name}.yaml" for name in CONFIGS]
    quick = ["data.corpora=[ptb]", "data.vocab_size=1000", "model.max_length=2048"]
    overrides = quick if args.quick else []
    updates = 2 if args.quick else args.updates
    per_file = 1 if args.quick else args.pairs_per_file
    pairs = [p for f in blimp_files(require_data("blimp")) for p in read_pairs(f)[:per_file]]
    fitted: dict[str, dict] = {}
    rows = []
    for path in configs:
        cfg = load_config(path, overrides)
        task = make_task(cfg)
        key = json.dumps(cfg.to_dict()["data"], sort_keys=True)
        started = time.perf_counter()
        examples, where = task.read("train")
        if key in fitted:
            task.load_state_dict(fitted[key])
        else:
            task.fit(examples)
            fitted[key] = task.state_dict()
        data = task.encode(examples, where)
        prepare = time.perf_counter() - started
        torch.manual_seed(args.seed)
        model = task.build_model().to(device)
        cpu, wall, epoch_batches = _timed_updates(task, model, data, updates, args.seed)
        step_cpu = statistics.median(cpu)
        model.eval()
        lm = ProjectLM(Trained(cfg, task, model, device), name=Path(path).stem)
        started_cpu, started = time.process_time(), time.perf_counter()
        score_blimp(Scorer(lm), pairs)
        score_cpu, score_wall = time.process_time() - started_cpu, time.perf_counter() - started
        rows.append(
            {
                "config": Path(path).stem,
                "kind": task.lm_kind,
                "params": sum(p.numel() for p in model.parameters()),
                "vocab": len(task.vocab),
                "train_sentences": len(data),
                "train_tokens": sum(len(item.ids) for item in data.items),
                "epoch_batches": epoch_batches,
                "update_cpu_s": step_cpu,
                "update_wall_s": statistics.median(wall),
                "epoch_cpu_s": step_cpu * epoch_batches,
                "epochs_per_hour": 3600 / (step_cpu * epoch_batches),
                "prepare_s": prepare,
                "pairs": len(pairs),
                "pairs_per_cpu_s": len(pairs) / score_cpu,
                "pairs_per_wall_s": len(pairs) / score_wall,
                "blimp_cpu_minutes": BLIMP_PAIRS / (len(pairs) / score_cpu) / 60,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    info = machine_info(device)
    causal = [r for r in rows if r["kind"] == "causal"]
    headers = [
        "config",
        "params",
        "vocab",
        "train tokens",
        "batches/epoch",
        "update (CPU s)",
        "update (wall s)",
        "epoch (CPU min)",
        "epochs/hour",
        "BLiMP pairs/CPU s",
        "pairs/s vs causal",
        "all BLiMP (CPU min)",
    ]
    table = [
        [
            r["config"],
            r["params"],
            r["vocab"],
            r["train_tokens"],
            r["epoch_batches"],
            fmt(r["update_cpu_s"], 2),
            fmt(r["update_wall_s"], 2),
            fmt(r["epoch_cpu_s"] / 60),
            fmt(r["epochs_per_hour"], 2),
            fmt(r["pairs_per_cpu_s"]),
            fmt(r["pairs_per_cpu_s"] / causal[0]["pairs_per_cpu_s"], 3) if causal else "-",
            fmt(r["blimp_cpu_minutes"]),
        ]
        for r in rows
    ]
    markdown = f"{machine_line(info)}\n\n{markdown_table(headers, table)}\n"
    print(markdown)
    write_results(args, "lm_speed", info, time.perf_counter() - begin, markdown, rows=rows)


if __name__ == "__main__":
    main()
