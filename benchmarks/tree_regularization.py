"""The cost of tree regularization (``model.tree_loss: tree-regularization``) in a training
step of the classify task: the step with the loss against the plain step, in the same run,
on the same batch and the same starting weights, timed in interleaved rounds.

By default the step of ``configs/sst2-minilm-vanilla.yaml`` (plain fine-tuning of MiniLM
on SST-2, its gold trees), float32: one batch of the training split (the first of a
seeded shuffle, ``train.max_tokens`` words), zero_grad, the task's loss, backward, gradient
clipping and an AdamW step; and the loss's own forward and backward on states kept from
one pass, which is what it adds to a step (two whole steps timed on a busy machine differ
by more than that). The loss reads the backbone's pieces at the layers of each row
(``--layers``); its trees are made into tensors once, with the batch, as training does.
``--quick``: a tiny from-scratch encoder on generated ListOps (no data needed).

    OMP_NUM_THREADS=1 python -m benchmarks.tree_regularization --threads 1
"""

from __future__ import annotations

import argparse
import random
import time

import torch
from torch import nn

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
from treeattn.data.batching import bucket_batches
from treeattn.models.tree_loss import encoder_of, keeping_states
from treeattn.tasks import load_config, make_task

CONFIG = "configs/sst2-minilm-vanilla.yaml"
QUICK = [
    "data.train_size=64",
    "data.dev_size=8",
    "data.test_size=8",
    "model.d_model=32",
    "model.n_heads=2",
    "model.n_layers=2",
    "model.d_ff=64",
    "train.max_tokens=400",
]


def _step(task, model: nn.Module, batch, clip_norm: float):
    """One training step of ``task`` on ``batch``, with an optimizer of its own."""
    optimizer = torch.optim.AdamW(task.parameter_groups(model), lr=1e-5)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = task.loss(model, batch)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        optimizer.step()

    return step


def _loss_alone(task, model: nn.Module, batch):
    """The tree loss's own forward and backward, on the chosen layers' states of one
    training pass kept as leaves: what the loss adds to a step, without the noise of
    timing two whole steps on a busy machine."""
    encoder = encoder_of(model)
    with keeping_states(encoder, task.tree_loss.layers) as kept:
        task.loss(model, batch)
    states = [state.detach().requires_grad_(True) for state in kept]
    positions = encoder.state_positions(batch.inputs)

    def step() -> None:
        task.tree_loss(states, batch.tree_targets, positions).backward()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(parser, "tree_regularization.json and .md", 5.0, "tiny ListOps encoder")
    parser.add_argument("--config", default=CONFIG, help=f"the plain run (default {CONFIG})")
    parser.add_argument(
        "--layers",
        nargs="+",
        default=["3", "1,2,3,4,5,6"],
        help="the rows: the layers each scores, comma-separated (default: 3, and 1 to 6)",
    )
    args = finish_run_arguments(parser.parse_args())
    device = start_device(args)
    if device is None:
        return
    begin = time.perf_counter()
    config, overrides = (None, ["task=classify", *QUICK]) if args.quick else (args.config, [])
    if args.quick:
        args.layers = ["1", "1,2"]
    overrides += [f"seed={args.seed}", "train.progress=false"]
    plain = make_task(load_config(config, overrides))
    examples, where = plain.read(plain.train_split)
    plain.fit(examples)
    torch.manual_seed(args.seed)
    start = plain.build_model().to(device)
    rows, found = [], {}
    for layers in args.layers:
        chosen = [int(i) for i in layers.split(",")]
        tree = make_task(
            load_config(
                config,
                [
                    *overrides,
                    "model.tree_loss=tree-regularization",
                    f"model.tree_loss_options.layers={chosen}",
                ],
            )
        )
        tree.load_state_dict(plain.state_dict())
        data = tree.encode(examples, where)
        order = bucket_batches(data.lengths, tree.cfg.train.max_tokens, shuffle=False)
        indices = random.Random(args.seed).choice(order)
        batch = data.batch(indices).to(device)
        models = {
            name: task.build_model().to(device) for name, task in (("plain", plain), ("tree", tree))
        }
        for model in models.values():
            model.load_state_dict(start.state_dict())
            model.train()
        clip = plain.cfg.train.clip_norm
        steps = {
            "plain": _step(plain, models["plain"], batch, clip),
            "tree": _step(tree, models["tree"], batch, clip),
            "loss": _loss_alone(tree, models["tree"], batch),
        }
        times = interleaved_median_ms(steps, device, args.repeats, args.case_seconds, 1)
        ms = {name: value for name, (value, _) in times.items()}
        words = int((~batch.inputs.pad_mask).sum())
        found[layers] = {**ms, "sentences": len(indices), "words": words}
        rows.append(
            [
                layers,
                len(indices),
                words,
                fmt(ms["plain"], 0),
                fmt(ms["tree"], 0),
                fmt(ms["tree"] / ms["plain"], 3),
                fmt(ms["loss"], 1),
                fmt((ms["plain"] + ms["loss"]) / ms["plain"], 3),
            ]
        )
    headers = [
        "layers scored",
        "sentences",
        "words",
        "plain ms",
        "with TreeReg ms",
        "ratio",
        "the loss alone ms",
        "(plain + loss) / plain",
    ]
    markdown = markdown_table(headers, rows)
    info = machine_info(device)
    print(f"{machine_line(info)}\n\n{markdown}")
    write_results(
        args, "tree_regularization", info, time.perf_counter() - begin, markdown, times=found
    )


if __name__ == "__main__":
    main()
