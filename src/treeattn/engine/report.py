"""Summaries of finished runs: each run's scores, and their mean and standard deviation over
seeds; runs of several configurations side by side, one line each. The scores are whatever
the task reported (``<split>_<metric>`` in results.json), and a language model's overall
scores on targeted syntactic evaluation where ``treeattn lm-eval -o`` wrote them into the
run's folder as lm-eval.json (``blimp``, ``syntaxgym``, ``agreement_<set>``; a run scored
on the first pairs of each file only, ``--limit``, under a name that says so)."""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What the engine itself writes into results.json; every other number is a task's score.
RUN_KEYS = (
    "finished",
    "params",
    "precision",
    "train_seconds",
    "global_step",
    "best_epoch",
    "best_step",
)
# Where a run's targeted syntactic evaluation is kept (``treeattn lm-eval -o``).
LM_EVAL = "lm-eval.json"
# What ``--limit`` counts in each benchmark, for the name of a subset's score.
SUBSET_UNITS = {"blimp": "pairs a file", "syntaxgym": "items a suite"}


def lm_eval_scores(document: dict[str, Any]) -> dict[str, float]:
    """The overall scores of an lm-eval.json. A subset's (``limit`` set) are named as
    one, ``blimp (subset: 50 pairs a file)``, so that they never stand in a full score's
    column nor average with it."""
    limit = document.get("limit")
    if limit is None:
        return dict(document["headline"])
    return {
        f"{name} (subset: {limit} {SUBSET_UNITS.get(name, 'items a set')})": score
        for name, score in document["headline"].items()
    }


def load_run(run_dir: str | Path) -> dict[str, Any]:
    run_dir = Path(run_dir)
    results_path = run_dir / "results.json"
    if not results_path.is_file():
        raise FileNotFoundError(f"{results_path} not found: has the run finished?")
    results = json.loads(results_path.read_text(encoding="utf-8"))
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    lm_eval = run_dir / LM_EVAL
    if lm_eval.is_file():
        results.update(lm_eval_scores(json.loads(lm_eval.read_text(encoding="utf-8"))))
    return {"run": str(run_dir), "config": config, **results}


def score_names(results: dict[str, Any]) -> list[str]:
    """The task's scores in a results dict (``dev_accuracy``, ``test_f1``, ...), in order."""
    return [
        key
        for key, value in results.items()
        if key not in RUN_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool)
    ]


def held_out_score(names: list[str]) -> str:
    """The score a plot shows unless told: the first of a split that chose no checkpoint
    (test's, or CoLA's in-domain dev where there is no test), else the first."""
    return next((name for name in names if not name.startswith("dev_")), names[0])


def _setup(config: dict[str, Any]) -> dict[str, Any]:
    """The configuration without what varies between repetitions of one experiment."""
    return {k: v for k, v in config.items() if k not in ("seed", "out_dir")}


def mean_std(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def _column(name: str) -> str:
    return name.replace("_", " ")


def _flat(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _name(run_dir: str) -> str:
    """A configuration's name: its first run's folder without a trailing seed number
    (``runs/small-lr-s2`` -> ``small-lr``)."""
    name = Path(run_dir).name
    return re.sub(r"[-_.](s|seed)?\d+$", "", name) or name


@dataclass
class Configuration:
    """Runs of one configuration (they differ in seed and out_dir alone)."""

    name: str
    setup: dict[str, Any]
    runs: list[dict[str, Any]]

    def values(self, score: str) -> list[float]:
        return [run[score] for run in self.runs]


def group_runs(
    run_dirs: list[str | Path], complete: Callable[[dict], dict] = lambda config: config
) -> list[Configuration]:
    """Finished runs grouped by configuration, in the order first given. ``complete``
    fills in the defaults a saved config may lack (one saved before a key existed), so
    that runs of one configuration compare equal. Runs whose task reports other scores
    are refused: their numbers do not share columns."""
    groups: list[Configuration] = []
    for run_dir in run_dirs:
        run = load_run(run_dir)
        setup = _setup(complete(run["config"]))
        same = [g for g in groups if g.setup == setup]
        if same:
            same[0].runs.append(run)
        else:
            groups.append(Configuration(_name(run["run"]), setup, [run]))
    first = groups[0].runs[0]
    for group in groups:
        for run in group.runs:
            if score_names(run) != score_names(first):
                raise ValueError(
                    f"{run['run']} reports {', '.join(score_names(run))}, {first['run']} "
                    f"{', '.join(score_names(first))}: report runs of one task together"
                )
    names = [g.name for g in groups]
    for index, group in enumerate(groups):
        if names.count(group.name) > 1:
            group.name = f"{group.name} ({index + 1})"
    return groups


def differences(reference: Configuration, other: Configuration) -> str:
    """The settings in which ``other`` differs from ``reference``: ``key value (was)``."""
    before, after = _flat(reference.setup), _flat(other.setup)
    keys = [k for k in after if before.get(k, "-") != after[k]]
    keys += [k for k in before if k not in after]

    def shown(flat: dict[str, Any], key: str) -> str:  # as a config file writes it
        value = flat.get(key, "-")
        return value if isinstance(value, str) else json.dumps(value)

    return ", ".join(f"{k} {shown(after, k)} ({shown(before, k)})" for k in keys)


def format_report(groups: list[Configuration]) -> str:
    """Runs of one configuration (``group_runs``): one line per run, then mean ± sample
    standard deviation over the runs. Of several: one line per configuration
    (``format_comparison``)."""
    if len(groups) > 1:
        return format_comparison(groups)
    runs = groups[0].runs
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
    width = max(14, *(len(_column(name)) for name in scores))
    for name in scores:
        lines.append(f"{_column(name):<{width}} {mean_std([r[name] for r in runs])}")
    lines.append(f"{'parameters':<{width}} {runs[0]['params']:,}")
    return "\n".join(lines)


def format_comparison(groups: list[Configuration]) -> str:
    """One line per configuration: its seeds, each score's mean ± sample standard
    deviation over them and the mean training seconds; then how each configuration's
    settings differ from the first's."""
    scores = score_names(groups[0].runs[0])
    name_width = max(13, *(len(g.name) for g in groups))
    cells = {
        g.name: [mean_std(g.values(score)) for score in scores]
        + [f"{statistics.mean(g.values('train_seconds')):.0f}"]
        for g in groups
    }
    widths = [
        max(len(title), *(len(cells[g.name][i]) for g in groups))
        for i, title in enumerate([*map(_column, scores), "train s"])
    ]
    seeds = {g.name: ",".join(str(r["config"]["seed"]) for r in g.runs) for g in groups}
    seed_width = max(5, *(len(s) for s in seeds.values()))
    header = f"{'configuration':<{name_width}} {'seeds':>{seed_width}} " + " ".join(
        f"{title:>{w}}" for title, w in zip([*map(_column, scores), "train s"], widths, strict=True)
    )
    lines = [header, "-" * len(header)]
    for g in groups:
        row = " ".join(f"{cell:>{w}}" for cell, w in zip(cells[g.name], widths, strict=True))
        lines.append(f"{g.name:<{name_width}} {seeds[g.name]:>{seed_width}} {row}")
    lines.append("-" * len(header))
    lines.append(f"settings against {groups[0].name}:")
    lines.extend(f"  {g.name}: {differences(groups[0], g)}" for g in groups[1:])
    return "\n".join(lines)
