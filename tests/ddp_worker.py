"""Run under torchrun by test_distributed.py: trains briefly, saves this replica's weights."""

import sys
from pathlib import Path

import torch

from treeattn.engine.distributed import setup_replica, teardown_replica
from treeattn.engine.trainer import Trainer
from treeattn.tasks import load_config, make_task

out_dir, *overrides = sys.argv[1:]
cfg = load_config(None, [*overrides, f"out_dir={out_dir}"])
replica = setup_replica("cpu")
trainer = Trainer(make_task(cfg), replica, resume=False)
# Stop before the end, where every replica would load the main one's best checkpoint.
trainer.run(stop_after_steps=3)
batches = trainer._epoch_batches(0)[:3]
seen = sorted(i for batch in batches for i in batch)
torch.save(
    {"model": trainer.model.state_dict(), "examples": torch.tensor(seen)},
    Path(out_dir) / f"replica{replica.rank}.pt",
)
teardown_replica(replica)
