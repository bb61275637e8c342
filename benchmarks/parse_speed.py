"""Parsing raw text with the shipped parsers: sentences per second and, on the PTB sample's
test split, what int8 quantization costs in accuracy.

For each parser (``--models``, default ``accurate`` and ``fast``; float32 weights as loaded
and, unless ``--no-int8``, in int8 as ``Parser.load(int8=True)``), the time to
load it and parse every line of a raw-text file (PTB tokenization inside, batches sorted
by length, inference mode), as ``treeattn parse`` does; two inputs: the 413 test sentences
of the PTB sample (their words joined by spaces, brackets and quotes written as in text)
and 2,000 lines of Multi30k val English (its 1,014 lines repeated). Each measurement is
the median of ``--repeats`` runs in interleaved rounds. Then EVALB F1, tagging accuracy
and UAS/LAS on the test split (gold words, as ``treeattn evaluate``), float32 against
int8, and for the accurate parser with the rest of its pretrained encoder in int8 as
well (its feed-forward layers, which ``int8`` leaves in float32; per tensor, per output
channel).

    OMP_NUM_THREADS=2 python -m benchmarks.parse_speed --threads 2
"""

from __future__ import annotations

import argparse
import statistics
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

# PTB escapes written back as the characters a text has.
SCORES = ("f1", "tagging", "uas", "las")
# Ways to quantize the pretrained encoder's layers as well, scored beside ``int8``.
ENCODER_QCONFIGS = {
    "per tensor": default_dynamic_qconfig,
    "per channel": per_channel_dynamic_qconfig,
}
TEXT_OF = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "``": '"', "''": '"'}


def ptb_test_text() -> list[str]:
    return [
        " ".join(TEXT_OF.get(w, w) for w in entry.tree.leaves())
        for entry in load_ptb_sample("test", clean=True)
    ]


def multi30k_text(lines: int) -> list[str]:
    val = [line for line in read_lines(multi30k_path("val", "en")) if line.strip()]
    return (val * (lines // len(val) + 1))[:lines]


def parse_seconds(model: str, int8: bool, lines: list[str]) -> float:
    """Load the parser and parse ``lines``, as ``treeattn parse`` does: wall seconds."""
    begin = time.perf_counter()
    Parser.load(model, device="cpu", int8=int8).parse(lines)
    return time.perf_counter() - begin


def label(model: str, int8: bool) -> str:
    return f"{model} int8" if int8 else model


def accuracy(model: str, int8: bool, encoder_qconfig: Any = None) -> dict[str, float]:
    """Test-split scores; with ``encoder_qconfig`` a pretrained encoder's float32 linear
    layers are quantized too (what ``int8`` leaves out), to show what that costs."""
    parser = Parser.load(model, device="cpu", int8=int8)
    network = parser.model
    if encoder_qconfig is not None:
        layers = {
            name: encoder_qconfig
            for name, module in network.named_modules()
            if name.startswith("backbone.") and type(module) is torch.nn.Linear
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            network = quantize_dynamic(network, layers, dtype=torch.qint8)
    task = ParseTask.from_parser(parser)
    examples, where = task.read("test")
    scores = task.evaluate(network, task.encode(examples, where), parser.device)
    return {k: scores[k] for k in SCORES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(parser, "parse_speed.json and .md", 0.0, "20 lines of each input", 3)
    parser.add_argument("--models", nargs="+", default=["accurate", "fast"])
    parser.add_argument("--no-int8", action="store_true", help="float32 weights only")
    parser.add_argument("--lines", type=int, default=2000, help="Multi30k lines (2000)")
    parser.add_argument("--no-accuracy", action="store_true", help="speed only, no test scores")
    args = finish_run_arguments(parser.parse_args())
    if start_device(args) is None:
        return
    begin = time.perf_counter()
    inputs = {"PTB test": ptb_test_text(), "Multi30k val": multi30k_text(args.lines)}
    if args.quick:
        inputs = {name: lines[:20] for name, lines in inputs.items()}
    variants = [(m, q) for m in args.models for q in ((False,) if args.no_int8 else (False, True))]
    rows, speed = [], []
    for name, lines in inputs.items():
        times: dict[tuple[str, bool], list[float]] = {v: [] for v in variants}
        for _ in range(args.repeats):
            for variant in variants:  # interleaved: a slow spell falls on all alike
                times[variant].append(parse_seconds(*variant, lines))
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
    markdown = markdown_table(["input (lines)", "parser", "seconds (median)", "sentences/s"], rows)
    scores = {}
    if not args.quick and not args.no_accuracy:
        scores = {label(*v): accuracy(*v) for v in variants}
        if "accurate" in args.models and not args.no_int8:
            for name, qconfig in ENCODER_QCONFIGS.items():
                found = accuracy("accurate", True, qconfig)
                scores[f"accurate int8, whole encoder ({name})"] = found
        markdown += "\n\nPTB sample test, gold words:\n\n" + markdown_table(
            ["parser", "F1", "tagging", "UAS", "LAS"],
            [[name, *(fmt(s[k], 2) for k in SCORES)] for name, s in scores.items()],
        )
    info = machine_info(torch.device("cpu"))
    print(f"{machine_line(info)}\n\n{markdown}")
    write_results(
        args, "parse_speed", info, time.perf_counter() - begin, markdown, speed=speed, scores=scores
    )


if __name__ == "__main__":
    main()
