"""A toy task written against the task protocol alone: count the words of a sentence.

Run as a script it trains one (``python -m tests.toy_task OUT_DIR [KEY=VALUE ...]``), so a
test can kill the process mid-run and resume it.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass

import torch
from torch import nn

from treeattn import plugins
from treeattn.data.batching import bucket_batches, pad_ids
from treeattn.engine.config import read_raw_config
from treeattn.engine.task import Selection, Task
from treeattn.engine.trainer import train


@dataclass
class CountData:
    size: int = 200
    longest: int = 12


@dataclass
class CountModel:
    dim: int = 8


@dataclass
class CountBatch:
    ids: torch.Tensor
    pad_mask: torch.Tensor
    counts: torch.Tensor

    def to(self, device):
        return CountBatch(self.ids.to(device), self.pad_mask.to(device), self.counts.to(device))


class CountSet:
    def __init__(self, sentences):
        self.sentences, self.lengths = sentences, [len(s) for s in sentences]

    def __len__(self):
        return len(self.sentences)

    def batch(self, indices):
        ids, pad_mask = pad_ids([self.sentences[i] for i in indices])
        return CountBatch(ids, pad_mask, (~pad_mask).sum(1).float())


@plugins.tasks.register
class CountTask(Task):
    name, Data, Model, headline = "count", CountData, CountModel, ("error",)
    selection = Selection("dev", "error", higher_is_better=False)
    final_splits = ("dev", "test")

    def read(self, source):
        seed = {"train": 1, "dev": 2, "test": 3}[source]
        rng, d = random.Random(seed), self.cfg.data
        size = d.size if source == "train" else 50
        words = [[rng.randint(1, 9) for _ in range(rng.randint(1, d.longest))] for _ in range(size)]
        return words, source

    def fit(self, train_examples):
        self.vocab_size = 10

    def state_dict(self):
        return {"vocab_size": self.vocab_size}

    def load_state_dict(self, state):
        self.vocab_size = state["vocab_size"]

    def encode(self, examples, where):
        return CountSet(examples)

    def build_model(self):
        dim = self.cfg.model.dim  # a sum of word vectors can count the words exactly
        bag = nn.EmbeddingBag(self.vocab_size, dim, mode="sum", padding_idx=0)
        return nn.Sequential(bag, nn.Linear(dim, 1))

    def _counts(self, model, batch):
        return model(batch.ids).squeeze(-1)

    def loss(self, model, batch):
        return ((self._counts(model, batch) - batch.counts) ** 2).mean()

    @torch.no_grad()
    def evaluate(self, model, data, device):
        errors = []
        for indices in bucket_batches(data.lengths, 256, shuffle=False):
            batch = data.batch(indices).to(device)
            errors.append((self._counts(model, batch) - batch.counts).abs())
        return {"error": torch.cat(errors).mean().item()}

    def read_inputs(self, lines, where):
        return [[int(w) for w in line.split()] for line in lines]

    @torch.no_grad()
    def predict(self, model, data, device, output_format=""):
        counts = [self._counts(model, data.batch([i]).to(device)) for i in range(len(data))]
        return [f"{count.item():.0f}" for count in counts]


def count_config(out_dir, *overrides):
    raw = read_raw_config(None, [f"out_dir={out_dir}", "train.progress=false", *overrides])
    return CountTask.config_from_dict(raw)


if __name__ == "__main__":
    train(CountTask(count_config(sys.argv[1], *sys.argv[2:])))
