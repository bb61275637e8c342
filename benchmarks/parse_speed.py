"""Parsing raw text with the shipped parsers: sentences per second and, on the PTB sample's
test split, what int8 quantization costs in accuracy.

For each parser (``--models``, default ``accurate`` and ``fast``; float32 weights as loaded
and, unless ``--no-int8``, in int8 as ``Parser.load(int8=True)``), the time to
load it and parse every line of a raw-text file (PTB tokenization inside, batches sorted
by length, inference mode), as ``treeattn parse`` does; two inputs: the 413 test sentences
of the PTB sample (their words joined by spaces, brackets and quotes written as in text)
and 2,000 lines of Multi30k val English (its 1,014 lines repeated). Each measurement is
the median of ``--repeats`` runs in interleaved rounds. The PTB test is also timed as a
user's ``treeattn parse`` sees it: a new process, Python and torch started too. Then the
scores of ``treeattn evaluate`` on the split ``--split`` (gold words: EVALB F1, tags,
UAS/LAS; the joint parser's EWT scores too), float32 against int8, and for the accurate
parser with more of its pretrained encoder in int8 (its feed-forward layers, which
``int8`` leaves in float32: each of the two, both per output channel, both per tensor).
Choose on dev (``--split dev --no-speed``), report on test.

    OMP_NUM_THREADS=2 python -m benchmarks.parse_speed --threads 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import warnings
from typing import Any

import torch
from torch.ao.quantization import (
    default_dynamic_qconfig,
    per_channel_dynamic_qconfig,
    quantize_dynamic,
)

from benchmarks.common import (
    add_run_arguments,
    finish_run_arguments,
    fmt,
    machine_info,
    machine_line,
    markdown_table,
    start_device,
    write_results,
)
from treeattn.data.multi30k import multi30k_path, read_lines
from treeattn.data.ptb import load_ptb_sample
from treeattn.parsing import Parser
from treeattn.tasks.parse import ParseTask

# The scores shown, where a parser has them: PTB F1 and tags (``tagging_ptb`` for the joint
# parser), EWT tags in the WSJ's convention and EWT's own, UAS/LAS.
SCORES_SHOWN = ("f1", "tagging", "tagging_ptb", "tagging_ud", "tagging_ud_raw", "uas", "las")
# More of the pretrained encoder in int8 than ``int8`` puts there, scored beside it: its
# feed-forward layers (a layer's last name), with a scale per output channel or per tensor.
ENCODER_INT8 = {
    "feed-forward in": (("feed_in",), per_channel_dynamic_qconfig),
    "feed-forward out": (("feed_out",), per_channel_dynamic_qconfig),
    "feed-forward": (("feed_in", "feed_out"), per_channel_dynamic_qconfig),
    "feed-forward, per tensor": (("feed_in", "feed_out"), default_dynamic_qconfig),
}
# PTB escapes written back as the characters a text has.
TEXT_OF = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "``": '"', "''": '"'}


def ptb_test_text() -> list[str]:
    return [
        " ".join(TEXT_OF.get(w, w) for w in entry.tree.leaves())
        for entry in load_ptb_sample("test", clean=True)
    ]


def multi30k_text(lines: int) -> list[str]:
    val = [line for line in read_lines(multi30k_path("val", "en")) if line.strip()]
    return (val * (lines // len(val) + 1))[:lines]


def parse_seconds(model: str, int8: bool, lines: list[str], threads: int | None) -> float:
    """Load the parser and parse ``lines``, as ``treeattn parse`` does: wall seconds
    (``threads`` are this process's, set already; ``process_seconds`` reads them)."""
    begin = time.perf_counter()
    Parser.load(model, device="cpu", int8=int8).parse(lines)
    return time.perf_counter() - begin


def process_seconds(model: str, int8: bool, lines: list[str], threads: int | None) -> float:
    """Wall seconds of a ``treeattn parse`` process given ``lines`` on its input: Python,
    torch and the parser loaded, then the parse (``threads``: its ``OMP_NUM_THREADS``)."""
    command = [sys.executable, "-m", "treeattn.cli", "parse", "--model", model]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    text = "".join(line + "\n" for line in lines)
    begin = time.perf_counter()
    subprocess.run(
        [*command, *(["--int8"] if int8 else [])],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return time.perf_counter() - begin


def label(model: str, int8: bool) -> str:
    return f"{model} int8" if int8 else model


def accuracy(
    model: str,
    int8: bool,
    split: str,
    more: tuple[tuple[str, ...], Any] | None = None,
    limit: int | None = None,
) -> dict[str, float]:
    """Scores on ``split`` (``limit`` of its sentences, spread over it) as ``treeattn
    evaluate`` gives them; ``more``: (names, qconfig) of a pretrained encoder's float32
    linear layers to quantize as well (``ENCODER_INT8``), to show what that costs."""
    parser = Parser.load(model, device="cpu", int8=int8)
    network = parser.model
    if more is not None:
        names, qconfig = more
        layers = {
            name: qconfig
            for name, module in network.named_modules()
            if name.startswith("backbone.")
            and type(module) is torch.nn.Linear
            and name.rsplit(".", 1)[-1] in names
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            network = quantize_dynamic(network, layers, dtype=torch.qint8)
    task = ParseTask.from_parser(parser)
    examples, where = task.read(split)
    if limit is not None:  # spread over the split: the joint parser's EWT is its second half
        examples = examples[:: max(1, len(examples) // limit)][:limit]
    scores = task.evaluate(network, task.encode(examples, where), parser.device)
    return {k: v for k, v in scores.items() if isinstance(v, float)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    quick = "20 lines of each input, 20 sentences scored"
    add_run_arguments(parser, "parse_speed.json and .md", 0.0, quick, 3)
    parser.add_argument("--models", nargs="+", default=["accurate", "fast"])
    parser.add_argument("--no-int8", action="store_true", help="float32 weights only")
    parser.add_argument("--lines", type=int, default=2000, help="Multi30k lines (2000)")
    parser.add_argument("--no-accuracy", action="store_true", help="speed only, no scores")
    parser.add_argument("--no-speed", action="store_true", help="scores only")
    parser.add_argument("--split", default="test", choices=["dev", "test"], help="(test)")
    args = finish_run_arguments(parser.parse_args())
    if start_device(args) is None:
        return
    begin = time.perf_counter()
    ptb = ptb_test_text()
    # (input, lines, how each is timed): the last as a user's command sees it, start-up in.
    inputs = [
        ("PTB test", ptb, parse_seconds),
        ("Multi30k val", multi30k_text(args.lines), parse_seconds),
        ("PTB test, a treeattn parse process", ptb, process_seconds),
    ]
    if args.quick:
        inputs = [(name, lines[:20], timer) for name, lines, timer in inputs]
    if args.no_speed:
        inputs = []
    variants = [(m, q) for m in args.models for q in ((False,) if args.no_int8 else (False, True))]
    rows, speed = [], []
    for name, lines, timer in inputs:
        times: dict[tuple[str, bool], list[float]] = {v: [] for v in variants}
        for _ in range(args.repeats):
            for variant in variants:  # interleaved: a slow spell falls on all alike
                times[variant].append(timer(*variant, lines, args.threads))
        for (model, int8), seconds in times.items():
            median = statistics.median(seconds)
            rows.append(
                [
                    f"{name} ({len(lines)})",
                    label(model, int8),
                    fmt(median, 2),
                    fmt(len(lines) / median, 0),
                ]
            )
            speed.append(
                {
                    "input": name,
                    "sentences": len(lines),
                    "parser": model,
                    "int8": int8,
                    "seconds": seconds,
                }
            )
    markdown = ""
    if speed:
        header = ["input (lines)", "parser", "seconds (median)", "sentences/s"]
        markdown = markdown_table(header, rows) + "\n\n"
    scores = {}
    if not args.no_accuracy:
        limit = 20 if args.quick else None
        scores = {label(*v): accuracy(*v, args.split, limit=limit) for v in variants}
        if "accurate" in args.models and not args.no_int8:
            for name, more in ENCODER_INT8.items():
                found = accuracy("accurate", True, args.split, more, limit)
                scores[f"accurate int8 + {name}"] = found
        shown = [k for k in SCORES_SHOWN if any(k in s for s in scores.values())]
        title = f"The {args.split} split, gold words (PTB sample; the joint parser's EWT too):"
        markdown += f"{title}\n\n" + markdown_table(
            ["parser", *shown],
            [[name, *(fmt(s.get(k), 2) for k in shown)] for name, s in scores.items()],
        )
    info = machine_info(torch.device("cpu"))
    print(f"{machine_line(info)}\n\n{markdown}")
    write_results(
        args, "parse_speed", info, time.perf_counter() - begin, markdown, speed=speed, scores=scores
    )


if __name__ == "__main__":
    main()
