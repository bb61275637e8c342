"""Our tree distributions (``treeattn.structs``) side by side with torch-struct and supar:
time of log Z + marginals, of the marginals property and of the best tree, ours over the
faster of the two against a target per cell, and agreement of their outputs.

Run from the repository root, one thread::

    OMP_NUM_THREADS=1 python -m benchmarks.structs --threads 1   # full: B = 32, n = 20, 40, 80
    python -m benchmarks.structs --quick                          # smoke run, a few seconds

torch-struct and supar are optional (``pip install -c <(echo torch==X) '.[bench]'``, see
``benchmarks/README.md``); where one is not importable its columns read "not installed"
and the rest still runs.

Three structures, each on float32 N(0, 1) scores (seeded), a batch of ``--batch`` items all
of exactly n words:

- ``cky``: binary constituency trees with ``--labels`` labels per span. Ours ``CKY`` and
  torch-struct's ``TreeCRF`` take the same (B, n, n, L) chart, span i..j inclusive.
  supar's ``ConstituencyCRF`` has no labels and takes fencepost (B, n+1, n+1) span scores:
  its timed step includes the reduction over labels (``logsumexp`` for log Z, ``max`` and a
  per-span label ``argmax`` for the best tree) and the shift to fenceposts, so it computes
  the same thing from the same (B, n, n, L) input.
- ``eisner``: projective first-order dependency trees with a single root. Ours ``Eisner``
  takes (B, n+1, n+1) ``[head, dependent]`` with position 0 the root; torch-struct's
  ``DependencyCRF(multiroot=False)`` takes (B, n, n) ``[head, child]`` over words with the
  root's arcs on the diagonal; supar's ``DependencyCRF(multiroot=False)`` takes
  (B, n+1, n+1) ``[dependent, head]`` with the root at 0.
- ``matrix-tree``: non-projective single-root trees. Ours ``MatrixTree`` (argmax by
  Chu-Liu-Edmonds), torch-struct's ``NonProjectiveDependencyCRF(multiroot=False)`` (no
  argmax) and supar's ``MatrixTree(multiroot=False)`` (argmax by its ``mst``), same
  conventions as for ``eisner``. torch-struct's Laplacian adds eps = 1e-5 to every
  exp(score), so its log Z differs from the exact one by up to 2e-4 relative, by
  definition (the agreement table adds a row with eps = 0).

Inputs are converted to each library's convention before timing. The timed cells (``TASKS``):

- log Z + marginals by autograd: the library's log partition on scores that require grad,
  then ``torch.autograd.grad(log Z.sum(), scores)``; lengths given (all n). For the
  matrix-tree also with no lengths passed (every library's default: all n).
- the ``.marginals`` property (matrix-tree): the library's own, on scores that require
  grad (as a model's), lengths given and not.
- the best tree: the library's public ``argmax``, on scores that require grad
  (torch-struct's ``DependencyCRF.argmax`` fails on others).

Each task is timed in rounds that call every library once, in an order drawn anew each round
(``common.interleaved_median_ms``): medians of up to ``--repeats`` rounds (about
``--case-seconds`` per library), so a slow spell of a shared machine falls on all alike and
each library follows each other one as often (a step runs slower after one that filled the
caches). The ratio is ours / the faster library; the targets (``target``) are the issue's:
CKY at most 0.8 at n = 20 and 0.5 at n = 80 (the parser decodes with it every step), every
other cell at most 1. A table gives each cell's ratio per size with pass / MISS.

Agreement: every library is run once more on the same scores in float64 and compared with
ours: the largest absolute difference of log Z and of the marginals (over the parts that
exist: spans i <= j and every label; arcs h -> m with m >= 1, h != m), mapped to our layout,
and the number of items whose best tree equals ours (also on the float32 timing inputs).

Matrix-tree stability (untimed, skipped by ``--no-stability`` or when ``matrix-tree`` is
not among ``--structures``): the same three Matrix-Tree solvers in float64 on
``--stability-batch`` (8) items of ``--stability-n`` (40; with ``--quick`` the largest
size) words, scores N(0, sigma^2) for sigma = 1, 10, 30, 100, 1000 (one seeded draw,
scaled) and uniform in +-1e4. Per library and scale: whether log Z and the marginals are
all finite; the largest |sum over heads of a word's marginals - 1| (exactly 0 for every
word: a check that needs no reference); and the largest absolute difference of log Z and
of the marginals from ours, over the values finite in both (ours is exact at any scale;
the brute-force tests check it).

Results go to ``--out`` as ``structs.json`` (the timed cells under ``"cells"``, the
stability rows under ``"stability"``) and ``structs.md``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
    start_device,
    write_results,
)

STRUCTURES = ("cky", "eisner", "matrix-tree")
LIBRARIES = ("ours", "torch-struct", "supar")
TOLERANCE = 1e-5
NOT_INSTALLED = "not installed"
EPS0 = "torch-struct, eps=0"  # agreement-only row (see torch_struct_eps0_row)

# torch-struct's distributions do not define ``arg_constraints``; torch warns on each one.
warnings.filterwarnings("ignore", message=".*does not define `arg_constraints`.*")
# supar 1.1 pads its trees with list indexing, which torch deprecates.
warnings.filterwarnings("ignore", message="Using a non-tuple sequence for multidimensional")


class NotAvailable(Exception):
    """A library lacks an operation (reported as "n/a" with the message as reason)."""


# ---------------------------------------------------------------- libraries
def import_library(name: str) -> tuple[object | None, str | None]:
    """(module, None) or (None, why not)."""
    module = {"ours": "treeattn.structs", "torch-struct": "torch_struct", "supar": "supar"}[name]
    try:
        return importlib.import_module(module), None
    except ImportError as error:
        if name == "ours":
            return None, f"cannot import: {error}"
        return None, NOT_INSTALLED


def library_version(name: str) -> str | None:
    dist = {"ours": "treeattn", "torch-struct": "torch-struct", "supar": "supar"}[name]
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def import_ours(structure: str):
    """Our distribution class for ``structure`` (ImportError while it is missing)."""
    if structure == "cky":
        from treeattn.structs.cky import CKY

        return CKY
    if structure == "eisner":
        from treeattn.structs.eisner import Eisner

        return Eisner
    from treeattn.structs.matrix_tree import MatrixTree

    return MatrixTree


# ---------------------------------------------------------------- conventions
def upper_mask(n: int, device: torch.device) -> torch.Tensor:
    """(n, n) True on cells i <= j: the spans that exist."""
    return torch.ones(n, n, dtype=torch.bool, device=device).triu()


def arc_mask(n: int, device: torch.device) -> torch.Tensor:
    """(n+1, n+1) True on arcs h -> m that exist: m >= 1, h != m."""
    mask = ~torch.eye(n + 1, dtype=torch.bool, device=device)
    mask[:, 0] = False
    return mask


def to_fenceposts(spans: torch.Tensor) -> torch.Tensor:
    """(B, n, n) inclusive spans [i, j] -> (B, n+1, n+1) fencepost spans (i, j + 1)."""
    return F.pad(spans, (1, 0, 0, 1))


def to_word_diagonal(scores: torch.Tensor) -> torch.Tensor:
    """Ours (B, n+1, n+1) [h, m] -> torch-struct (B, n, n) [h-1, m-1], root arcs on the
    diagonal."""
    words = scores[:, 1:, 1:].clone()
    words.diagonal(0, 1, 2).copy_(scores[:, 0, 1:])
    return words


def from_word_diagonal(words: torch.Tensor) -> torch.Tensor:
    """torch-struct (B, n, n) arc values (root on the diagonal) -> ours (B, n+1, n+1)."""
    batch, n, _ = words.shape
    out = words.new_zeros(batch, n + 1, n + 1)
    out[:, 1:, 1:] = words
    out[:, 1:, 1:].diagonal(0, 1, 2).zero_()
    out[:, 0, 1:] = words.diagonal(0, 1, 2)
    return out


def heads_from_parts(parts: torch.Tensor) -> torch.Tensor:
    """(B, n+1, n+1) 0/1 arcs [h, m] -> (B, n) head of each word 1..n (-1 when a word has
    not exactly one head)."""
    arcs = parts.detach()[:, :, 1:] > 0.5
    heads = arcs.float().argmax(1)
    return torch.where(arcs.sum(1) == 1, heads, torch.full_like(heads, -1))


def heads_from_word_diagonal(parts: torch.Tensor) -> torch.Tensor:
    """torch-struct (B, n, n) 0/1 arcs, root on the diagonal -> (B, n) heads (0 = root)."""
    return heads_from_parts(from_word_diagonal(parts.detach().to(torch.float64)))


@dataclass
class Solver:
    """One library's way to run one structure.

    ``prepare`` turns our scores into the library's input (outside the timed region);
    ``log_partition(x, lengths)`` is (B,) and differentiable in ``x`` (``lengths`` None: every
    item n words, the library's default); ``to_ours`` maps
    the gradient (marginals) back to our layout; ``best`` is the timed best tree and
    ``best_to_ours`` maps it to a comparable form (a 0/1 chart for CKY, heads otherwise).
    """

    prepare: Callable[[torch.Tensor], torch.Tensor]
    log_partition: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]
    to_ours: Callable[[torch.Tensor], torch.Tensor]
    best: Callable[[torch.Tensor, torch.Tensor], object]
    best_to_ours: Callable[[object], torch.Tensor]
    notes: list[str] = field(default_factory=list)
    # The library's own ``marginals`` property, ``marginals(x, lengths)`` (matrix-tree only).
    marginals: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor] | None = None


def same(x: torch.Tensor) -> torch.Tensor:
    return x


def clone(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


def chart_bool(parts: torch.Tensor) -> torch.Tensor:
    n = parts.shape[1]
    return (parts.detach() > 0.5) & upper_mask(n, parts.device)[:, :, None]


def supar_spans_to_chart(result: tuple[list, torch.Tensor], n_labels: int) -> torch.Tensor:
    """supar's best spans (per item, fencepost ``[start, end]`` lists) and the best label
    of each cell (B, n, n) -> our (B, n, n, L) boolean chart."""
    spans, labels = result
    batch, n, _ = labels.shape
    chart = torch.zeros(batch, n, n, n_labels, dtype=torch.bool)
    labels = labels.cpu()
    for b, item in enumerate(spans):
        for start, end in item:
            chart[b, start, end - 1, labels[b, start, end - 1]] = True
    return chart


def make_solver(structure: str, library: str, module, n_labels: int) -> Solver:
    """The ``Solver`` of ``library`` for ``structure``; raises ImportError when ours is
    missing."""
    if library == "ours":
        cls = import_ours(structure)
        to_best = chart_bool if structure == "cky" else heads_from_parts
        return Solver(
            clone,
            lambda x, lengths: cls(x, lengths).log_partition,
            same,
            lambda x, lengths: cls(x, lengths).argmax,
            to_best,
            marginals=lambda x, lengths: cls(x, lengths).marginals,
        )
    if library == "torch-struct":
        ts = module
        if structure == "cky":
            return Solver(
                clone,
                lambda x, lengths: ts.TreeCRF(x, lengths=lengths).partition,
                same,
                lambda x, lengths: ts.TreeCRF(x, lengths=lengths).argmax,
                chart_bool,
                ["torch-struct: TreeCRF, (B, n, n, L) inclusive spans, as ours"],
            )
        if structure == "eisner":
            return Solver(
                to_word_diagonal,
                lambda x, lengths: ts.DependencyCRF(x, lengths, multiroot=False).partition,
                from_word_diagonal,
                lambda x, lengths: ts.DependencyCRF(x, lengths, multiroot=False).argmax,
                heads_from_word_diagonal,
                [
                    "torch-struct: DependencyCRF(multiroot=False), (B, n, n) [h, m] over "
                    "words, root arcs on the diagonal"
                ],
            )

        def no_argmax(x, lengths):
            out = ts.NonProjectiveDependencyCRF(x, lengths, multiroot=False).argmax
            if out is None:
                raise NotAvailable(
                    "torch-struct NonProjectiveDependencyCRF.argmax is not implemented "
                    "(returns None)"
                )
            return out

        return Solver(
            to_word_diagonal,
            lambda x, lengths: ts.NonProjectiveDependencyCRF(x, lengths, multiroot=False).partition,
            from_word_diagonal,
            no_argmax,
            heads_from_word_diagonal,
            marginals=lambda x, lengths: (
                ts.NonProjectiveDependencyCRF(x, lengths, multiroot=False).marginals
            ),
            notes=[
                "torch-struct: NonProjectiveDependencyCRF(multiroot=False), (B, n, n) [h, m], "
                "root arcs on the diagonal; its Laplacian adds eps = 1e-5 to every exp(score), "
                "so its log Z differs by up to 2e-4 relative by definition; the row "
                "'torch-struct, eps=0' calls its torch_struct.deptree.deptree_part with eps=0 "
                "instead (agreement only)"
            ],
        )
    # supar
    structs = importlib.import_module("supar.structs")
    if structure == "cky":

        def supar_log_z(x, lengths):
            return structs.ConstituencyCRF(to_fenceposts(x.logsumexp(-1)), lengths).log_partition

        def supar_best(x, lengths):
            spans = structs.ConstituencyCRF(to_fenceposts(x.amax(-1)), lengths).argmax
            return spans, x.argmax(-1)

        return Solver(
            clone,
            supar_log_z,
            same,
            supar_best,
            lambda result: supar_spans_to_chart(result, n_labels),
            [
                "supar: ConstituencyCRF has no labels and takes fencepost (B, n+1, n+1) "
                "spans: its timed steps include the label logsumexp (log Z) or max + "
                "per-span argmax (best tree) and the shift to fenceposts"
            ],
        )
    cls = structs.DependencyCRF if structure == "eisner" else structs.MatrixTree

    def transpose(x: torch.Tensor) -> torch.Tensor:
        return x.transpose(1, 2).contiguous()

    notes = [f"supar: {cls.__name__}(multiroot=False), (B, n+1, n+1) [m, h] (dependent first)"]
    if structure == "matrix-tree":
        notes.append(
            "supar: MatrixTree returns log Z in float32 (slogdet(...).float()) even for "
            "float64 scores; its single-root argmax re-runs Chu-Liu-Edmonds once per root "
            "of the unconstrained tree, which is not exact in general"
        )
    return Solver(
        transpose,
        lambda x, lengths: cls(x, lengths, multiroot=False).log_partition,
        lambda grad: grad.transpose(1, 2),
        lambda x, lengths: cls(x, lengths, multiroot=False).argmax,
        lambda heads: heads[:, 1:],
        notes,
        marginals=lambda x, lengths: cls(x, lengths, multiroot=False).marginals,
    )


# ---------------------------------------------------------------- one case
def random_scores(structure: str, n: int, args, device: torch.device) -> torch.Tensor:
    """Seeded float64 normal scores in our layout, on ``device``."""
    gen = torch.Generator().manual_seed(args.seed * 1000 + n * 10 + STRUCTURES.index(structure))
    shape = (args.batch, n, n, args.labels) if structure == "cky" else (args.batch, n + 1, n + 1)
    return torch.randn(*shape, generator=gen, dtype=torch.float64).to(device)


def part_mask(structure: str, n: int, device: torch.device) -> torch.Tensor:
    if structure == "cky":
        return upper_mask(n, device)[None, :, :, None]
    return arc_mask(n, device)[None]


def marginals_of(solver: Solver, x: torch.Tensor, lengths: torch.Tensor | None):
    log_z = solver.log_partition(x, lengths)
    (grad,) = torch.autograd.grad(log_z.sum(), x)
    return log_z.detach(), grad


def float64_marginals(
    solver: Solver, scores64: torch.Tensor, lengths: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The library's float64 log Z (B,) and marginals in our layout, zero off the parts
    that exist (``mask``)."""
    x = solver.prepare(scores64).detach().requires_grad_()
    log_z, grad = marginals_of(solver, x, lengths)
    return log_z.to(torch.float64), torch.where(mask, solver.to_ours(grad).to(torch.float64), 0.0)


def short(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".splitlines()[0]
    return text if len(text) < 160 else text[:157] + "..."


@dataclass(frozen=True)
class Task:
    """One timed cell kind: ``key`` names it in the JSON rows (``<key>_ms``)."""

    key: str
    label: str  # the cell's name in the ratio table
    structures: tuple[str, ...]
    lengths: bool = True  # False: no lengths passed (every item n words by default)


TASKS = (
    Task("marginals", "log Z + marginals by autograd, lengths given", STRUCTURES),
    Task(
        "marginals_nolen",
        "log Z + marginals by autograd, no lengths",
        ("matrix-tree",),
        lengths=False,
    ),
    Task("property", "`.marginals` property, lengths given", ("matrix-tree",)),
    Task("property_nolen", "`.marginals` property, no lengths", ("matrix-tree",), lengths=False),
    Task("best", "best tree (argmax)", STRUCTURES),
)
TASK_KEYS = tuple(task.key for task in TASKS)


def target(structure: str, task: Task, n: int) -> float:
    """The issue's bar for ours / the faster library: CKY twice as fast at n = 80 and 1.25x
    at n = 20 (the parser runs it every step); every other cell at least as fast."""
    if structure == "cky" and task.key in ("marginals", "best"):
        return {20: 0.8, 80: 0.5}.get(n, 1.0)
    return 1.0


def task_step(task: Task, solver: Solver, x: torch.Tensor, lengths: torch.Tensor):
    """The timed call of ``task`` for one library, on ``x`` that requires grad (as a
    model's scores would; torch-struct's ``DependencyCRF.argmax`` fails on others)."""
    given = lengths if task.lengths else None
    if task.key.startswith("marginals"):
        return partial(marginals_of, solver, x, given)
    if task.key.startswith("property"):
        if solver.marginals is None:
            raise NotAvailable("no marginals property")
        return partial(solver.marginals, x, given)
    return partial(solver.best, x, lengths)


def time_libraries(
    structure: str, n: int, solvers: dict[str, Solver], scores64, args, device
) -> dict:
    """Per library, the float32 timing of every task of ``structure`` at one size, each
    task timed interleaved across the libraries (``interleaved_median_ms``), and the float32
    best tree in our form (``best32``) for the agreement check. A library that fails or
    lacks the task gets a status instead of a time; the run goes on."""
    lengths = torch.full((args.batch,), n, dtype=torch.long, device=device)
    scores32 = scores64.to(torch.float32)
    found: dict[str, dict] = {library: {} for library in solvers}
    for task in TASKS:
        if structure not in task.structures:
            continue
        steps = {}
        for library, solver in solvers.items():
            x = solver.prepare(scores32).detach().requires_grad_()
            try:
                step = task_step(task, solver, x, lengths)
                output = step()
            except NotAvailable as reason:
                found[library].update(
                    {f"{task.key}_ms": None, f"{task.key}_status": f"n/a: {reason}"}
                )
                continue
            except Exception as error:  # a library failing must not end the run
                found[library].update(
                    {f"{task.key}_ms": None, f"{task.key}_status": f"error: {short(error)}"}
                )
                traceback.print_exc()
                continue
            if task.key == "best":
                found[library]["best32"] = solver.best_to_ours(output)
            steps[library] = step
        timed = interleaved_median_ms(steps, device, args.repeats, args.case_seconds)
        for library, (ms, repeats) in timed.items():
            found[library].update(
                {f"{task.key}_ms": ms, f"{task.key}_repeats": repeats, f"{task.key}_status": "ok"}
            )
    return found


def run_library(structure, n, library, solver, scores64, args, device, timing, reference) -> dict:
    """One library's row at one size: its ``timing`` (from ``time_libraries``) and the
    agreement of its outputs with ``reference``, ours (float64 log Z, marginals, best trees
    in float64 and float32), or None for ours itself."""
    row: dict = {"structure": structure, "n": n, "library": library}
    lengths = torch.full((args.batch,), n, dtype=torch.long, device=device)
    results: dict = {}
    if "best32" in timing:
        results["best32"] = timing.pop("best32")
    row.update(timing)

    # Agreement, float64.
    mask = part_mask(structure, n, device)
    try:
        results["log_z"], results["marginals"] = float64_marginals(solver, scores64, lengths, mask)
    except Exception as error:
        row["check_error"] = short(error)
        traceback.print_exc()
    if row["best_status"] == "ok":
        try:
            x = solver.prepare(scores64).detach().requires_grad_()
            results["best64"] = solver.best_to_ours(solver.best(x, lengths))
        except Exception as error:
            row["check_error"] = short(error)
            traceback.print_exc()

    if reference is None:
        return {"row": row, "results": results}
    for key in ("log_z", "marginals"):
        both = key in results and key in reference
        diff = (results[key] - reference[key]).abs().max().item() if both else None
        row[f"max_abs_diff_{key}"] = diff
    for key in ("best64", "best32"):
        if key in results and key in reference:
            ours, theirs = reference[key].cpu(), results[key].cpu()
            same_items = (ours == theirs).flatten(1).all(1)
            row[f"trees_identical_{key[-2:]}"] = int(same_items.sum())
        else:
            row[f"trees_identical_{key[-2:]}"] = None
    return {"row": row, "results": results}


def torch_struct_eps0_row(scores64, n, args, device, reference) -> dict | None:
    """An agreement-only row: torch-struct's Matrix-Tree log Z with eps = 0 (its module
    function ``deptree_part``), to show that the public API's differences come from its
    eps, not from a convention."""
    try:
        from torch_struct.deptree import deptree_part
    except ImportError:
        return None
    if "log_z" not in reference:
        return None
    lengths = torch.full((args.batch,), n, dtype=torch.long, device=device)
    x = to_word_diagonal(scores64).detach().requires_grad_()
    log_z = deptree_part(x, False, lengths, eps=0)
    (grad,) = torch.autograd.grad(log_z.sum(), x)
    marginals = torch.where(part_mask("matrix-tree", n, device), from_word_diagonal(grad), 0.0)
    return {
        "structure": "matrix-tree",
        "n": n,
        "library": EPS0,
        "marginals_ms": None,
        "best_ms": None,
        "marginals_status": "agreement only",
        "best_status": "n/a",
        "max_abs_diff_log_z": (log_z.detach() - reference["log_z"]).abs().max().item(),
        "max_abs_diff_marginals": (marginals - reference["marginals"]).abs().max().item(),
    }


# ---------------------------------------------------------------- matrix-tree stability
# Score distributions of the stability table: (kind, scale), N(0, scale^2) or U(-scale, scale).
STABILITY_SCALES = (
    ("normal", 1.0),
    ("normal", 10.0),
    ("normal", 30.0),
    ("normal", 100.0),
    ("normal", 1000.0),
    ("uniform", 1e4),
)


def scale_label(kind: str, scale: float) -> str:
    return f"N(0, {scale:g}^2)" if kind == "normal" else f"U(-{scale:g}, {scale:g})"


def stability_scores(n: int, batch: int, seed: int, device: torch.device) -> list[torch.Tensor]:
    """Seeded float64 scores in our layout, one tensor per ``STABILITY_SCALES`` entry: one
    standard normal draw scaled by each sigma (so only the scale changes), and a uniform one."""
    gen = torch.Generator().manual_seed(seed * 1000 + 999)
    shape = (batch, n + 1, n + 1)
    normal = torch.randn(*shape, generator=gen, dtype=torch.float64)
    uniform = torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1
    return [
        ((normal if kind == "normal" else uniform) * scale).to(device)
        for kind, scale in STABILITY_SCALES
    ]


def max_finite_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float | None:
    """Largest |a - b| over the entries finite in both (None when there is none)."""
    both = torch.isfinite(a) & torch.isfinite(b)
    return (a - b).abs()[both].max().item() if both.any() else None


def stability_row(
    log_z: torch.Tensor, marginals: torch.Tensor, mask: torch.Tensor, reference: dict | None
) -> dict:
    """Finiteness, the heads-sum check and (against ``reference``, ours) the differences,
    for float64 ``log_z`` (B,) and ``marginals`` in our layout, ``mask`` the arcs that exist."""
    parts = mask.expand_as(marginals)
    finite_log_z = torch.isfinite(log_z)
    finite_marginals = torch.where(parts, torch.isfinite(marginals), True).flatten(1).all(1)
    # Every word has exactly one head, so its marginals over heads sum to 1.
    head_sums = marginals.sum(1)[:, 1:]
    sums_finite = torch.isfinite(head_sums)
    row = {
        "status": "ok",
        "finite_items": int((finite_log_z & finite_marginals).sum()),
        "finite_log_z_items": int(finite_log_z.sum()),
        "finite_marginals_items": int(finite_marginals.sum()),
        "max_head_sum_error": (
            (head_sums - 1).abs()[sums_finite].max().item() if sums_finite.any() else None
        ),
    }
    if reference is not None:
        row["max_abs_diff_log_z"] = max_finite_abs_diff(log_z, reference["log_z"])
        row["max_abs_diff_marginals"] = max_finite_abs_diff(
            marginals[parts], reference["marginals"][parts]
        )
    return row


def stability_rows(solvers: dict, n: int, batch: int, seed: int, device) -> list[dict]:
    """The matrix-tree stability table (untimed): every library in float64 on scores of
    growing scale, ``solvers`` mapping each library to its ``Solver`` or why it is absent."""
    lengths = torch.full((batch,), n, dtype=torch.long, device=device)
    mask = part_mask("matrix-tree", n, device)
    rows = []
    for (kind, scale), scores64 in zip(
        STABILITY_SCALES, stability_scores(n, batch, seed, device), strict=True
    ):
        reference = None
        for library in LIBRARIES:
            solver = solvers[library]
            row = {"scores": scale_label(kind, scale), "kind": kind, "scale": scale}
            row |= {"n": n, "batch": batch, "library": library}
            if isinstance(solver, str):
                rows.append(row | {"status": solver})
                continue
            try:
                log_z, marginals = float64_marginals(solver, scores64, lengths, mask)
            except Exception as error:  # a library failing must not end the run
                rows.append(row | {"status": f"error: {short(error)}"})
                continue
            row |= stability_row(log_z, marginals, mask, reference)
            if library == "ours":
                reference = {"log_z": log_z, "marginals": marginals}
            rows.append(row)
    return rows


def diff_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.1e}"


def stability_table(rows: list[dict]) -> list[list[str]]:
    table = []
    for row in rows:
        cells = [row["scores"], row["library"]]
        if row["status"] != "ok":
            cells.append(
                row["status"].split(":", 1)[0] if "error" in row["status"] else row["status"]
            )
            table.append(cells + ["-"] * 3)
            continue
        batch = row["batch"]
        cells.append(
            "yes"
            if row["finite_items"] == batch
            else f"NO: log Z {row['finite_log_z_items']}/{batch}, "
            f"marg {row['finite_marginals_items']}/{batch}"
        )
        cells.append(diff_cell(row["max_head_sum_error"]))
        if row["library"] == "ours":
            cells += ["(reference)"] * 2
        else:
            cells += [
                diff_cell(row.get("max_abs_diff_log_z")),
                diff_cell(row.get("max_abs_diff_marginals")),
            ]
        table.append(cells)
    return table


def stability_markdown(table: list[list[str]], args) -> list[str]:
    """The stability table with its caption and a blank line after it, or nothing."""
    if not table:
        return []
    return [
        f"Matrix-tree numerical stability (untimed): n = {args.stability_n}, batch "
        f"{args.stability_batch}, float64 scores of growing scale (seeded; the normal ones "
        "are one draw, scaled). all finite: log Z and every marginal; max abs(sum_h marg - "
        "1): over every word, its marginals over heads sum to exactly 1; differences: from "
        "ours (exact at any scale), over the values finite in both.",
        "",
        markdown_table(STABILITY_HEADERS, table),
        "",
    ]


STABILITY_HEADERS = [
    "scores",
    "library",
    "all finite",
    "max abs(sum_h marg - 1)",
    "max abs diff log Z",
    "max abs diff marginals",
]


# ---------------------------------------------------------------- tables
def ms_cell(row: dict | None, key: str) -> str:
    """Median ms, or a short status (its reason goes to the notes)."""
    if row is None:
        return "-"
    if row.get(f"{key}_ms") is not None:
        return f"{row[f'{key}_ms']:.2f}"
    status = row.get(f"{key}_status", "-")
    if status.startswith(("n/a", "error")):
        return status.split(":", 1)[0]
    return "unavailable" if status.startswith("cannot") else status


def ratio(rows: dict, key: str) -> float | None:
    ours = rows.get("ours", {}).get(f"{key}_ms")
    theirs = [rows[lib].get(f"{key}_ms") for lib in LIBRARIES[1:] if lib in rows]
    theirs = [t for t in theirs if t is not None]
    return None if ours is None or not theirs else ours / min(theirs)


STRUCTURE_NAMES = {"cky": "CKY", "eisner": "Eisner", "matrix-tree": "MatrixTree"}


def timed_cells(rows: list[dict], structures, sizes) -> list[dict]:
    """Every timed cell: structure, task, n, each library's median ms (or status), ours /
    the faster library, the issue's target and whether it is met."""
    cells = []
    # The order: the matrix-tree's cells, then CKY's, then the rest.
    for structure in sorted(structures, key=("matrix-tree", "cky", "eisner").index):
        for task in TASKS:
            if structure not in task.structures:
                continue
            for n in sizes:
                by_lib = {
                    r["library"]: r for r in rows if r["structure"] == structure and r["n"] == n
                }
                if not by_lib:
                    continue
                value = ratio(by_lib, task.key)
                bar = target(structure, task, n)
                cells.append(
                    {
                        "structure": structure,
                        "task": task.key,
                        "cell": f"{STRUCTURE_NAMES[structure]} {task.label}",
                        "n": n,
                        "ms": {lib: ms_cell(by_lib.get(lib), task.key) for lib in LIBRARIES},
                        "ratio": value,
                        "target": bar,
                        "met": None if value is None else value <= bar,
                    }
                )
    return cells


def mark(cell: dict) -> str:
    if cell["ratio"] is None:
        return "-"
    return f"{cell['ratio']:.2f} {'pass' if cell['met'] else 'MISS'}"


def ratio_table(cells: list[dict], sizes) -> tuple[list[str], list[list[str]]]:
    """The issue's table: one row per cell kind, ours / the faster library per size, with
    its target and a pass / MISS mark."""
    headers = ["cell (treeattn / faster peer)", "target"] + [f"n = {n}" for n in sizes]
    table = []
    for name in dict.fromkeys(cell["cell"] for cell in cells):
        mine = {cell["n"]: cell for cell in cells if cell["cell"] == name}
        bars = [f"{mine[n]['target']:g}" for n in sizes if n in mine]
        bar = bars[0] if len(set(bars)) == 1 else " / ".join(bars)  # one per size
        table.append([name, f"<= {bar}"] + [mark(mine[n]) if n in mine else "-" for n in sizes])
    return headers, table


TIME_HEADERS = ["cell", "n", "ours ms", "torch-struct ms", "supar ms", "ours/faster", "target"]


def time_table(cells: list[dict]) -> list[list[str]]:
    return [
        [cell["cell"], str(cell["n"])]
        + [cell["ms"][lib] for lib in LIBRARIES]
        + [mark(cell), f"<= {cell['target']:g}"]
        for cell in cells
    ]


CHECK_HEADERS = [
    "structure",
    "n",
    "library",
    "max abs diff log Z",
    "max abs diff marginals",
    f"agree at {TOLERANCE:g}",
    "same best tree (f64)",
    "same best tree (f32)",
]


def check_table(rows: list[dict], batch: int) -> list[list[str]]:
    table = []
    for row in rows:
        if row["library"] == "ours":
            continue
        if row.get("marginals_status") == NOT_INSTALLED:
            continue  # said once in the notes
        d_z, d_m = row.get("max_abs_diff_log_z"), row.get("max_abs_diff_marginals")
        agree = (
            "-" if d_z is None or d_m is None else ("yes" if max(d_z, d_m) <= TOLERANCE else "NO")
        )

        def trees(key: str, row: dict = row) -> str:
            if row.get("best_status", "").startswith("n/a"):
                return "n/a"
            value = row.get(key)
            return "-" if value is None else f"{value}/{batch}"

        table.append(
            [
                row["structure"],
                str(row["n"]),
                row["library"],
                "-" if d_z is None else f"{d_z:.1e}",
                "-" if d_m is None else f"{d_m:.1e}",
                agree,
                trees("trees_identical_64"),
                trees("trees_identical_32"),
            ]
        )
    return table


def status_notes(rows: list[dict]) -> list[str]:
    """One line per distinct n/a or error reason."""
    seen: dict[str, list[str]] = {}
    for row in rows:
        if row["library"] == EPS0:
            continue
        for key in TASK_KEYS:
            status = row.get(f"{key}_status", "")
            if status.startswith(("n/a", "error", "cannot")):
                where = f"{row['structure']} n={row['n']}"
                seen.setdefault(f"{row['library']} ({key}): {status}", []).append(where)
        if row.get("check_error"):
            seen.setdefault(f"{row['library']} (check): {row['check_error']}", []).append(
                f"{row['structure']} n={row['n']}"
            )
    return [f"{line} [{', '.join(dict.fromkeys(where))}]" for line, where in seen.items()]


# ---------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.structs",
        description=(
            "log Z + marginals and best-tree time of treeattn.structs (CKY, Eisner, "
            "MatrixTree) against torch-struct and supar where installed, with agreement of "
            "their outputs. Run from the repository root."
        ),
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 40, 80], help="words n")
    parser.add_argument(
        "--structures", nargs="+", choices=STRUCTURES, default=list(STRUCTURES), help="what to run"
    )
    parser.add_argument("--batch", type=int, default=32, help="items per batch (32)")
    parser.add_argument("--labels", type=int, default=26, help="CKY span labels (26)")
    parser.add_argument(
        "--stability-n",
        type=int,
        default=None,
        help="words n of the matrix-tree stability table (40; with --quick the largest size)",
    )
    parser.add_argument(
        "--stability-batch", type=int, default=8, help="items of the stability table (8)"
    )
    parser.add_argument(
        "--no-stability", action="store_true", help="skip the matrix-tree stability table"
    )
    # Many rounds where a round takes milliseconds: medians that a shared machine moves less.
    add_run_arguments(parser, "structs.{json,md}", 3.0, "n = 6, 10, batch 4", repeats=200)
    args = finish_run_arguments(parser.parse_args(argv), quick_sizes=[6, 10], quick_batch=4)
    if args.stability_n is None:
        args.stability_n = max(args.sizes) if args.quick else 40
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    device = start_device(args)
    if device is None:
        return 2
    info = machine_info(device)
    modules, missing = {}, {}
    for library in LIBRARIES:
        modules[library], why = import_library(library)
        if why is not None:
            missing[library] = why
    versions = {lib: library_version(lib) for lib in LIBRARIES}
    print(
        f"machine: {machine_line(info)}; batch {args.batch}, float32 timing, float64 checks; "
        + ", ".join(f"{lib} {versions[lib] or missing.get(lib, '?')}" for lib in LIBRARIES),
        flush=True,
    )

    rows: list[dict] = []
    notes: dict[str, None] = {}
    extra: list[str] = []
    begin = time.perf_counter()
    solvers_of: dict[str, dict[str, Solver | str]] = {}
    for structure in args.structures:
        solvers = solvers_of[structure] = {}
        for library in LIBRARIES:
            if library in missing:
                solvers[library] = missing[library]
                continue
            try:
                solvers[library] = make_solver(structure, library, modules[library], args.labels)
                notes.update(dict.fromkeys(solvers[library].notes))
            except ImportError as error:
                solvers[library] = f"cannot import: {error}"
        for n in args.sizes:
            scores64 = random_scores(structure, n, args, device)
            reference: dict = {}
            usable = {lib: solver for lib, solver in solvers.items() if not isinstance(solver, str)}
            timings = time_libraries(structure, n, usable, scores64, args, device)
            for library in LIBRARIES:
                solver = solvers[library]
                if isinstance(solver, str):
                    row = {"structure": structure, "n": n, "library": library}
                    for key in TASK_KEYS:
                        row[f"{key}_ms"], row[f"{key}_status"] = None, solver
                    rows.append(row)
                    print(f"{structure:>11} n={n:<3} {library:>12}: {solver}", flush=True)
                    continue
                out = run_library(
                    structure,
                    n,
                    library,
                    solver,
                    scores64,
                    args,
                    device,
                    timings[library],
                    None if library == "ours" else reference,
                )
                if library == "ours":
                    reference = out["results"]
                row = out["row"]
                rows.append(row)
                line = f"{structure:>11} n={n:<3} {library:>12}: " + ", ".join(
                    f"{key} {ms_cell(row, key)} ms" for key in TASK_KEYS if f"{key}_status" in row
                )
                if library != "ours":
                    d_z, d_m = row.get("max_abs_diff_log_z"), row.get("max_abs_diff_marginals")
                    if d_z is not None and d_m is not None:
                        line += f"; max |d logZ| {d_z:.1e}, |d marg| {d_m:.1e}"
                    if row.get("trees_identical_64") is not None:
                        line += (
                            f"; same best tree {row['trees_identical_64']}/{args.batch} (f64), "
                            f"{row.get('trees_identical_32')}/{args.batch} (f32)"
                        )
                print(line, flush=True)
            if structure == "matrix-tree" and "torch-struct" not in missing and reference:
                try:
                    row = torch_struct_eps0_row(scores64, n, args, device, reference)
                except Exception as error:
                    row = None
                    extra.append(f"{EPS0} check failed at n={n}: {short(error)}")
                if row is not None:
                    rows.append(row)
                    print(
                        f"{structure:>11} n={n:<3} {EPS0}: max |d logZ| "
                        f"{row['max_abs_diff_log_z']:.1e}, |d marg| "
                        f"{row['max_abs_diff_marginals']:.1e}",
                        flush=True,
                    )

    stability: list[dict] = []
    stability_seconds = None
    if "matrix-tree" in args.structures and not args.no_stability:
        start = time.perf_counter()
        stability = stability_rows(
            solvers_of["matrix-tree"], args.stability_n, args.stability_batch, args.seed, device
        )
        stability_seconds = time.perf_counter() - start
        for row in stability:
            if row["status"].startswith("error"):
                extra.append(f"stability, {row['library']} on {row['scores']}: {row['status']}")
    elapsed = time.perf_counter() - begin

    cells = timed_cells(rows, args.structures, args.sizes)
    times = time_table(cells)
    ratio_headers, ratios = ratio_table(cells, args.sizes)
    checks = check_table(rows, args.batch)
    problems = [f"{lib}: {NOT_INSTALLED}" for lib, why in missing.items() if why == NOT_INSTALLED]
    problems += status_notes(rows)
    print(" | ".join(TIME_HEADERS))
    for line in times:
        print(" | ".join(line))
    print(" | ".join(ratio_headers))
    for line in ratios:
        print(" | ".join(line))
    print(" | ".join(CHECK_HEADERS))
    for cells in checks:
        print(" | ".join(cells))
    stable = stability_table(stability)
    if stable:
        print(
            f"matrix-tree stability, float64, n = {args.stability_n}, batch "
            f"{args.stability_batch} ({stability_seconds:.1f} s):"
        )
        print(" | ".join(STABILITY_HEADERS))
        for cells in stable:
            print(" | ".join(cells))
    for line in problems:
        print(line)

    libs = ", ".join(
        f"{lib} {versions[lib]}" if versions[lib] else f"{lib} {missing.get(lib, '?')}"
        for lib in LIBRARIES
    )
    markdown = [
        "# Tree distributions: ours vs torch-struct and supar",
        "",
        f"Machine: {machine_line(info)} ({info['cpu_cores']} cores); {libs}. Batch "
        f"{args.batch}, every item exactly n words, float32 N(0, 1) scores (seeded), CKY "
        f"with {args.labels} labels; median ms of up to {args.repeats} interleaved rounds "
        "(every library once per round, in an order drawn anew each round). log Z + "
        "marginals: log Z, then its "
        "gradient by torch.autograd.grad; `.marginals` property: the library's own, on "
        "scores that require grad; best tree: the library's argmax. 'lengths given' passes "
        "lengths (all n), 'no lengths' passes none. ours/faster: ours divided by the faster "
        "library, against the target (pass / MISS).",
        "",
        markdown_table(ratio_headers, ratios),
        "",
        markdown_table(TIME_HEADERS, times),
        "",
        f"Agreement with ours on the same scores in float64 (max abs differences over the "
        f"parts that exist; best trees equal to ours, of {args.batch} items, in float64 and "
        "on the float32 timing inputs):",
        "",
        markdown_table(CHECK_HEADERS, checks) if checks else "(nothing to compare with)",
        "",
        *stability_markdown(stable, args),
        "Notes:",
        "",
        *[f"- {line}" for line in notes],
        *[f"- {line}" for line in extra],
        *[f"- {line}" for line in problems],
        "",
    ]
    write_results(
        args,
        "structs",
        info,
        elapsed,
        "\n".join(markdown),
        libraries={lib: versions[lib] or missing.get(lib) for lib in LIBRARIES},
        tolerance=TOLERANCE,
        cells=cells,
        rows=rows,
        stability={
            "n": args.stability_n,
            "batch": args.stability_batch,
            "seconds": stability_seconds,
            "rows": stability,
        },
        notes=list(notes),
        status_notes=problems,
        extra_checks=extra,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
