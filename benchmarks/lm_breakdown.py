"""Language models' targeted syntactic evaluation broken down, seeds averaged: BLiMP by
phenomenon, SyntaxGym by circuit, agreement by number of attractors, as Markdown tables
(mean ± sample sd over each configuration's seeds). Each run folder holds the
``lm-eval.json`` that ``treeattn lm-eval -o`` wrote; runs are grouped by configuration as
``treeattn report`` groups them (its overall scores come from there).

    python -m benchmarks.lm_breakdown runs/lm-causal-vanilla-s{1,2,3} \\
        runs/lm-causal-tree-regularization-s{1,2,3}
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import markdown_table
from treeattn.engine.report import LM_EVAL, Configuration, group_runs, mean_std


def _evaluations(group: Configuration) -> list[dict[str, Any]]:
    found = []
    for run in group.runs:
        path = Path(run["run"]) / LM_EVAL
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: run treeattn lm-eval -o {path}")
        found.append(json.loads(path.read_text(encoding="utf-8")))
    return found


def breakdown(
    groups: list[Configuration], title: str, rows: Callable[[dict[str, Any]], dict[str, float]]
) -> str:
    """One row per key ``rows`` gives (the union over runs), one column per configuration."""
    scores = {g.name: [rows(e) for e in _evaluations(g)] for g in groups}
    keys: list[str] = []
    for runs in scores.values():
        for found in runs:
            keys += [k for k in found if k not in keys]

    def cell(runs: list[dict[str, float]], key: str) -> str:
        values = [r[key] for r in runs if key in r]
        return mean_std(values) if values else "-"

    table = [[key] + [cell(scores[g.name], key) for g in groups] for key in keys]
    return markdown_table([title, *(g.name for g in groups)], table)


def blimp_phenomena(e: dict[str, Any]) -> dict[str, float]:
    by = e["blimp"]["by_phenomenon"]
    return {"overall": e["blimp"]["overall"]} | {k: v["accuracy"] for k, v in by.items()}


def syntaxgym_circuits(e: dict[str, Any]) -> dict[str, float]:
    by = e["syntaxgym"]["by_circuit"]
    return {"overall": e["syntaxgym"]["overall"]} | {k: v["score"] for k, v in by.items()}


def agreement_attractors(e: dict[str, Any]) -> dict[str, float]:
    found = {}
    for name, result in e.get("agreement", {}).items():
        found[f"{name}, all"] = result["overall"]
        by = result["by_attractors"]
        found |= {f"{name}, {k} attractors": v["accuracy"] for k, v in by.items()}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run folders holding results.json and lm-eval.json")
    args = parser.parse_args()
    groups = group_runs(args.runs)
    for title, rows in (
        ("BLiMP phenomenon", blimp_phenomena),
        ("SyntaxGym circuit", syntaxgym_circuits),
        ("agreement", agreement_attractors),
    ):
        print(breakdown(groups, title, rows))
        print()


if __name__ == "__main__":
    main()
