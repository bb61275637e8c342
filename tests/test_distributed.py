import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.test_engine import TINY


@pytest.mark.slow
def test_two_cpu_replicas_end_with_equal_weights(tmp_path):
    worker = Path(__file__).with_name("ddp_worker.py")
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(Path(__file__).parents[1] / "src"),
    }
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
        str(worker), str(tmp_path), *TINY, "train.epochs=1",
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    first = torch.load(tmp_path / "replica0.pt", weights_only=True)
    second = torch.load(tmp_path / "replica1.pt", weights_only=True)
    saved = torch.load(tmp_path / "last.pt", weights_only=True)
    assert saved["global_step"] == 3
    # The replicas trained on different examples; only synchronised gradients keep their
    # weights equal.
    assert len(first["examples"]) and len(second["examples"])
    assert not set(first["examples"].tolist()) & set(second["examples"].tolist())
    for key, value in first["model"].items():
        assert torch.equal(value, second["model"][key]), key
        assert torch.equal(value, saved["model"][key]), key
