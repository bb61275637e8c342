"""The demo: every registered mechanism trained on generated ListOps, side by side.

The demo trains with the defaults and ``SETTINGS`` (``configs/listops.yaml`` is the same
set-up as a file), the same for every mechanism; ``--set`` overrides come after them.
The models train at once, in as many worker processes as the machine has cores (each
with a share of the cores as its threads, ``worker_shape``): small models use one core
better than two, so the whole demo takes about half the time it takes one after another.
Each model's training log goes to its run folder (``train.log``).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import torch

from treeattn.engine.report import score_names
from treeattn.engine.trainer import train
from treeattn.models.registry import encoder_entry, encoder_names
from treeattn.tasks import load_config, make_task

# The demo's ListOps and training settings, the same for every mechanism, chosen on dev
# (docs/results/listops.md#listops-the-demo): operations nested at most two deep, up to five
# arguments and no SUM_MOD, so that following the bracketing pays and the bag of tokens
# does not give the answer; 40,000 fresh expressions, no dropout and a higher learning rate
# make the most of a few minutes of training. Two epochs keep the demo within about three
# minutes on two cores without bfloat16, the tree models still 15 points or more above the
# plain Transformer (five gave them a few more points each, in more than twice the time).
SETTINGS = (
    "data.train_size=40000",
    "data.max_depth=2",
    "data.max_args=5",
    "data.max_length=40",
    "data.operators=[MAX, MIN, MED]",
    "model.dropout=0",
    "train.epochs=2",
    "train.lr=4e-3",
)


# What the table's scores are: the demo's task and metric.
TASK_LINE = (
    "task: generated ListOps (an expression's value, 10 classes; chance 10%); scores are "
    "accuracy in percent on its dev and test sets"
)


def tree_kind(name: str) -> str:
    """What a mechanism reads of an expression's tree: "gold" (its bracketing), "latent" (a
    structure it learns itself) or "none"."""
    entry = encoder_entry(name)
    if entry.needs_trees:
        return "gold"
    return "latent" if entry.capabilities.latent else "none"


def format_table(rows: dict[str, dict[str, Any]]) -> str:
    """One row per model: what trees it reads, parameters, the task's scores, training
    time, and what it is."""
    scores = score_names(next(iter(rows.values()))) if rows else []
    widths = [max(8, len(name)) for name in scores]
    columns = " ".join(
        f"{name.replace('_', ' '):>{w}}" for name, w in zip(scores, widths, strict=True)
    )
    header = f"{'model':<14} {'tree':<6} {'params':>9} {columns} {'train s':>8}  what it is"
    lines = [header, "-" * len(header)]
    for name, r in rows.items():
        reads, what = tree_kind(name), encoder_entry(name).capabilities.description
        values = " ".join(f"{r[key]:>{w}.2f}" for key, w in zip(scores, widths, strict=True))
        lines.append(
            f"{name:<14} {reads:<6} {r['params']:>9,} {values} {r['train_seconds']:>8.1f}  {what}"
        )
    lines.append("")
    lines.append(
        "tree: gold = reads the expression's bracketing, latent = induces its own "
        "structure, none = reads tokens only"
    )
    return "\n".join([TASK_LINE, "", *lines])


def worker_shape(models: int, cores: int | None = None) -> tuple[int, int]:
    """How many models train at once and how many threads each takes: one model a core
    (at most one worker a model), the cores shared out among the workers."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = max(1, min(models, cores or 1))
    return workers, max(1, (cores or 1) // workers)


_stopped: Any = None  # each worker's view of the demo's stop event (``_share_stop``)


def _share_stop(event: Any) -> None:
    global _stopped
    _stopped = event


def train_logged(settings: list[str], run: Path, threads: int) -> dict[str, Any] | None:
    """Train the model ``settings`` configure in this process with ``threads`` threads,
    its log in ``run/train.log``; the trainer's result, or None when stopped (then no
    other model starts)."""
    if _stopped is not None and _stopped.is_set():
        return None
    torch.set_num_threads(threads)
    # Progress on: with stdout and stderr in the log file (no terminal), the trainer
    # writes its evaluation lines and a line a minute there, and draws no bar.
    cfg = load_config(None, [*settings, f"out_dir={run}", "train.progress=true"])
    run.mkdir(parents=True, exist_ok=True)
    with (
        open(run / "train.log", "w", encoding="utf-8") as log,
        contextlib.redirect_stdout(log),
        contextlib.redirect_stderr(log),
    ):
        result = train(make_task(cfg), resume=False)
    if not result["finished"]:  # stopped by Ctrl-C
        if _stopped is not None:
            _stopped.set()
        return None
    return result


def train_one(name: str, out: Path, overrides: list[str], threads: int) -> dict[str, Any] | None:
    """Train the demo's model of mechanism ``name``, its log in ``out/name/train.log``; its
    table row, or None when stopped."""
    settings = [*SETTINGS, *overrides, f"model.attention={name}"]
    result = train_logged(settings, out / name, threads)
    if result is None:
        return None
    return {
        **{key: result[key] for key in score_names(result)},
        "params": result["params"],
        "train_seconds": result["train_seconds"],
    }


Work = Callable[[str, Path, list[str], int], "dict[str, Any] | None"]


def train_at_once(
    work: Work, names: list[str], out: Path, overrides: list[str], cores: int | None
) -> tuple[dict[str, dict[str, Any]], int]:
    """``work(name, out, overrides, threads)`` for each of ``names``, as many at once as
    ``worker_shape`` says; the rows in ``names``' order and the number of workers. Ctrl-C
    (or a model stopped) stops them all."""
    workers, threads = worker_shape(len(names), cores)
    print(
        f"training {len(names)} models, {workers} at once with {threads} "
        f"thread{'s' if threads > 1 else ''} each; each model's log: {out}/MODEL/train.log",
        flush=True,
    )
    # Forked workers inherit every registered mechanism, also one registered by a plug-in.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    rows: dict[str, dict[str, Any]] = {}
    stop = context.Event()
    with ProcessPoolExecutor(workers, context, _share_stop, (stop,)) as pool:
        jobs = {pool.submit(work, name, out, list(overrides), threads): name for name in names}
        try:
            for job in as_completed(jobs):
                name, row = jobs[job], job.result()
                if row is None:  # stopped by Ctrl-C: the demo stops with it
                    raise KeyboardInterrupt
                rows[name] = row
                seconds = row["train_seconds"]
                print(f"[{len(rows)}/{len(names)}] {name}: {seconds:.0f} s of training", flush=True)
        except KeyboardInterrupt:  # the running models save their checkpoints and stop too
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return {name: rows[name] for name in names}, workers


def write_summary(out: Path, rows: dict[str, dict[str, Any]], workers: int, wall: float) -> None:
    out.mkdir(parents=True, exist_ok=True)
    summary = {"models": rows, "wall_seconds": round(wall, 1), "workers": workers}
    (out / "results.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")


def run_demo(
    out: Path, overrides: list[str] = (), cores: int | None = None
) -> dict[str, dict[str, Any]]:
    """Train each mechanism from scratch with the demo's (ListOps) configuration, the
    models at once on the machine's ``cores`` (default: those this process may use)."""
    started = time.perf_counter()
    ordered, workers = train_at_once(train_one, encoder_names(), out, list(overrides), cores)
    wall = time.perf_counter() - started
    write_summary(out, ordered, workers, wall)
    print()
    print(format_table(ordered))
    print(
        f"\n{wall:.0f} s of wall time, {workers} models at once; written to {out / 'results.json'}"
    )
    return ordered
