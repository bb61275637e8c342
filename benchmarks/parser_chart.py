"""The constituency training step of the chart parser: the structured hinge loss with
Hamming-augmented decoding (``treeattn.tasks.parse.hinge_loss``) and its backward, on a
whole batch at once against one sentence at a time.

Run from the repository root::

    python -m benchmarks.parser_chart --threads 1    # batch 32, n = 20, 40, 80 words
    python -m benchmarks.parser_chart --quick        # smoke run, a few seconds

Inputs (seeded): span label scores (B, n, n, L) float32 from N(0, 1), L = 60 labels
(``--labels``, about the PTB sample's count), label 0 the empty label with its score set to
0 as the parser fixes it; gold charts from random binary trees (``common.binary_spans``,
each span given a random label in 1..L-1, every other cell the empty label) built by
``treeattn.parsing.encoding.gold_chart``. Every sentence has exactly n words (no padding).

The timed step is the loss and its gradient with respect to the scores (the scores require
grad; ``torch.autograd.grad``):

- ``batched``: one ``hinge_loss`` call on the whole batch, the way treeattn trains (the
  loss-augmented best trees of all sentences come from one ``CKY(...).argmax``).
- ``one sentence at a time``: the same function called once per sentence on (1, n, n, L)
  slices in a Python loop (the way the authors' release decodes), the losses summed, one
  backward. ``batched / this`` is the batched time divided by this one.
- ``torch-struct``, ``supar`` (only where importable; otherwise a note says they were
  skipped): the same loss on the whole batch with the loss-augmented best tree from the
  library instead of ours. torch-struct's ``TreeCRF`` takes the same (B, n, n, L) chart;
  supar's ``ConstituencyCRF`` has no labels and takes fencepost (B, n+1, n+1) scores, so
  its timed step includes the max over labels, the per-span label argmax and turning its
  span lists back into a chart (as ``benchmarks.structs`` does): the same best tree.

Time is the median of up to ``--repeats`` steps after one warm-up (fewer for slow cases,
about ``--case-seconds``), the rows called in turn in every round
(``common.interleaved_median_ms``). Agreement: every row's loss against the batched loss
(the hinge loss is a mean over sentences, so one sentence at a time is compared as its sum
/ B), ``agrees`` when the relative difference is at most 1e-4, and the number of sentences
whose gradient (best tree - gold) equals the batched one's. Memory: the peak of live tensor
bytes during one batched step at n = 100 (``--memory-n``; with ``--quick`` the largest
quick size), from ``torch.profiler`` allocation events on CPU (``common.peak_bytes``).

Results go to ``--out`` as ``parser_chart.json`` and ``parser_chart.md``.
"""

from __future__ import annotations

import argparse
import importlib
import random
import time
import traceback
from collections.abc import Callable, Sequence
from functools import partial

import torch

from benchmarks.common import (
    add_run_arguments,
    binary_spans,
    finish_run_arguments,
    interleaved_median_ms,
    machine_info,
    machine_line,
    markdown_table,
    peak_bytes,
    start_device,
    write_results,
)
from benchmarks.structs import (
    NOT_INSTALLED,
    import_library,
    library_version,
    short,
    supar_spans_to_chart,
    to_fenceposts,
)
from treeattn.parsing.encoding import gold_chart
from treeattn.tasks.parse import hinge_loss

BATCHED, SINGLE = "batched", "one sentence at a time"
LIBRARIES = ("torch-struct", "supar")
TOLERANCE = 1e-4  # relative, on the loss
MIB = 2**20

Step = Callable[[], tuple[torch.Tensor, torch.Tensor]]


