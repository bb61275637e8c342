"""The hierarchical generalization demo (``treeattn demo --task question-formation``): a
plain Transformer language model and the same model with tree regularization, trained
at once on McCoy et al.'s (2020) question formation, then asked to form questions from
sentences unlike any they were trained on.

Every training question fronts an auxiliary that is both the sentence's first and its
main one; the gen sentences have a relative clause on the subject, so the first
auxiliary is not the main one. The plain model mostly fronts the first (the linear
rule); tree regularization, which asks the middle layer's states to split each training
string where the grammar's tree splits it, fronts the main one (the hierarchical rule).
``SETTINGS`` are those of ``configs/mccoy-question-lm.yaml`` and its tree-regularized
twin, cut to ``UPDATES`` updates (docs/results/generalization.md has the full runs).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from treeattn.analysis.generalization import score_checkpoint
from treeattn.data.mccoy.scores import FIRST, MAIN
from treeattn.demo import train_at_once, train_logged, write_summary

# Updates a model trains for: enough for tree regularization's gap to show (the main
# auxiliary fronted on most gen sentences) in a few minutes on two cores.
UPDATES = 600
SETTINGS = (
    "task=causal-lm",
    "data.name=mccoy",
    "data.task=question",
    "data.vocabulary=words",
    "model.d_model=128",
    "model.n_heads=4",
    "model.n_layers=6",
    "model.d_ff=512",
    "model.max_length=64",
    "train.epochs=null",
    f"train.max_updates={UPDATES}",
    "train.max_tokens=2048",
    "train.eval_max_tokens=16384",
    "train.lr=1e-3",
    "train.warmup_steps=100",
    f"train.eval_every={UPDATES}",
    f"train.checkpoint_every={UPDATES}",
)
# The two models: what each adds to SETTINGS, what it reads of a string's tree, and
# what it is.
MODELS = {
    "plain": ((), "none", "Transformer language model"),
    "tree-regularization": (
        (
            "data.trees=gold",
            "model.tree_loss=tree-regularization",
            "model.tree_loss_options={layers: [3], dims: 0.25}",
        ),
        "gold",
        "the same, its middle layer asked to split each string where its tree does",
    ),
}
PAIRS = 1000  # the first test and gen pairs each model is scored on

TASK_LINE = (
    "task: question formation (McCoy et al. 2020), a language model on 'declarative . "
    "quest question' strings whose every training question fronts an auxiliary that is "
    "both the first and the main one; scored by its greedy questions for the first "
    f"{PAIRS:,} test sentences (in distribution: full question right, %) and gen "
    "sentences (a relative clause on the subject: % fronting the main auxiliary, the "
    "hierarchical rule, or the first, the linear rule)"
)


def train_and_score(
    name: str, out: Path, overrides: list[str], threads: int
) -> dict[str, Any] | None:
    """Train model ``name`` of ``MODELS`` and score its last checkpoint; its table row,
    or None when stopped."""
    extra, _, _ = MODELS[name]
    result = train_logged([*SETTINGS, *extra, *overrides], out / name, threads)
    if result is None:
        return None
    scores = score_checkpoint(out / name / "last.pt", ("test", "gen"), PAIRS, device="cpu")
    test, gen = scores.splits
    return {
        "test_sequence": test.sequence_accuracy,
        "gen_main_aux": gen.shares[MAIN],
        "gen_first_aux": gen.shares[FIRST],
        "params": result["params"],
        "updates": result["global_step"],
        "train_seconds": result["train_seconds"],
    }


def format_table(rows: dict[str, dict[str, Any]]) -> str:
    header = (
        f"{'model':<20} {'tree':<5} {'params':>9} {'updates':>7} {'test':>7} "
        f"{'gen main aux':>12} {'gen first aux':>13} {'train s':>8}  what it is"
    )
    lines = [TASK_LINE, "", header, "-" * len(header)]
    for name, r in rows.items():
        _, tree, what = MODELS[name]
        lines.append(
            f"{name:<20} {tree:<5} {r['params']:>9,} {r['updates']:>7} "
            f"{r['test_sequence']:>7.2f} {r['gen_main_aux']:>12.2f} {r['gen_first_aux']:>13.2f} "
            f"{r['train_seconds']:>8.1f}  {what}"
        )
    lines += ["", "tree: gold = the grammar's tree of each training string, read by the loss only"]
    return "\n".join(lines)


def run_generalization_demo(
    out: Path, overrides: list[str] = (), cores: int | None = None
) -> dict[str, dict[str, Any]]:
    """Train and score both models, at once on the machine's ``cores``."""
    started = time.perf_counter()
    rows, workers = train_at_once(train_and_score, list(MODELS), out, list(overrides), cores)
    wall = time.perf_counter() - started
    write_summary(out, rows, workers, wall)
    print()
    print(format_table(rows))
    print(
        f"\n{wall:.0f} s of wall time, {workers} models at once; written to {out / 'results.json'}"
    )
    return rows
