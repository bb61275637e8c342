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
from treeattn.models.registry import encoder_names as model_names
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

# What each mechanism is, and what it reads of an expression's tree ("gold": the
# bracketing of the expression; "latent": a structure it learns itself; "none").
DESCRIPTIONS = {
    "vanilla": ("none", "the plain Transformer: scaled dot-product self-attention"),
    "constituent": ("latent", "Tree Transformer: attention times a learned constituent prior"),
    "distance": ("gold", "2 of 4 heads kept inside each token's range in the bracketing"),
    "structured": ("latent", "attention weights are a latent dependency tree's marginals"),
    "hierarchical": ("gold", "the tree's nodes attend over their subtrees (accumulation)"),
    "tree-lstm": ("gold", "binary Tree-LSTM composing each node from its two children"),
}


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
        reads, what = DESCRIPTIONS.get(name, ("?", ""))
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
    for name in model_names():
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
