"""The training loop: warm-up, clipping, bucketed batches, evaluation each epoch, best and
last checkpoints, resume after any interruption, JSONL metrics and a learning-curve PNG.

Two tasks share it: sentence classification (model selection by dev accuracy) and, for the
``text`` data set, masked language modelling (by dev perplexity)."""

from __future__ import annotations

import json
import math
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from treeattn.data.batching import bucket_batches, shard_batches
from treeattn.data.vocab import Vocab
from treeattn.engine import masked_lm
from treeattn.engine.checkpoint import load_checkpoint, save_checkpoint
from treeattn.engine.classification import (
    TREE_ENCODERS,
    batch_loss,
    build_model,
    check_lengths,
    encode_split,
    evaluate,
    node_labels,
    uses_trees,
)
from treeattn.engine.config import Config
from treeattn.engine.datasets import TEXT, load_split
from treeattn.engine.distributed import Replica, setup_replica, teardown_replica
from treeattn.viz.curves import plot_learning_curve

LAST, BEST, METRICS, RESULTS, CURVE = (
    "last.pt",
    "best.pt",
    "metrics.jsonl",
    "results.json",
    "learning_curve.png",
)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def warmup_linear_decay(warmup: int, total: int, min_ratio: float):
    """Learning-rate factor: linear warm-up over ``warmup`` steps, then linear decay to
    ``min_ratio`` at step ``total``."""

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 1.0 - (1.0 - min_ratio) * progress

    return factor


class _StopRequest:
    """Turns SIGINT/SIGTERM into a flag read between steps, so training stops at a clean
    point and saves a checkpoint; a second signal stops at once."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopRequest:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread: leave signals alone
                pass
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def _rng_state(device: torch.device) -> dict[str, torch.Tensor]:
    """Random-number state that dropout draws from, so a resumed run continues it."""
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict[str, torch.Tensor], device: torch.device) -> None:
    torch.set_rng_state(state["cpu"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


class _LossMeter:
    """Sums losses on the device and reads them only when asked: reading a value every
    step would make the host wait for the device."""

    def __init__(self, device: torch.device) -> None:
        self.total = torch.zeros((), device=device)
        self.count = 0

    def add(self, loss: torch.Tensor) -> None:
        self.total += loss.detach()
        self.count += 1

    def mean_and_reset(self) -> float:
        mean = self.total.item() / max(1, self.count)
        self.total.zero_()
        self.count = 0
        return mean


def _replica_seed(seed: int, rank: int, step: int) -> int:
    """A seed of a replica other than the main one, distinct per rank and resume point."""
    return seed + 1_000_003 * rank + 7_919 * step


def _check_same_setup(path: Path, saved_json: str, cfg: Config) -> None:
    """Refuse to resume a checkpoint of another experiment, naming what differs."""
    saved = Config.from_dict(json.loads(saved_json), where=f"{path} config").resume_key()
    current = cfg.resume_key()
    if saved == current:
        return

    def flat(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in tree.items():
            if isinstance(value, dict) and key != "attention_options":
                out.update(flat(value, f"{prefix}{key}."))
            else:
                out[prefix + key] = value
        return out

    old, new = flat(saved), flat(current)
    changes = ", ".join(f"{k}: {old[k]!r} -> {new[k]!r}" for k in sorted(old) if old[k] != new[k])
    raise ValueError(
        f"{path} belongs to a run with another configuration ({changes}); "
        "use another out_dir, or start afresh with --no-resume"
    )


def _append_jsonl(path: Path, record: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def _truncate_log(path: Path, after_step: int) -> None:
    """Drop records logged after the checkpoint being resumed, so no step is logged twice."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short when the run was killed
        if record["step"] <= after_step:
            kept.append(line)
    path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


def train(cfg: Config, resume: bool = True, stop_after_steps: int | None = None) -> dict[str, Any]:
    """Train the configured model; returns the results dict also written to results.json.

    With ``resume`` (the default) a ``last.pt`` in ``cfg.out_dir`` is picked up where it
    stopped. ``stop_after_steps`` stops (with a checkpoint) once that many optimizer steps
    have run in total, as an interruption would.
    """
    replica = setup_replica(cfg.train.device)
    try:
        return fit(cfg, replica, resume, stop_after_steps)[1]
    finally:
        teardown_replica(replica)


def fit(
    cfg: Config, replica: Replica, resume: bool = True, stop_after_steps: int | None = None
) -> tuple[nn.Module, dict[str, Any]]:
    """``train`` for an already set-up replica; returns this replica's model too."""
    trainer = Trainer(cfg, replica, resume)
    results = trainer.run(stop_after_steps)
    return trainer.model, results


@dataclass
class Progress:
    """Where a run stands; saved in every full checkpoint."""

    epoch: int = 0
    step_in_epoch: int = 0
    global_step: int = 0
    best_score: float | None = None  # dev accuracy, or dev perplexity for masked LM
    best_epoch: int = -1
    train_seconds: float = 0.0


