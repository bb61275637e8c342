"""Summaries of finished runs: each run's scores, and their mean and standard deviation over
seeds. The scores are whatever the task reported (``<split>_<metric>`` in results.json)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

# What the engine itself writes into results.json; every other number is a task's score.
RUN_KEYS = ("finished", "params", "train_seconds", "global_step", "best_epoch", "best_step")


def load_run(run_dir: str | Path) -> dict[str, Any]:
    run_dir = Path(run_dir)
    results_path = run_dir / "results.json"
    if not results_path.is_file():
        raise FileNotFoundError(f"{results_path} not found: has the run finished?")
    results = json.loads(results_path.read_text(encoding="utf-8"))
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    return {"run": str(run_dir), "config": config, **results}


def score_names(results: dict[str, Any]) -> list[str]:
    """The task's scores in a results dict (``dev_accuracy``, ``test_f1``, ...), in order."""
    return [
        key
        for key, value in results.items()
        if key not in RUN_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool)
    ]


def _setup(config: dict[str, Any]) -> dict[str, Any]:
    """The configuration without what varies between repetitions of one experiment."""
    return {k: v for k, v in config.items() if k not in ("seed", "out_dir")}


def mean_std(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def _column(name: str) -> str:
    return name.replace("_", " ")


def format_report(
    run_dirs: list[str | Path], complete: Callable[[dict], dict] = lambda config: config
) -> str:
    """One line per run, then mean ± sample standard deviation over the runs. ``complete``
    fills in the defaults a saved config may lack (one saved before a key existed), so
    that runs of one configuration compare equal."""
    runs = [load_run(d) for d in run_dirs]
    setup = _setup(complete(runs[0]["config"]))
    for r in runs[1:]:
        if _setup(complete(r["config"])) != setup:
            raise ValueError(
                f"{r['run']} and {runs[0]['run']} differ in more than seed and out_dir; "
                "summarise one configuration at a time"
            )
    scores = [name for name in score_names(runs[0]) if name != "run"]
    widths = [max(8, len(name)) for name in scores]
    header = f"{'run':<32} {'seed':>4} " + " ".join(
        f"{_column(name):>{w}}" for name, w in zip(scores, widths, strict=True)
    )
    header += f" {'train s':>8}"
    lines = [header, "-" * len(header)]
    for r in runs:
        values = " ".join(f"{r[name]:>{w}.2f}" for name, w in zip(scores, widths, strict=True))
        lines.append(f"{r['run']:<32} {r['config']['seed']:>4} {values} {r['train_seconds']:>8.1f}")
    lines.append("-" * len(header))
    for name in scores:
        lines.append(f"{_column(name):<14} {mean_std([r[name] for r in runs])}")
    lines.append(f"{'parameters':<14} {runs[0]['params']:,}")
    return "\n".join(lines)
