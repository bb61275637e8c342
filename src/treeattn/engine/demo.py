"""The demo: every registered mechanism trained on generated ListOps, side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from treeattn.engine.classification import model_names
from treeattn.engine.config import load_config
from treeattn.engine.trainer import train


def format_table(rows: dict[str, dict[str, Any]]) -> str:
    header = f"{'model':<14} {'params':>9} {'dev acc':>8} {'test acc':>9} {'train s':>8}"
    lines = [header, "-" * len(header)]
    for name, r in rows.items():
        lines.append(
            f"{name:<14} {r['params']:>9,} {r['dev_accuracy']:>8.2f} "
            f"{r['test_accuracy']:>9.2f} {r['train_seconds']:>8.1f}"
        )
    return "\n".join(lines)


def run_demo(out: Path, overrides: list[str] = ()) -> dict[str, dict[str, Any]]:
    """Train each mechanism from scratch with the default (ListOps) configuration."""
    rows: dict[str, dict[str, Any]] = {}
    for name in model_names():
        cfg = load_config(None, [*overrides, f"model.attention={name}", f"out_dir={out / name}"])
        print(f"== {name} ==", flush=True)
        result = train(cfg, resume=False)
        rows[name] = {
            key: result[key] for key in ("dev_accuracy", "test_accuracy", "params", "train_seconds")
        }
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"models": rows}, indent=2), encoding="utf-8")
    print()
    print(format_table(rows))
    print(f"\nwritten to {out / 'results.json'}")
    return rows
