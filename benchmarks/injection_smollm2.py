"""The cost of syntax injected into a real pretrained decoder, SmolLM2-135M (30 layers,
9 query heads over 3 key and value heads; ``smollm2-135m``): forward tokens per second
with ``distance`` (hard gate) and ``constituent`` (its causal form) in 3 heads of 2
layers against the plain model, in the same run, float32. A batch of 8 sentences of 32
pieces, one word a piece, right-branching trees; the syntax is made once per batch,
outside the timed pass, as a data pipeline makes it. Target: at most 1.2 times the plain
forward.

    python -m benchmarks.injection_smollm2 --threads 2
"""

from __future__ import annotations

import argparse
import copy
import time

import torch

from benchmarks.common import (
    add_run_arguments,
    finish_run_arguments,
    fmt,
    interleaved_median_ms,
    machine_info,
    machine_line,
    markdown_table,
    start_device,
    write_results,
)
from benchmarks.injection import _forward
from treeattn.models.packaged_lm import load_packaged_lm
from treeattn.models.syntax_injection import inject_syntax
from treeattn.parsing.tree_source import right_branching

MECHANISMS = ("distance", "constituent")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(parser, "injection_smollm2.json and .md", 1.0, "2 sentences of 8 pieces")
    args = finish_run_arguments(parser.parse_args())
    device = start_device(args)
    if device is None:
        return
    begin = time.perf_counter()
    plain, _ = load_packaged_lm("smollm2-135m")
    plain = plain.model.eval().to(device)  # the decoder stack, without the output layer
    batch, length = (2, 8) if args.quick else (8, 32)
    torch.manual_seed(args.seed)
    ids = torch.randint(3, plain.config.vocab_size, (batch, length), device=device)
    mask = torch.ones_like(ids)
    words = torch.arange(length, device=device).repeat(batch, 1)
    trees = [right_branching([f"w{i}" for i in range(length)])] * batch
    steps = {"plain": _forward(plain, ids, mask, "float32", {})}
    for mechanism in MECHANISMS:
        model = copy.deepcopy(plain)
        injection = inject_syntax(model, mechanism, layers=[14, 15], heads=[0, 1, 2])
        syntax = injection.inputs(trees, words, mask == 0)
        steps[mechanism] = _forward(model, ids, mask, "float32", {"syntax": syntax})
    times = interleaved_median_ms(steps, device, args.repeats, args.case_seconds, 1)
    ms = {name: value for name, (value, _) in times.items()}
    tokens = batch * length
    rows = [
        [name, fmt(tokens / ms[name] * 1e3, 0), fmt(ms[name] / ms["plain"], 2)] for name in steps
    ]
    markdown = markdown_table(["model", "tokens/s", "time / plain"], rows)
    info = machine_info(device)
    print(f"{machine_line(info)}\n\n{markdown}")
    write_results(args, "injection_smollm2", info, time.perf_counter() - begin, markdown, times=ms)


if __name__ == "__main__":
    main()
