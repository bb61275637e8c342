"""Best non-projective dependency trees (Chu-Liu-Edmonds) and conversions between trees.

Arc scores follow the convention of every dependency structure here: ``scores[h, m]``
(batched: ``scores[b, h, m]``, shape (B, n+1, n+1)) scores the arc from head ``h`` to
dependent ``m``; position 0 is the ROOT and words are ``1..n``. Column 0 (arcs into the root)
and the diagonal are ignored. A tree gives every word one head, has no cycle, and hangs
exactly one word from the root.

Trees are written two ways: *heads* (B, n+1) long, ``heads[b, m]`` the head of word ``m``
with -1 at position 0 and at padding, as ``DependencyTree.heads`` shifted by one position;
and *arcs* (B, n+1, n+1), 0/1 with a 1 at ``[b, heads[b, m], m]``, the shape of marginals.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from treeattn.structs.base import check_lengths


def check_arc_scores(scores: torch.Tensor, name: str) -> None:
    """Raise ``ValueError`` unless ``scores`` is (B, n+1, n+1) with n >= 1."""
    if scores.dim() != 3 or scores.shape[1] != scores.shape[2] or scores.shape[1] < 2:
        raise ValueError(
            f"{name} scores must be (B, n+1, n+1) with n >= 1 words, got {tuple(scores.shape)}"
        )


def check_real_arcs_finite(scores: torch.Tensor, lengths: torch.Tensor, name: str) -> None:
    """Raise ``ValueError`` if a score a tree may use is infinite (NaN is checked apart).

    -inf can leave a sum with no finite term, whose gradient is NaN: forbid an arc with a
    large negative finite score (say -1e4) instead. Ignored entries (column 0, diagonal,
    padding) may hold anything but NaN.
    """
    # A masked test, not a boolean index: no nonzero() (a host sync and a copy).
    if (torch.isinf(scores.detach()) & real_arcs_mask(lengths, scores.shape[-1] - 1)).any():
        raise ValueError(f"{name} scores must be finite on real arcs (use -1e4, not -inf)")


def real_arcs_mask(lengths: torch.Tensor, n: int) -> torch.Tensor:
    """(B, n+1, n+1) bool: True at the arcs a tree of each item may use.

    Heads ``0..len``, dependents ``1..len``, no self-loops; ``lengths`` (B,) counts words.
    """
    return farthest_position(n, lengths.device) <= lengths[:, None, None]


@functools.lru_cache(maxsize=64)
def farthest_position(n: int, device: torch.device) -> torch.Tensor:
    """(n+1, n+1) the farthest position arc ``[h, m]`` touches, or n + 1 (past every
    length) for an arc no tree uses (into the root, a self-loop): compared with the
    lengths, it gives the real arcs in one operation. Cached: it is read, never written."""
    positions = torch.arange(n + 1, device=device)
    farthest = torch.maximum(positions[:, None], positions[None, :])
    farthest[:, 0] = n + 1
    return farthest.fill_diagonal_(n + 1)


# ---------------------------------------------------------------------- Chu-Liu-Edmonds


def chu_liu_edmonds(scores: np.ndarray) -> np.ndarray:
    """Heads (n+1,) of the best tree with exactly one root word.

    ``scores`` (n+1, n+1): ``scores[h, m]`` scores the arc ``h -> m``, position 0 is the
    ROOT; column 0 and the diagonal are ignored, the other entries must be finite. Returns
    ``heads`` with ``heads[0] == -1`` and ``heads[m]`` in ``0..n`` (0 for the root word).
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[0] != scores.shape[1] or scores.shape[0] < 2:
        raise ValueError(f"scores must be (n+1, n+1) with n >= 1 words, got {scores.shape}")
    size = scores.shape[0]
    n = size - 1
    allowed = ~np.eye(size, dtype=bool)
    allowed[:, 0] = False
    arc_scores = scores[allowed]
    if not np.isfinite(arc_scores).all():
        raise ValueError("arc scores must be finite (no NaN or inf)")
    graph = np.where(allowed, scores, -np.inf)
    # Single root: every tree's score lies in [n * low, n * high], so with a penalty above
    # n * (high - low) on every root arc a one-root tree (one penalty) beats every tree
    # with k >= 2 root words (k penalties), while all one-root trees lose the same amount
    # and keep their order. The best unconstrained tree is then the best one-root tree.
    penalty = n * float(arc_scores.max() - arc_scores.min()) + 1.0
    graph[0, 1:] -= penalty
    return _maximum_arborescence(graph)


