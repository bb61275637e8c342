"""The Tree Transformer's constituent prior: our O(n^2) cumulative sum against the O(n^3)
triangular-matrix formulation of the original release, forward + backward.

Run from the repository root::

    python -m benchmarks.constituent_prior            # n = 50, 200, 800
    python -m benchmarks.constituent_prior --quick    # smoke run, a few seconds

Both take links (B, n-1) (B = 8, float32, uniform in (0.5, 1), seeded) that require grad
and give C (B, n, n), ``C[i, j] = prod_{k=i}^{j-1} a_k``, symmetric, 1 on the diagonal.

- ``ours``: ``treeattn.attention.constituent.constituent_prior``: one cumulative sum of log
  links (float64), one difference per pair.
- ``triangular``: the release's way, written here: the log links on the superdiagonal of
  an n x n matrix, multiplied by the upper-triangular matrix of ones on the right and
  again on the left, which sums every run of links in two (n x n) @ (n x n) products.

Time: median of forward + backward (the gradient of ``(C * w).sum()`` for a fixed random
``w``), the two called in turn each round (``common.interleaved_median_ms``). Memory: the
peak of live tensor bytes during one forward + backward (``common.peak_bytes``).
Agreement: the largest absolute difference of C and of the gradients, float32.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from functools import partial

import torch
import torch.nn.functional as F

from benchmarks.common import (
    add_run_arguments,
    finish_run_arguments,
    interleaved_median_ms,
    machine_info,
    machine_line,
    markdown_table,
    peak_bytes,
    start_device,
    write_results,
)
from treeattn.attention.constituent import SMALLEST_LINK, constituent_prior


def triangular_prior(links: torch.Tensor) -> torch.Tensor:
    """C (B, n, n) by two products with the triangular matrix of ones: O(n^3)."""
    n = links.shape[1] + 1
    log_links = links.clamp(min=SMALLEST_LINK).log()
    superdiagonal = torch.diag_embed(F.pad(log_links, (0, 1)))  # [k, k] = log a_k
    ones = torch.ones(n, n, dtype=links.dtype, device=links.device).triu()
    # runs[i, j] = sum_{k=i}^{j-1} log a_k for i < j: sums over k >= i (rows) and k < j.
    runs = ones @ superdiagonal @ (ones - torch.eye(n, dtype=links.dtype, device=links.device))
    upper = runs.exp().triu(1)
    return upper + upper.mT + torch.eye(n, dtype=links.dtype, device=links.device)


def prior_and_gradient(
    method: Callable[[torch.Tensor], torch.Tensor], links: torch.Tensor, weights: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """C and the gradient of ``(C * weights).sum()`` with respect to ``links``."""
    prior = method(links)
    (grad,) = torch.autograd.grad((prior * weights).sum(), links)
    return prior.detach(), grad


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.constituent_prior",
        description="Constituent prior: O(n^2) cumulative sum against the O(n^3) "
        "triangular-matrix products; time, peak memory and agreement.",
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 800], help="words n")
    parser.add_argument("--batch", type=int, default=8, help="sentences per batch (8)")
    add_run_arguments(parser, "constituent_prior.{json,md}", 2.0, "n = 20, 50, batch 2")
    return finish_run_arguments(parser.parse_args(argv), quick_sizes=[20, 50], quick_batch=2)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    device = start_device(args)
    if device is None:
        return 2
    info = machine_info(device)
    print(f"machine: {machine_line(info)}; batch {args.batch}, float32", flush=True)
    begin = time.perf_counter()
    rows = []
    methods: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "ours": constituent_prior,
        "triangular": triangular_prior,
    }
    for n in args.sizes:
        gen = torch.Generator().manual_seed(args.seed + n)
        links = (0.5 + 0.5 * torch.rand(args.batch, n - 1, generator=gen)).to(device)
        weights = torch.randn(args.batch, n, n, generator=gen).to(device)
        leaf = links.clone().requires_grad_()
        steps = {
            name: partial(prior_and_gradient, method, leaf, weights)
            for name, method in methods.items()
        }
        timed = interleaved_median_ms(
            steps,
            device,
            args.repeats,
            args.case_seconds,
        )
        peaks, outputs = {}, {}
        for name, step in steps.items():
            peaks[name], outputs[name] = peak_bytes(step, device)
        row = {
            "n": n,
            **{f"{name}_ms": timed[name][0] for name in methods},
            **{f"{name}_mib": peaks[name] / 2**20 for name in methods},
            "max_abs_diff_prior": (outputs["ours"][0] - outputs["triangular"][0])
            .abs()
            .max()
            .item(),
            "max_abs_diff_grad": (outputs["ours"][1] - outputs["triangular"][1]).abs().max().item(),
        }
        rows.append(row)
        print(
            f"n={n:<4} ours {row['ours_ms']:8.2f} ms {row['ours_mib']:8.1f} MiB | triangular "
            f"{row['triangular_ms']:8.2f} ms {row['triangular_mib']:8.1f} MiB | max |d C| "
            f"{row['max_abs_diff_prior']:.1e}, |d grad| {row['max_abs_diff_grad']:.1e}",
            flush=True,
        )
    elapsed = time.perf_counter() - begin
    table = markdown_table(
        [
            "n",
            "ours ms",
            "triangular ms",
            "time ratio",
            "ours MiB",
            "triangular MiB",
            "max abs diff C",
            "max abs diff grad",
        ],
        [
            [
                r["n"],
                f"{r['ours_ms']:.2f}",
                f"{r['triangular_ms']:.2f}",
                f"{r['ours_ms'] / r['triangular_ms']:.3f}",
                f"{r['ours_mib']:.1f}",
                f"{r['triangular_mib']:.1f}",
                f"{r['max_abs_diff_prior']:.1e}",
                f"{r['max_abs_diff_grad']:.1e}",
            ]
            for r in rows
        ],
    )
    print(table)
    write_results(args, "constituent_prior", info, elapsed, table, rows=rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
