"""The training loop, the same for every task: warm-up and schedule, clipping, token-bucketed
batches, evaluation at each epoch's end (and every ``train.eval_every`` updates), best, last
and kept checkpoints, resume after any interruption, JSONL metrics and a learning-curve PNG.

What is learned comes from a ``Task`` (``engine/task.py``): its data, model, loss and
metrics, and the split and metric that select the best checkpoint."""

from __future__ import annotations

import json
import math
import signal
import sys
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
from treeattn.engine.checkpoint import load_checkpoint, save_checkpoint, task_state
from treeattn.engine.config import TrainConfig
from treeattn.engine.distributed import Replica, setup_replica, teardown_replica
from treeattn.engine.precision import AUTO, resolve_precision
from treeattn.engine.schedule import group_factors
from treeattn.engine.task import Task
from treeattn.viz.curves import plot_learning_curve

LAST, BEST, METRICS, RESULTS, CURVE = (
    "last.pt",
    "best.pt",
    "metrics.jsonl",
    "results.json",
    "learning_curve.png",
)
PROGRESS_LINE_SECONDS = 60.0  # a log without a bar hears from training this often


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


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
        self.terms: dict[str, torch.Tensor] = {}  # the task's named parts (``loss_terms``)

    def add(self, loss: torch.Tensor, terms: dict[str, torch.Tensor] | None = None) -> None:
        self.total += loss.detach()
        self.count += 1
        for name, value in (terms or {}).items():
            if name not in self.terms:
                self.terms[name] = torch.zeros((), device=self.total.device)
            self.terms[name] += value.detach().float()

    def mean_and_reset(self) -> float:
        mean = self.total.item() / max(1, self.count)
        self.total.zero_()
        self.count = 0
        return mean

    def term_means_and_reset(self, count: int) -> dict[str, float]:
        """The named parts' means over ``count`` steps (read before ``mean_and_reset``)."""
        means = {name: total.item() / max(1, count) for name, total in self.terms.items()}
        self.terms = {}
        return means


def _replica_seed(seed: int, rank: int, step: int) -> int:
    """A seed of a replica other than the main one, distinct per rank and resume point."""
    return seed + 1_000_003 * rank + 7_919 * step


def _check_same_setup(path: Path, saved_json: str, task: Task) -> None:
    """Refuse to resume a checkpoint of another experiment, naming what differs."""
    cfg = task.cfg
    raw = json.loads(saved_json)
    if raw.get("task", cfg.task) != cfg.task:
        raise ValueError(
            f"{path} belongs to a {raw['task']} run, not {cfg.task}; use another out_dir, "
            "or start afresh with --no-resume"
        )
    saved = type(task).config_from_dict(raw, where=f"{path} config").resume_key()
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


def _check_not_past_the_end(path: Path, progress: Progress, train: TrainConfig) -> None:
    """A run extended by a longer ``train.max_updates`` or ``train.epochs`` continues; one
    cut shorter than what it has done would report weights trained longer than it says."""
    if train.max_updates is not None and progress.global_step > train.max_updates:
        raise ValueError(
            f"{path} has done {progress.global_step} updates, more than "
            f"train.max_updates={train.max_updates}; use another out_dir"
        )
    if train.epochs is not None and progress.epoch > train.epochs:
        raise ValueError(
            f"{path} has done {progress.epoch} epochs, more than train.epochs={train.epochs}; "
            "use another out_dir"
        )


def _say(message: str) -> None:
    """A line for the person watching, on stderr (stdout may carry results)."""
    tqdm.write(message, file=sys.stderr)


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


def train(task: Task, resume: bool = True, stop_after_steps: int | None = None) -> dict[str, Any]:
    """Train ``task`` as its config says; returns the results dict also written to
    results.json.

    With ``resume`` (the default) a ``last.pt`` in ``task.cfg.out_dir`` is picked up where it
    stopped. ``stop_after_steps`` stops (with a checkpoint) once that many optimizer steps
    have run in total, as an interruption would.
    """
    replica = setup_replica(task.cfg.train.device)
    try:
        return fit(task, replica, resume, stop_after_steps)[1]
    finally:
        teardown_replica(replica)