# ---------------------------------------------------------------- inputs
def random_case(
    n: int, batch: int, labels: int, seed: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded scores (B, n, n, L) float32 N(0, 1) with the empty label's at 0, the gold
    chart (B, n, n, L) of random binary trees with random labels, and lengths (all n)."""
    gen = torch.Generator().manual_seed(seed * 1000 + n)
    scores = torch.randn(batch, n, n, labels, generator=gen)
    scores[..., 0] = 0.0
    rng = random.Random(seed * 1000 + n)
    span_lists = [
        [(rng.randint(1, labels - 1), start, end) for _, start, end in binary_spans(n, rng)]
        for _ in range(batch)
    ]
    lengths = torch.full((batch,), n, dtype=torch.long)
    gold = gold_chart(span_lists, lengths, labels)
    return scores.to(device), gold.to(device), lengths.to(device)


# ---------------------------------------------------------------- steps
def batched_step(scores: torch.Tensor, gold: torch.Tensor, lengths: torch.Tensor):
    """Loss (mean over sentences) and its gradient, one call on the whole batch."""
    loss = hinge_loss(scores, gold, lengths)
    (grad,) = torch.autograd.grad(loss, scores)
    return loss.detach(), grad


def single_step(scores: torch.Tensor, gold: torch.Tensor, lengths: torch.Tensor):
    """Sum of the per-sentence losses, one call per (1, n, n, L) slice, and its gradient."""
    total = sum(
        hinge_loss(scores[b : b + 1], gold[b : b + 1], lengths[b : b + 1])
        for b in range(scores.shape[0])
    )
    (grad,) = torch.autograd.grad(total, scores)
    return total.detach(), grad


def hinge_from_best(scores: torch.Tensor, gold: torch.Tensor, best: torch.Tensor) -> torch.Tensor:
    """``hinge_loss``'s formula with the loss-augmented best chart ``best`` given."""
    best = best.detach().to(scores.dtype)
    margin = (scores * (best - gold)).flatten(1).sum(1) + ((1 - gold) * best).flatten(1).sum(1)
    return margin.mean()


def torch_struct_best(module, augmented: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    # On scores that require grad, as in benchmarks.structs (some of its argmaxes need it).
    x = augmented.requires_grad_()
    return module.TreeCRF(x, lengths=lengths).argmax


def supar_best(module, augmented: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """supar's unlabeled CKY on the best label's score per span, then that label."""
    structs = importlib.import_module("supar.structs")
    x = augmented.requires_grad_()
    spans = structs.ConstituencyCRF(to_fenceposts(x.amax(-1)), lengths).argmax
    chart = supar_spans_to_chart((spans, x.argmax(-1)), x.shape[-1])
    return chart.to(device=x.device)


def library_step(best_of, module, scores: torch.Tensor, gold: torch.Tensor, lengths):
    """The batched loss with the library's loss-augmented best tree, and its gradient."""
    augmented = scores.detach() + (1 - gold)
    loss = hinge_from_best(scores, gold, best_of(module, augmented, lengths))
    (grad,) = torch.autograd.grad(loss, scores)
    return loss.detach(), grad


BEST_OF = {"torch-struct": torch_struct_best, "supar": supar_best}


# ---------------------------------------------------------------- one size
def run_size(n: int, args, device: torch.device, modules: dict) -> list[dict]:
    """The rows of one size: time, loss and agreement with the batched step."""
    scores, gold, lengths = random_case(n, args.batch, args.labels, args.seed, device)
    x = scores.requires_grad_()
    candidates: dict[str, Step] = {
        BATCHED: partial(batched_step, x, gold, lengths),
        SINGLE: partial(single_step, x, gold, lengths),
    }
    for library, module in modules.items():
        candidates[library] = partial(library_step, BEST_OF[library], module, x, gold, lengths)
    outputs, failed, steps = {}, {}, {}
    for name, step in candidates.items():
        try:
            outputs[name] = step()
        except Exception as error:  # a library failing must not end the run
            if name in (BATCHED, SINGLE):
                raise
            failed[name] = f"error: {short(error)}"
            traceback.print_exc()
            continue
        steps[name] = step
    timed = interleaved_median_ms(steps, device, args.repeats, args.case_seconds)

    batched_loss, batched_grad = outputs[BATCHED]
    reference = batched_loss.item()
    rows = []
    for name in candidates:
        row: dict = {"n": n, "batch": args.batch, "method": name}
        if name in failed:
            rows.append(row | {"ms": None, "status": failed[name], "agrees": None})
            continue
        loss, grad = outputs[name]
        if name == SINGLE:  # the sum over sentences; the batched loss is their mean
            loss, grad = loss / args.batch, grad / args.batch
        rel = abs(loss.item() - reference) / max(abs(reference), 1e-12)
        # Per sentence, (best - gold) / B: the same exactly when the best tree is.
        same = (grad - batched_grad).abs().flatten(1).amax(1) <= 1e-3 / args.batch
        ms, repeats = timed[name]
        row |= {
            "ms": ms,
            "repeats": repeats,
            "status": "ok",
            "loss": loss.item(),
            "rel_diff_loss": rel,
            "agrees": rel <= TOLERANCE,
            "same_best_trees": int(same.sum()),
        }
        rows.append(row)
    batched_ms = timed[BATCHED][0]
    for row in rows:
        row["batched_over_this"] = None if row["ms"] is None else batched_ms / row["ms"]
    return rows


def memory_row(args, device: torch.device) -> dict:
    """Peak live tensor bytes of one batched step at ``--memory-n`` words."""
    n = args.memory_n
    scores, gold, lengths = random_case(n, args.batch, args.labels, args.seed, device)
    x = scores.requires_grad_()
    peak, _ = peak_bytes(partial(batched_step, x, gold, lengths), device)
    return {
        "n": n,
        "batch": args.batch,
        "labels": args.labels,
        "peak_mib": peak / MIB,
        "scores_mib": x.numel() * x.element_size() / MIB,
        "how": "torch.cuda.max_memory_allocated"
        if device.type == "cuda"
        else "torch.profiler CPU allocation events, peak of live bytes",
    }


# ---------------------------------------------------------------- tables
HEADERS = [
    "n",
    "method",
    "ms",
    "batched / this",
    "loss",
    "rel. diff from batched",
    f"agrees ({TOLERANCE:g})",
    "same best trees",
]


def table_rows(rows: list[dict]) -> list[list[str]]:
    table = []
    for row in rows:
        if row["ms"] is None:
            table.append([str(row["n"]), row["method"], row["status"].split(":", 1)[0]] + ["-"] * 5)
            continue
        table.append(
            [
                str(row["n"]),
                row["method"],
                f"{row['ms']:.2f}",
                f"{row['batched_over_this']:.3f}",
                f"{row['loss']:.4f}",
                f"{row['rel_diff_loss']:.1e}",
                "yes" if row["agrees"] else "NO",
                f"{row['same_best_trees']}/{row['batch']}",
            ]
        )
    return table


# ---------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.parser_chart",
        description=(
            "Chart parser training step: structured hinge loss with Hamming-augmented CKY "
            "decoding + backward, batched against one sentence at a time (and torch-struct, "
            "supar where installed). Run from the repository root."
        ),
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 40, 80], help="words n")
    parser.add_argument("--batch", type=int, default=32, help="sentences per batch (32)")
    parser.add_argument("--labels", type=int, default=60, help="span labels, empty included (60)")
    parser.add_argument(
        "--memory-n",
        type=int,
        default=None,
        help="words n of the batched step's peak memory (100; with --quick the largest size)",
    )
    add_run_arguments(parser, "parser_chart.{json,md}", 3.0, "n = 10, 20, batch 4")
    args = finish_run_arguments(parser.parse_args(argv), quick_sizes=[10, 20], quick_batch=4)
    if args.memory_n is None:
        args.memory_n = max(args.sizes) if args.quick else 100
    if min(args.sizes + [args.memory_n]) < 2 or args.labels < 2:
        parser.error("every size needs n >= 2 words (a binary tree) and --labels >= 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    device = start_device(args)
    if device is None:
        return 2
    info = machine_info(device)
    modules, notes = {}, []
    for library in LIBRARIES:
        module, why = import_library(library)
        if why is None and library == "supar":
            try:
                importlib.import_module("supar.structs")  # ConstituencyCRF
            except ImportError as error:
                module, why = None, f"cannot import supar.structs: {error}"
        if module is None:
            notes.append(f"{library}: {why}; its row is skipped")
        else:
            modules[library] = module
    versions = {lib: library_version(lib) for lib in LIBRARIES}
    print(
        f"machine: {machine_line(info)}; batch {args.batch}, {args.labels} labels, float32; "
        + ", ".join(f"{lib} {versions[lib] or NOT_INSTALLED}" for lib in LIBRARIES),
        flush=True,
    )
    if "torch-struct" in modules:
        notes.append(
            "torch-struct: TreeCRF(...).argmax on the loss-augmented (B, n, n, L) chart (same "
            "layout as ours), then the same loss formula as hinge_loss"
        )
    if "supar" in modules:
        notes.append(
            "supar: ConstituencyCRF(...).argmax on fencepost (B, n+1, n+1) scores, the max "
            "over labels of the loss-augmented chart; the timed step includes that max, the "
            "per-span label argmax and building the chart from its span lists"
        )

    begin = time.perf_counter()
    rows: list[dict] = []
    for n in args.sizes:
        for row in run_size(n, args, device, modules):
            rows.append(row)
            if row["ms"] is None:
                print(f"n={n:<3} {row['method']:>22}: {row['status']}", flush=True)
                notes.append(f"{row['method']} at n = {n}: {row['status']}")
                continue
            print(
                f"n={n:<3} {row['method']:>22}: {row['ms']:9.2f} ms, batched/this "
                f"{row['batched_over_this']:.3f}, loss {row['loss']:.4f} (rel. diff "
                f"{row['rel_diff_loss']:.1e}), same best trees {row['same_best_trees']}/"
                f"{row['batch']}",
                flush=True,
            )
    memory = memory_row(args, device)
    print(
        f"peak memory of the batched step at n = {memory['n']}, batch {memory['batch']}: "
        f"{memory['peak_mib']:.1f} MiB (the scores alone: {memory['scores_mib']:.1f} MiB)",
        flush=True,
    )
    elapsed = time.perf_counter() - begin

    table = markdown_table(HEADERS, table_rows(rows))
    print(table)
    for line in notes:
        print(line)
    libs = ", ".join(f"{lib} {versions[lib] or NOT_INSTALLED}" for lib in LIBRARIES)
    markdown = [
        "# Chart parser training step: hinge loss with loss-augmented CKY, batched vs one "
        "sentence at a time",
        "",
        f"Machine: {machine_line(info)} ({info['cpu_cores']} cores); {libs}. Batch "
        f"{args.batch}, every sentence exactly n words, {args.labels} labels (0 the empty "
        "label, scored 0), float32 N(0, 1) scores, gold charts of random binary trees. "
        "Step: treeattn.tasks.parse.hinge_loss + gradient w.r.t. the scores; median ms of "
        f"up to {args.repeats} steps. batched / this: the batched time over the row's. "
        "The loss is a mean over sentences (one sentence at a time: the sum / B); same best "
        "trees: sentences whose gradient (best - gold) equals the batched one's.",
        "",
        table,
        "",
        f"Peak memory of the batched step at n = {memory['n']}, batch {memory['batch']}, "
        f"{memory['labels']} labels: {memory['peak_mib']:.1f} MiB ({memory['how']}; the "
        f"scores alone are {memory['scores_mib']:.1f} MiB).",
        "",
    ]
    if notes:
        markdown += ["Notes:", "", *[f"- {line}" for line in notes], ""]
    write_results(
        args,
        "parser_chart",
        info,
        elapsed,
        "\n".join(markdown),
        libraries={lib: versions[lib] or NOT_INSTALLED for lib in LIBRARIES},
        tolerance=TOLERANCE,
        rows=rows,
        memory=memory,
        notes=notes,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
