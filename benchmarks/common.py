"""Helpers shared by the benchmark scripts: seeded random binary trees, machine
information, timing (median wall time after a warm-up), Markdown tables and the options
every script takes (``--repeats``, ``--case-seconds``, ``--device``, ``--threads``,
``--seed``, ``--out``, ``--quick``)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from treeattn.trees.tensors import TreeTensors, collate_trees, encode_tree
from treeattn.trees.tree import Tree


# ---------------------------------------------------------------- trees
def binary_spans(n: int, rng: random.Random | None) -> list[tuple[str, int, int]]:
    """Labeled spans of a binary tree over n >= 2 leaves: split at a random point when
    ``rng`` is given, in the middle otherwise. A stack, not recursion, so any n works."""
    if n < 2:
        raise ValueError(f"a binary tree needs at least 2 leaves, not {n}")
    spans, stack = [], [(0, n)]
    while stack:
        start, end = stack.pop()
        if end - start < 2:
            continue
        spans.append(("X", start, end))
        cut = rng.randint(start + 1, end - 1) if rng is not None else (start + end) // 2
        stack.extend([(cut, end), (start, cut)])
    return spans


def binary_tree(n: int, shape: str, rng: random.Random) -> Tree:
    """A binary tree over dummy words ``w0 .. w{n-1}``; ``shape`` is random or balanced."""
    if shape not in ("random", "balanced"):
        raise ValueError(f"shape must be 'random' or 'balanced', not {shape!r}")
    words = [f"w{i}" for i in range(n)]
    return Tree.from_spans(words, binary_spans(n, rng if shape == "random" else None))


def tree_batch(n: int, batch: int, shape: str, rng: random.Random) -> TreeTensors:
    return collate_trees([encode_tree(binary_tree(n, shape, rng))[1] for _ in range(batch)])


# ---------------------------------------------------------------- machine, timing, output
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(device: torch.device) -> dict:
    info = {
        "cpu": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "cpu_cores_usable": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": str(device),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def machine_line(info: dict) -> str:
    where = info.get("gpu") or f"{info['cpu']}, {info['torch_threads']} thread(s)"
    return f"{where}, torch {info['torch']}"


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_ms(
    step: Callable[[], object],
    device: torch.device,
    max_repeats: int,
    case_seconds: float,
    min_repeats: int = 2,
) -> tuple[float, int]:
    """Median wall time (ms) of ``step`` after one warm-up, and the repeats used: as many
    as fit in ``case_seconds`` judged by the warm-up, within [min_repeats, max_repeats]."""
    synchronize(device)
    begin = time.perf_counter()
    step()  # warm-up: first-call allocations, kernel selection
    synchronize(device)
    warm = time.perf_counter() - begin
    repeats = max(min(min_repeats, max_repeats), min(max_repeats, int(case_seconds / warm)))
    times = []
    for _ in range(repeats):
        synchronize(device)
        begin = time.perf_counter()
        step()
        synchronize(device)
        times.append((time.perf_counter() - begin) * 1e3)
    return statistics.median(times), repeats


def interleaved_median_ms(
    steps: dict[str, Callable[[], object]],
    device: torch.device,
    max_repeats: int,
    case_seconds: float,
    min_repeats: int = 2,
) -> dict[str, tuple[float, int]]:
    """Median wall time (ms) of each step and the rounds used, timed in rounds that run
    every step once, in an order drawn anew for each round (seeded): a slow spell of the
    machine then falls on all of them alike, which one-after-another timing does not give,
    and each step follows each other one equally often. (Rotating one order instead keeps
    who follows whom: with three steps, the first follows the third in two rounds of three,
    and on a CPU a step runs slower after one that fills the caches with its own data.)
    One warm-up round first; as many rounds as give each step about ``case_seconds``,
    within [min_repeats, max_repeats]."""
    names = list(steps)
    if not names:
        return {}
    synchronize(device)
    begin = time.perf_counter()
    for name in names:  # warm-up: first-call allocations, kernel selection
        steps[name]()
    synchronize(device)
    round_seconds = time.perf_counter() - begin
    budget = int(case_seconds * len(names) / round_seconds)
    repeats = max(min(min_repeats, max_repeats), min(max_repeats, budget))
    times: dict[str, list[float]] = {name: [] for name in names}
    order = random.Random(0)
    for _ in range(repeats):
        for name in order.sample(names, len(names)):
            synchronize(device)
            begin = time.perf_counter()
            steps[name]()
            synchronize(device)
            times[name].append((time.perf_counter() - begin) * 1e3)
    return {name: (statistics.median(times[name]), repeats) for name in names}


def peak_bytes(step: Callable[[], object], device: torch.device):
    """Peak bytes of tensors allocated during one call of ``step``, and what ``step``
    returned. On CUDA, ``max_memory_allocated`` less what was allocated before; on CPU, the
    largest running sum of the allocations and frees that ``torch.profiler`` records
    (tensors only: not memory that libraries take outside PyTorch's allocator)."""
    if device.type == "cuda":
        synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        result = step()
        synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before, result
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = step()
    events = [
        (e.start_ns(), e.nbytes())
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and e.device_type() == torch._C._autograd.DeviceType.CPU
    ]
    live = peak = 0
    for _, nbytes in sorted(events):
        live += nbytes  # frees are negative
        peak = max(peak, live)
    return peak, result


# ---------------------------------------------------------------- tables
def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


# ---------------------------------------------------------------- options
def add_run_arguments(
    parser: argparse.ArgumentParser,
    outputs: str,
    case_seconds: float,
    quick: str,
    repeats: int = 10,
) -> None:
    """Options every benchmark takes: repeats, device, threads, seed, output, --quick."""
    parser.add_argument(
        "--repeats",
        type=int,
        default=repeats,
        help=f"most timed repeats per case (default {repeats})",
    )
    parser.add_argument(
        "--case-seconds",
        type=float,
        default=case_seconds,
        help=f"rough time budget per timed case; slow cases get fewer repeats ({case_seconds:g})",
    )
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"output folder for {outputs} (default runs/benchmarks; runs/benchmarks/quick "
        "with --quick)",
    )
    parser.add_argument("--quick", action="store_true", help=f"{quick}, 1 repeat: a smoke run")