def fit(
    task: Task, replica: Replica, resume: bool = True, stop_after_steps: int | None = None
) -> tuple[nn.Module, dict[str, Any]]:
    """``train`` for an already set-up replica; returns this replica's model too."""
    trainer = Trainer(task, replica, resume)
    results = trainer.run(stop_after_steps)
    return trainer.model, results


@dataclass
class Progress:
    """Where a run stands; saved in every full checkpoint."""

    epoch: int = 0
    step_in_epoch: int = 0
    global_step: int = 0
    best_score: float | None = None  # the task's selection metric
    best_epoch: int = -1
    best_step: int = -1
    train_seconds: float = 0.0


class Trainer:
    """One training run: its task, data, model, optimiser and progress, and the loop."""

    def __init__(self, task: Task, replica: Replica, resume: bool = True) -> None:
        cfg = task.cfg
        cfg.validate()  # also for configs built in code rather than loaded
        self.task, self.cfg, self.replica = task, cfg, replica
        self.selection = task.selection
        self.out = Path(cfg.out_dir)
        self.last_path = self.out / LAST
        torch.manual_seed(cfg.seed)
        # Every split is read and checked before training, not after hours of it; a line
        # for each step says what a long start is doing (a large text, a vocabulary).
        say = _say if cfg.train.progress and replica.is_main else lambda message: None
        say(f"reading {', '.join(task.splits)}")
        examples = {name: task.read(name) for name in task.splits}

        state = load_checkpoint(self.last_path) if resume and self.last_path.exists() else None
        if state is not None:
            _check_same_setup(self.last_path, state["config"], task)
            task.load_state_dict(task_state(state))
        else:
            say(f"fitting the vocabularies on {task.train_split}")
            task.fit(examples[task.train_split][0])
        say("encoding the examples")
        self.data = {name: task.encode(rows, where) for name, (rows, where) in examples.items()}
        self.train_set = self.data[task.train_split]
        self.model = task.build_model().to(replica.device)
        groups = task.parameter_groups(self.model)
        self.optimizer = torch.optim.AdamW(
            [{k: v for k, v in g.items() if k != "warmup_steps"} for g in groups],
            lr=cfg.train.lr,
            betas=(cfg.train.beta1, cfg.train.beta2),
            weight_decay=cfg.train.weight_decay,
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, group_factors(cfg.train, self._total_updates(), groups)
        )
        self.progress = Progress()
        self.precision, why = resolve_precision(cfg.train.precision, replica.device)
        if cfg.train.precision == AUTO and replica.is_main:
            _say(f"precision: {self.precision} ({why})")
        # Only now that the data and model are known to be good: a failed start leaves no
        # empty folder behind.
        self.out.mkdir(parents=True, exist_ok=True)
        if state is not None:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.scheduler.load_state_dict(state["scheduler"])
            defaults = asdict(self.progress)  # checkpoints may predate a field
            self.progress = Progress(**{k: state.get(k, v) for k, v in defaults.items()})
            _check_not_past_the_end(self.last_path, self.progress, cfg.train)
            if replica.is_main:
                _set_rng_state(state["rng"], replica.device)
                _truncate_log(self.out / METRICS, self.progress.global_step)
                if not self._finished():  # a finished run trained further: not final yet
                    (self.out / RESULTS).unlink(missing_ok=True)
                _say(f"resuming from update {self.progress.global_step} of {self.last_path}")
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
                for kept in self.out.glob("step-*.pt"):
                    kept.unlink()
            replica.barrier()
        if replica.is_main:  # a run trained further says how far it now goes
            config_text = json.dumps(cfg.to_dict(), indent=2)
            (self.out / "config.json").write_text(config_text, encoding="utf-8")
        self.net: nn.Module = (
            DistributedDataParallel(self.model) if replica.world_size > 1 else self.model
        )
        self.loss_meter = _LossMeter(replica.device)

    def _total_updates(self) -> int:
        """Where training ends, in updates: the linear schedule decays to it."""
        train = self.cfg.train
        if train.epochs is None:
            return train.max_updates
        total = sum(len(self._epoch_batches(e)) for e in range(train.epochs))
        return total if train.max_updates is None else min(total, train.max_updates)

    def _epoch_batches(self, epoch: int) -> list[list[int]]:
        """This replica's batches for ``epoch``, rebuilt identically on resume."""
        batches = bucket_batches(
            self.train_set.lengths, self.cfg.train.max_tokens, True, self.cfg.seed + epoch
        )
        return shard_batches(batches, self.replica.rank, self.replica.world_size)

    def _finished(self, epochs_done: int | None = None) -> bool:
        """Whether training is over, after ``epochs_done`` epochs (default: those counted)."""
        train, progress = self.cfg.train, self.progress
        epochs = progress.epoch if epochs_done is None else epochs_done
        return (train.epochs is not None and epochs >= train.epochs) or (
            train.max_updates is not None and progress.global_step >= train.max_updates
        )

    def run(self, stop_after_steps: int | None = None) -> dict[str, Any]:
        """Train until the configured epochs or updates are done, or until stopped (Ctrl-C,
        SIGTERM or ``stop_after_steps``); then score the best checkpoint on the task's
        final splits."""
        stopped = False
        with _StopRequest() as stop:
            while not self._finished() and not stopped:
                stopped = self._train_epoch(
                    lambda step: self.replica.any(
                        stop.requested
                        or (stop_after_steps is not None and step >= stop_after_steps)
                    )
                )
        if stopped and self.replica.is_main:
            _say(
                f"stopped: checkpoint saved at update {self.progress.global_step} in "
                f"{self.last_path}; the same command resumes from it"
            )
        results: dict[str, Any] = {
            "finished": not stopped,
            "params": count_parameters(self.model),
            "precision": self.precision,
            "train_seconds": round(self.progress.train_seconds, 2),
            "global_step": self.progress.global_step,
            # Counted from 1, as the log counts epochs (0: none was evaluated).
            "best_epoch": self.progress.best_epoch + 1,
            "best_step": self.progress.best_step,
        }
        if not stopped:
            results.update(self._score_best())
            if self.replica.is_main:
                summary = json.dumps(results, indent=2)
                (self.out / RESULTS).write_text(summary, encoding="utf-8")
                plot_learning_curve(
                    self.out / METRICS,
                    self.out / CURVE,
                    title=self.task.title,
                    split=self.selection.split,
                    metric=self.selection.metric,
                )
        return results

    def _train_epoch(self, should_stop: Callable[[int], bool]) -> bool:
        """Train the rest of the current epoch, or up to ``train.max_updates``; True when
        stopped before either."""
        cfg, progress = self.cfg, self.progress
        batches = self._epoch_batches(progress.epoch)
        self.net.train()
        epochs = "" if cfg.train.epochs is None else f"/{cfg.train.epochs}"
        bar = tqdm(
            total=len(batches),
            initial=progress.step_in_epoch,
            desc=f"epoch {progress.epoch + 1}{epochs}",
            # None: a bar only on a terminal (a log file gets the epoch lines alone).
            disable=None if cfg.train.progress and self.replica.is_main else True,
            leave=False,
            dynamic_ncols=True,
            mininterval=1.0,
        )
        started = time.perf_counter()
        # Without a bar (a log file), a line about every minute says training goes on, with
        # the rate since the line before (evaluations and checkpoints included) and where
        # this epoch stops (its last batch, or train.max_updates before it).
        said = started if bar.disable and cfg.train.progress and self.replica.is_main else None
        said_at_step = progress.step_in_epoch
        ends = len(batches)
        if cfg.train.max_updates is not None:
            left = cfg.train.max_updates - progress.global_step
            ends = min(ends, progress.step_in_epoch + max(left, 0))
        stopped = False
        bfloat16 = self.precision == "bfloat16"
        for indices in batches[progress.step_in_epoch :]:
            batch = self.train_set.batch(indices).to(self.replica.device)
            self.optimizer.zero_grad(set_to_none=True)
            with torch.autocast(self.replica.device.type, torch.bfloat16, enabled=bfloat16):
                loss = self.task.loss(self.net, batch)
            loss.backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), cfg.train.clip_norm)
            self.optimizer.step()
            self.scheduler.step()
            self.loss_meter.add(loss, self.task.loss_terms())
            progress.step_in_epoch += 1
            progress.global_step += 1
            step = progress.global_step
            bar.update(1)
            if said is not None and time.perf_counter() - said >= PROGRESS_LINE_SECONDS:
                now = time.perf_counter()
                rate = (progress.step_in_epoch - said_at_step) / max(now - said, 1e-9)
                said, said_at_step = now, progress.step_in_epoch
                _say(
                    f"epoch {progress.epoch + 1}{epochs}: update {progress.step_in_epoch} of "
                    f"{ends}, {rate:.1f} updates/s"
                )
            stopped = should_stop(step)
            at_limit = self._finished() and progress.step_in_epoch < len(batches)
            evaluate = at_limit or (
                cfg.train.eval_every is not None
                and step % cfg.train.eval_every == 0
                and progress.step_in_epoch < len(batches)  # the epoch's end evaluates anyway
            )
            save = stopped or evaluate or step % cfg.train.checkpoint_every == 0
            if save or step % cfg.train.log_every == 0:
                self._log_loss(bar)
            if cfg.train.keep_every is not None and step % cfg.train.keep_every == 0:
                self._checkpoint(self.out / f"step-{step}.pt", full=False)
            if evaluate:
                self._validate()
            if save:
                progress.train_seconds += time.perf_counter() - started
                started = time.perf_counter()
                self._checkpoint(self.last_path, full=True)
            if stopped or at_limit:
                break
        else:
            if self.loss_meter.count:
                self._log_loss(bar)  # before the epoch's checkpoint
            bar.close()
            progress.train_seconds += time.perf_counter() - started
            self._end_epoch()
            return False
        bar.close()
        progress.train_seconds += time.perf_counter() - started
        return stopped

    def _end_epoch(self) -> None:
        """Evaluate (as configured), and checkpoint the start of the next epoch."""
        train, progress = self.cfg.train, self.progress
        last = self._finished(epochs_done=progress.epoch + 1)
        due = train.eval_every is not None and progress.global_step % train.eval_every == 0
        if train.eval_each_epoch or last or due:
            self._validate()
        self.progress.epoch += 1
        self.progress.step_in_epoch = 0
        self._checkpoint(self.last_path, full=True)

    def _validate(self) -> None:
        """Score the selection split, log it and keep the best weights."""
        progress, selection = self.progress, self.selection
        scores = self._evaluate(selection.split)
        score = scores[selection.metric]
        if selection.better(score, progress.best_score):
            progress.best_score = score
            progress.best_epoch = progress.epoch
            progress.best_step = progress.global_step
            self._checkpoint(self.out / BEST, full=False)
        if self.replica.is_main:
            record = {
                "step": progress.global_step,
                "epoch": progress.epoch,
                "split": selection.split,
                **scores,
            }
            _append_jsonl(self.out / METRICS, record)
            if self.cfg.train.progress:
                tqdm.write(
                    f"epoch {progress.epoch + 1} update {progress.global_step}: "
                    f"{selection.split} {selection.metric} {score:.2f} "
                    f"(best {progress.best_score:.2f})"
                )

    def _evaluate(self, split: str) -> dict[str, Any]:
        return self.task.evaluate(self.model, self.data[split], self.replica.device)

    def _score_best(self) -> dict[str, float]:
        """The headline metrics of the best checkpoint on every final split (its weights
        stay loaded)."""
        self.replica.barrier()  # until the main replica has written best.pt
        best = load_checkpoint(self.out / BEST, map_location=self.replica.device)
        self.model.load_state_dict(best["model"])
        scores = {}
        for split in self.task.final_splits:
            metrics = self._evaluate(split)
            scores.update({f"{split}_{name}": metrics[name] for name in self.task.headline})
        return scores

    def _checkpoint(self, path: Path, full: bool) -> None:
        """Weights, config and the task's vocabularies; with ``full``, all that resuming
        needs."""
        if not self.replica.is_main:
            return
        record = {
            "model": self.model.state_dict(),
            "config": self.cfg.to_json(),
            "task_state": self.task.state_dict(),
        }
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
        terms = self.loss_meter.term_means_and_reset(self.loss_meter.count)
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
            record.update({f"train_{name}": value for name, value in terms.items()})
            record["lr"] = self.scheduler.get_last_lr()[0]
            _append_jsonl(self.out / METRICS, record)