class Trainer:
    """One training run: its data, model, optimiser and progress, and the loop over them."""

    def __init__(self, cfg: Config, replica: Replica, resume: bool = True) -> None:
        cfg.validate()  # also for configs built in code rather than loaded
        self.cfg, self.replica = cfg, replica
        self.out = Path(cfg.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.last_path = self.out / LAST
        torch.manual_seed(cfg.seed)
        self.masked_lm = cfg.data.name == TEXT
        self.score_name = "perplexity" if self.masked_lm else "accuracy"
        trees = uses_trees(cfg)
        splits = {name: load_split(cfg.data, name, trees) for name in ("train", "dev", "test")}
        for name, rows in splits.items():  # before training, not after hours of it
            check_lengths(rows, cfg.model.max_length, f"{cfg.data.name} {name}")

        state = load_checkpoint(self.last_path) if resume and self.last_path.exists() else None
        if state is not None:
            _check_same_setup(self.last_path, state["config"], cfg)
        train_words = (ex.tokens for ex in splits["train"])
        self.vocab = (
            Vocab(state["vocab"]) if state else Vocab.build(train_words, cfg.data.min_count)
        )
        self.node_vocab = None
        if trees:
            binary = TREE_ENCODERS[cfg.model.attention][1]
            train_labels = (node_labels(ex, binary) for ex in splits["train"])
            self.node_vocab = Vocab(state["node_vocab"]) if state else Vocab.build(train_labels)
        self.train_set, self.dev_set, self.test_set = (
            encode_split(cfg, rows, self.vocab, self.node_vocab, f"{cfg.data.name} {name}")
            for name, rows in splits.items()
        )
        if self.masked_lm:
            split = tuple(cfg.data.mask_split)
            self.masking = masked_lm.Masking(cfg.data.mask_rate, split, len(self.vocab))
            self.masking.check(f"{cfg.data.name} config")
        node_vocab_size = len(self.node_vocab) if trees else 0
        self.model = build_model(cfg, len(self.vocab), node_vocab_size).to(replica.device)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=cfg.train.lr, weight_decay=cfg.train.weight_decay
        )
        total_steps = sum(len(self._epoch_batches(e)) for e in range(cfg.train.epochs))
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer,
            warmup_linear_decay(cfg.train.warmup_steps, total_steps, cfg.train.min_lr_ratio),
        )
        self.progress = Progress()
        if state is not None:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.scheduler.load_state_dict(state["scheduler"])
            self.progress = Progress(**{k: state[k] for k in asdict(self.progress)})
            if replica.is_main:
                _set_rng_state(state["rng"], replica.device)
                _truncate_log(self.out / METRICS, self.progress.global_step)
            else:  # only the main replica's random state is saved
                torch.manual_seed(_replica_seed(cfg.seed, replica.rank, self.progress.global_step))
        else:
            if not replica.is_main:
                # Replicas start alike (DDP copies the main one's weights) but draw their
                # own dropout masks.
                torch.manual_seed(_replica_seed(cfg.seed, replica.rank, 0))
            if replica.is_main:
                # Nothing of an earlier run in this folder may pass for this one's.
                for name in (METRICS, RESULTS, CURVE, BEST, LAST):
                    (self.out / name).unlink(missing_ok=True)
                config_text = json.dumps(cfg.to_dict(), indent=2)
                (self.out / "config.json").write_text(config_text, encoding="utf-8")
            replica.barrier()
        self.net: nn.Module = (
            DistributedDataParallel(self.model) if replica.world_size > 1 else self.model
        )
        self.loss_meter = _LossMeter(replica.device)

    def _epoch_batches(self, epoch: int) -> list[list[int]]:
        """This replica's batches for ``epoch``, rebuilt identically on resume."""
        batches = bucket_batches(
            self.train_set.lengths, self.cfg.train.max_tokens, True, self.cfg.seed + epoch
        )
        return shard_batches(batches, self.replica.rank, self.replica.world_size)

    def run(self, stop_after_steps: int | None = None) -> dict[str, Any]:
        """Train to the configured number of epochs, or until stopped (Ctrl-C, SIGTERM or
        ``stop_after_steps``); then score the best checkpoint on dev and test."""
        stopped = False
        with _StopRequest() as stop:
            while self.progress.epoch < self.cfg.train.epochs and not stopped:
                stopped = self._train_epoch(
                    lambda step: self.replica.any(
                        stop.requested
                        or (stop_after_steps is not None and step >= stop_after_steps)
                    )
                )
                if not stopped:
                    self._end_epoch()
        results: dict[str, Any] = {
            "finished": not stopped,
            "params": count_parameters(self.model),
            "train_seconds": round(self.progress.train_seconds, 2),
            "global_step": self.progress.global_step,
            "best_epoch": self.progress.best_epoch,
        }
        if not stopped:
            results.update(self._score_best())
            if self.replica.is_main:
                text = json.dumps(results, indent=2)
                (self.out / RESULTS).write_text(text, encoding="utf-8")
                title = f"{self.cfg.model.attention} on {self.cfg.data.name}"
                plot_learning_curve(self.out / METRICS, self.out / CURVE, title=title)
        return results

    def _train_epoch(self, should_stop: Callable[[int], bool]) -> bool:
        """Train the rest of the current epoch; True when stopped before its end."""
        cfg, progress = self.cfg, self.progress
        batches = self._epoch_batches(progress.epoch)
        self.net.train()
        bar = tqdm(
            total=len(batches),
            initial=progress.step_in_epoch,
            desc=f"epoch {progress.epoch + 1}/{cfg.train.epochs}",
            disable=not (cfg.train.progress and self.replica.is_main),
            leave=False,
            dynamic_ncols=True,
            mininterval=1.0,
        )
        started = time.perf_counter()
        stopped = False
        for indices in batches[progress.step_in_epoch :]:
            batch = self.train_set.batch(indices).to(self.replica.device)
            self.optimizer.zero_grad(set_to_none=True)
            if self.masked_lm:
                loss = masked_lm.batch_loss(self.net, batch, self.masking)
            else:
                loss = batch_loss(self.net, batch)
            loss.backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), cfg.train.clip_norm)
            self.optimizer.step()
            self.scheduler.step()
            self.loss_meter.add(loss)
            progress.step_in_epoch += 1
            progress.global_step += 1
            bar.update(1)
            stopped = should_stop(progress.global_step)
            save = stopped or progress.global_step % cfg.train.checkpoint_every == 0
            if save or progress.global_step % cfg.train.log_every == 0:
                self._log_loss(bar)
            if save:
                progress.train_seconds += time.perf_counter() - started
                started = time.perf_counter()
                self._checkpoint(self.last_path, full=True)
            if stopped:
                break
        if self.loss_meter.count:
            self._log_loss(bar)  # before the epoch's checkpoint
        bar.close()
        progress.train_seconds += time.perf_counter() - started
        return stopped

    def _end_epoch(self) -> None:
        """Score dev, keep the best weights, and checkpoint the start of the next epoch."""
        progress = self.progress
        dev = self._evaluate(self.dev_set)
        epoch = progress.epoch
        progress.epoch += 1
        progress.step_in_epoch = 0
        score = dev[self.score_name]
        best = progress.best_score
        if best is None or (score < best if self.masked_lm else score > best):
            progress.best_score = score
            progress.best_epoch = epoch
            self._checkpoint(self.out / BEST, full=False)
        if self.replica.is_main:
            record = {"step": progress.global_step, "epoch": epoch, "split": "dev", **dev}
            _append_jsonl(self.out / METRICS, record)
            if self.cfg.train.progress:
                tqdm.write(
                    f"epoch {epoch + 1}: dev {self.score_name} {score:.2f} "
                    f"(best {progress.best_score:.2f})"
                )
        self._checkpoint(self.last_path, full=True)

    def _evaluate(self, data) -> dict[str, float]:
        max_tokens, device = self.cfg.train.eval_max_tokens, self.replica.device
        if self.masked_lm:
            return masked_lm.evaluate(self.model, data, max_tokens, device, self.masking)
        return evaluate(self.model, data, max_tokens, device)

    def _score_best(self) -> dict[str, float]:
        """Dev and test score (accuracy, or perplexity) of the best checkpoint (its weights
        stay loaded)."""
        self.replica.barrier()  # until the main replica has written best.pt
        best = load_checkpoint(self.out / BEST, map_location=self.replica.device)
        self.model.load_state_dict(best["model"])
        name = self.score_name
        return {
            f"dev_{name}": self._evaluate(self.dev_set)[name],
            f"test_{name}": self._evaluate(self.test_set)[name],
        }

    def _checkpoint(self, path: Path, full: bool) -> None:
        """Weights, config and vocabulary; with ``full``, all that resuming needs."""
        if not self.replica.is_main:
            return
        record = {
            "model": self.model.state_dict(),
            "config": self.cfg.to_json(),
            "vocab": self.vocab.tokens,
        }
        if self.node_vocab is not None:
            record["node_vocab"] = self.node_vocab.tokens
        if full:
            record.update(
                optimizer=self.optimizer.state_dict(),
                scheduler=self.scheduler.state_dict(),
                rng=_rng_state(self.replica.device),
                **asdict(self.progress),
            )
        save_checkpoint(path, record)

    def _log_loss(self, bar: tqdm) -> None:
        """Log the mean loss since the last call; a non-finite loss stops training before
        anything is saved from the broken weights."""
        step, epoch = self.progress.global_step, self.progress.epoch
        mean_loss = self.loss_meter.mean_and_reset()
        if not math.isfinite(mean_loss):
            raise FloatingPointError(
                f"training loss became {mean_loss} by step {step} (epoch {epoch + 1}); the "
                f"last checkpoint, {self.last_path}, predates it. Try a lower train.lr or "
                "train.clip_norm"
            )
        bar.set_postfix(loss=f"{mean_loss:.3f}")
        if self.replica.is_main:
            record = {"step": step, "epoch": epoch, "train_loss": mean_loss}
            record["lr"] = self.scheduler.get_last_lr()[0]
            _append_jsonl(self.out / METRICS, record)