def _maximum_arborescence(graph: np.ndarray) -> np.ndarray:
    """Heads of the best tree rooted at node 0 of a dense graph (``-inf``: no arc).

    Chu-Liu-Edmonds, contracting one cycle at a time in place. Node ``v`` points to its
    best head; walks follow these pointers from each node in turn, and a walk that closes
    a cycle contracts it into its first node (the representative), then goes on from
    there. Contracting a cycle C rewrites only the representative's row and column (an
    arc entering C at ``v`` is scored relative to ``v``'s arc in C, which it replaces;
    an arc leaving C keeps its score) and hides the other members: O(n |C|) numpy work
    per cycle, no recursion, no Python loop over arcs. ``original`` tracks which arc of
    the input each entry now stands for, and the cycles are expanded in reverse order:
    a cycle keeps all its arcs but the one into the member that the entering arc reaches.
    """
    size = graph.shape[0]
    graph = graph.copy()
    original = np.arange(size * size).reshape(size, size)  # arc id: head * size + dependent
    best_head = graph.argmax(axis=0)
    owner = np.arange(size)  # node (representative) that holds each input node
    # Per contraction: the input nodes inside, the member holding each, and per member
    # its cycle arc as an input arc id.
    contractions: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    nodes = np.arange(size)
    on_walk, finished = 1, 2
    state = [0] * size
    state[0] = finished
    for start in range(1, size):
        if state[start]:
            continue
        walk = [start]
        state[start] = on_walk
        while True:
            head = int(best_head[walk[-1]])
            if state[head] == finished:
                break
            if state[head] == 0:
                state[head] = on_walk
                walk.append(head)
                continue
            at = walk.index(head)
            members = np.array(walk[at:])
            del walk[at:]
            representative, others = members[0], members[1:]

            cycle_heads = best_head[members]
            cycle_arcs = original[cycle_heads, members]
            entering = graph[:, members] - graph[cycle_heads, members]
            enter_at = entering.argmax(axis=1)
            graph[:, representative] = entering[nodes, enter_at]
            original[:, representative] = original[nodes, members[enter_at]]
            leaving = graph[members]
            leave_at = leaving.argmax(axis=0)
            graph[representative] = leaving[leave_at, nodes]
            original[representative] = original[members[leave_at], nodes]
            graph[representative, members] = -np.inf  # arcs inside the cycle
            graph[others] = -np.inf  # hidden members head nothing (their columns go unread)

            is_member = np.zeros(size, dtype=bool)
            is_member[members] = True
            inside = np.flatnonzero(is_member[owner])
            contractions.append((inside, owner[inside], members, cycle_arcs))
            owner[inside] = representative
            is_member[representative] = False
            best_head[is_member[best_head]] = representative
            best_head[representative] = graph[:, representative].argmax()
            for member in others.tolist():
                state[member] = finished  # never walked again: nothing points to it
            walk.append(int(representative))
        for node in walk:
            state[node] = finished

    heads = np.full(size, -1, dtype=np.int64)
    remaining = np.flatnonzero(owner == nodes)[1:]
    chosen = original[best_head[remaining], remaining]
    heads[chosen % size] = chosen // size
    for inside, holder, members, cycle_arcs in reversed(contractions):
        entered = holder[heads[inside] >= 0]  # one input node inside already has a head
        kept = cycle_arcs[members != entered[0]]
        heads[kept % size] = kept // size
    return heads


# ---------------------------------------------------------------------- batched trees


def best_heads(scores: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
    """Heads (B, n+1) long of each item's best single-root tree by Chu-Liu-Edmonds.

    ``scores`` (B, n+1, n+1) on any device; ``lengths`` (B,) counts words (default n).
    ``heads[b, 0]`` and padding are -1. Runs on the CPU, one item at a time; the result is
    on the scores' device.
    """
    check_arc_scores(scores, "best_heads")
    n = scores.shape[-1] - 1
    lengths = check_lengths(scores, lengths, n)
    array = scores.detach().to("cpu", torch.float64).numpy()
    heads = np.full((scores.shape[0], n + 1), -1, dtype=np.int64)
    for item, length in enumerate(lengths.tolist()):
        heads[item, : length + 1] = chu_liu_edmonds(array[item, : length + 1, : length + 1])
    return torch.from_numpy(heads).to(scores.device)


def heads_to_arcs(
    heads: torch.Tensor, n: int | None = None, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """0/1 arcs (B, n+1, n+1) from heads (B, m+1) (-1 where a position has no head).

    ``n`` (default m) sizes the result, so trees of ``m`` words can fill a larger batch.
    """
    if heads.dim() != 2:
        raise ValueError(f"heads must be (B, n+1), got {tuple(heads.shape)}")
    n = heads.shape[1] - 1 if n is None else n
    if n < heads.shape[1] - 1:
        raise ValueError(f"heads of {heads.shape[1] - 1} words do not fit n = {n}")
    if heads.numel() and (heads.min() < -1 or heads.max() > n):
        raise ValueError(f"heads must lie in -1..{n}")
    batch = heads.shape[0]
    arcs = torch.zeros(batch, n + 1, n + 1, dtype=dtype, device=heads.device)
    item, dependent = torch.nonzero(heads >= 0, as_tuple=True)
    arcs[item, heads[item, dependent], dependent] = 1.0
    return arcs


def arcs_to_heads(arcs: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
    """Heads (B, n+1) long from 0/1 arcs (B, n+1, n+1) such as ``argmax``; the inverse of
    ``heads_to_arcs``. ``lengths`` (B,) counts words (default n); position 0 and padding
    get -1. ``ValueError`` unless every real word has exactly one head."""
    check_arc_scores(arcs, "arcs_to_heads")
    n = arcs.shape[-1] - 1
    lengths = check_lengths(arcs, lengths, n)
    mask = real_arcs_mask(lengths, n)
    chosen = (arcs != 0) & mask
    positions = torch.arange(n + 1, device=arcs.device)
    is_word = (positions[None, :] >= 1) & (positions[None, :] <= lengths[:, None])
    head_count = chosen.sum(1)  # (B, n+1) heads per dependent
    if ((head_count != 1) & is_word).any():
        raise ValueError("every word needs exactly one head among the arcs")
    heads = chosen.long().argmax(1)
    return heads.masked_fill(~is_word, -1)
