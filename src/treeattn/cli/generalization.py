"""Commands that score hierarchical generalization (McCoy et al. 2020) of causal language
models trained on ``input output`` strings: generalize, generalize-curve."""

from __future__ import annotations

import argparse
import json
import sys

from treeattn.cli.arguments import positive
from treeattn.cli.io import write_output
from treeattn.cli.status import OK

WHAT = (
    "The output of each input is decoded greedily after the input (its task word last), up "
    "to the first '?' or '.', and scored as McCoy et al. score it: full-sequence accuracy, "
    "and over the pairs whose task word transforms (quest, PRESENT) the first word's shares "
    "(question formation: the main auxiliary, the first auxiliary, neither) or the main "
    "verb's (tense: agreeing with the subject, with the most recent noun, other)."
)


def _common(p: argparse.ArgumentParser, default_splits: list[str]) -> None:
    p.add_argument(
        "--split",
        nargs="+",
        default=default_splits,
        metavar="SPLIT",
        help=f"splits (dev, test, gen, train) or files of input<TAB>output lines (default: "
        f"{' '.join(default_splits)})",
    )
    p.add_argument("--limit", type=positive, help="only the first N pairs of each split")
    p.add_argument(
        "--batch-rows", type=positive, default=256, help="inputs decoded at once (default 256)"
    )
    p.add_argument("--device", default="auto", help="auto (default), cpu, cuda or cuda:N")
    p.add_argument(
        "--threads", type=positive, help="CPU threads for torch (default: torch's own choice)"
    )
    p.add_argument("-o", "--out", metavar="FILE", help="write the scores as JSON here")


def add_generalize(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generalize",
        help="a McCoy-strings language model's outputs: test accuracy, gen first-word shares",
        description="For a causal-lm checkpoint trained on the mccoy data set (words): "
        f"{WHAT} Prints a table; -o writes the scores as JSON, whole or not at all.",
    )
    p.add_argument("checkpoint", help="a best.pt, last.pt or step-K.pt of a causal-lm run")
    _common(p, ["test", "gen"])
    p.add_argument(
        "--by-subject",
        action="store_true",
        help="a row for each kind of main subject (none, PP, relative clause with or "
        "without a subject of its own) under each split",
    )
    p.set_defaults(run=_generalize)


def _set_threads(threads: int | None) -> None:
    if threads:
        import torch

        torch.set_num_threads(threads)


def _generalize(args: argparse.Namespace) -> int:
    from treeattn.analysis.generalization import score_checkpoint

    _set_threads(args.threads)
    scores = score_checkpoint(
        args.checkpoint,
        args.split,
        args.limit,
        args.batch_rows,
        args.device,
        progress=sys.stderr.isatty(),
    )
    print(scores.format(args.by_subject), end="")
    if args.out:
        write_output(json.dumps(scores.to_dict(), indent=2) + "\n", args.out)
        print(f"scores written to {args.out}")
    print(f"decoded in {scores.seconds:.1f} s", file=sys.stderr)
    return OK


def add_generalize_curve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generalize-curve",
        help="gen main-aux (or agree-subject) share at every checkpoint a run kept",
        description="For every step-K.pt of each causal-lm run on the mccoy data set "
        f"(train.keep_every=K): {WHAT} One table per run; --plot draws the headline share "
        "(and full-sequence accuracy, dashed) of the first split against updates, one line "
        "per run; -o writes every score as JSON. Each file is written whole or not at all.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folders holding step-K.pt files")
    _common(p, ["gen"])
    p.add_argument("--plot", metavar="FILE", help="draw the curves here (.png)")
    p.set_defaults(run=_generalize_curve)


def _generalize_curve(args: argparse.Namespace) -> int:
    from treeattn.analysis.generalization_curve import generalization_curve

    _set_threads(args.threads)
    curves = [
        generalization_curve(
            run,
            args.split,
            args.limit,
            args.batch_rows,
            args.device,
            progress=sys.stderr.isatty(),
        )
        for run in args.runs
    ]
    print("\n".join(curve.format() for curve in curves), end="")
    if args.out:
        text = json.dumps([curve.to_dict() for curve in curves], indent=2) + "\n"
        write_output(text, args.out)
        print(f"scores written to {args.out}")
    if args.plot:
        from treeattn.viz.generalization import plot_generalization

        split = args.split[0]
        if len({curve.headline for curve in curves}) > 1:
            raise ValueError("--plot: the runs are of different tasks; plot each task apart")
        headline = curves[0].headline
        lines = []
        for curve in curves:
            steps, shares = curve.series(split, headline)
            _, sequence = curve.series(split, "sequence_accuracy")
            lines.append((curve.run, steps, shares, sequence))
        print(f"plot written to {plot_generalization(lines, headline, split, args.plot)}")
    return OK