def finish_run_arguments(
    args: argparse.Namespace,
    quick_sizes: list[int] | None = None,
    quick_batch: int | None = None,
) -> argparse.Namespace:
    """The output folder, and with ``--quick`` one repeat and the quick sizes and batch
    (for benchmarks that have them)."""
    if args.out is None:
        # A smoke run must not overwrite the results of a full one.
        args.out = Path("runs/benchmarks/quick" if args.quick else "runs/benchmarks")
    if args.quick:
        args.repeats, args.case_seconds = 1, 0.0
        if quick_sizes is not None:
            args.sizes = quick_sizes
        if quick_batch is not None:
            args.batch = quick_batch
    return args


def start_device(args: argparse.Namespace) -> torch.device | None:
    """The device to time on (None, with a message, when CUDA is asked for but absent)."""
    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda but CUDA is not available", file=sys.stderr)
        return None
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    return torch.device(args.device)


def write_results(
    args: argparse.Namespace,
    benchmark: str,
    info: dict,
    seconds: float,
    markdown: str,
    **fields,
) -> None:
    """Write ``<out>/<benchmark>.json`` (the benchmark's name, machine, settings (the
    command-line options), wall seconds and ``fields``) and ``<out>/<benchmark>.md``."""
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    result = {
        "benchmark": benchmark,
        "machine": info,
        "settings": settings,
        "seconds": seconds,
        **fields,
    }
    (args.out / f"{benchmark}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"{benchmark}.md").write_text(markdown.rstrip("\n") + "\n")
    print(f"total {seconds:.0f} s; wrote {args.out / benchmark}.json and .md")
