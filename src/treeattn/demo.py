"""The demo: every registered mechanism trained on generated ListOps, side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from treeattn.engine.report import score_names
from treeattn.engine.trainer import train
from treeattn.tasks import load_config, make_task
from treeattn.tasks.encoders import model_names


def format_table(rows: dict[str, dict[str, Any]]) -> str:
    """One row per model: parameters, the task's scores, training time."""
    scores = score_names(next(iter(rows.values()))) if rows else []
    widths = [max(8, len(name)) for name in scores]
    columns = " ".join(
        f"{name.replace('_', ' '):>{w}}" for name, w in zip(scores, widths, strict=True)
    )
    header = f"{'model':<14} {'params':>9} {columns} {'train s':>8}"
    lines = [header, "-" * len(header)]
    for name, r in rows.items():
        values = " ".join(f"{r[key]:>{w}.2f}" for key, w in zip(scores, widths, strict=True))
        lines.append(f"{name:<14} {r['params']:>9,} {values} {r['train_seconds']:>8.1f}")
    return "\n".join(lines)


def run_demo(out: Path, overrides: list[str] = ()) -> dict[str, dict[str, Any]]:
    """Train each mechanism from scratch with the default (ListOps) configuration."""
    rows: dict[str, dict[str, Any]] = {}
    for name in model_names():
        cfg = load_config(None, [*overrides, f"model.attention={name}", f"out_dir={out / name}"])
        print(f"== {name} ==", flush=True)
        result = train(make_task(cfg), resume=False)
        rows[name] = {
            **{key: result[key] for key in score_names(result)},
            "params": result["params"],
            "train_seconds": result["train_seconds"],
        }
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"models": rows}, indent=2), encoding="utf-8")
    print()
    print(format_table(rows))
    print(f"\nwritten to {out / 'results.json'}")
    return rows
