"""treeattn.engine: what every task shares (the training loop, configs, checkpoints,
schedules, data-parallel set-up, run reports). Tasks live in ``treeattn.tasks``."""
