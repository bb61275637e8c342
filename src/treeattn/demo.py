"""The demo: every registered mechanism trained on generated ListOps, side by side.

The demo trains with the defaults and ``SETTINGS`` (``configs/listops.yaml`` is the same
set-up as a file), the same for every mechanism; ``--set`` overrides come after them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from treeattn.engine.report import score_names
from treeattn.engine.trainer import train
from treeattn.models.registry import encoder_entry, encoder_names
from treeattn.tasks import load_config, make_task

# The demo's ListOps and training settings, the same for every mechanism, chosen on dev
# (docs/RESULTS.md, "ListOps (the demo)"): operations nested at most two deep, up to five
# arguments and no SUM_MOD, so that following the bracketing pays and the bag of tokens
# does not give the answer; 40,000 fresh expressions, no dropout and a higher learning rate
# make the most of a few minutes of training.
SETTINGS = (
    "data.train_size=40000",
    "data.max_depth=2",
    "data.max_args=5",
    "data.max_length=40",
    "data.operators=[MAX, MIN, MED]",
    "model.dropout=0",
    "train.epochs=5",
    "train.lr=4e-3",
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
    return "\n".join(lines)


def run_demo(out: Path, overrides: list[str] = ()) -> dict[str, dict[str, Any]]:
    """Train each mechanism from scratch with the demo's (ListOps) configuration."""
    rows: dict[str, dict[str, Any]] = {}
    for name in encoder_names():
        settings = [*SETTINGS, *overrides, f"model.attention={name}", f"out_dir={out / name}"]
        cfg = load_config(None, settings)
        print(f"== {name} ==", flush=True)
        result = train(make_task(cfg), resume=False)
        if not result["finished"]:  # stopped by Ctrl-C: the demo stops with it
            raise KeyboardInterrupt
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
