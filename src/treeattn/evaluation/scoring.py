"""Log-probabilities of texts under a language model, piece by piece, for causal and masked
models alike.

A ``LanguageModel`` (a backend: a ``transformers`` model in a local folder, or one of this
project's language models, ``treeattn.evaluation.models``) splits a raw text into pieces
that keep their character spans, and gives log-probabilities at chosen positions of a
padded batch. A ``Scorer`` turns that into ``TextScores``: the natural-log probability of
each piece of the text,

- causal models: log p(piece_i | the start piece(s), piece_1 .. piece_i-1);
- masked models: the pseudo-log-likelihood (Salazar et al. 2020), log p(piece_i | every
  other piece) with piece_i masked; or, with ``pll="word-l2r"`` (Kauf & Ivanova 2023), with
  the later pieces of the same word masked too, so that a word split into pieces is not
  scored from its own later pieces.

Sequences are cut into batches of at most ``batch_tokens`` tokens (padding counted), the
longest first, so that one call scores thousands of texts.

>>> import math
>>> from treeattn.evaluation.scoring import TableModel
>>> model = TableModel({("<s>", "a"): 0.5, ("a", "b"): 0.25})
>>> [round(math.exp(p), 2) for p in Scorer(model).score(["a b"])[0].log_probs]
[0.5, 0.25]
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

CAUSAL, MASKED = "causal", "masked"
KINDS = (CAUSAL, MASKED)
PLL_TOKEN, PLL_WORD_L2R = "token", "word-l2r"
PLL_VARIANTS = (PLL_TOKEN, PLL_WORD_L2R)
LN2 = math.log(2.0)


class Progress(Protocol):
    """A progress bar (``tqdm``'s): its total, growing as work is found, and its count."""

    total: float | None

    def update(self, n: int = 1) -> object: ...

    def refresh(self) -> None: ...


@dataclass(frozen=True)
class PieceText:
    """A text as a model's pieces: their ids, each one's characters ``spans[i] = (start,
    end)`` in the text, and the word (0-based, by white space or the model's own words)
    each belongs to. A piece with an empty span (a start token) belongs to no character."""

    ids: list[int]
    spans: list[tuple[int, int]]
    words: list[int]


class LanguageModel(ABC):
    """What a scorer needs of a language model (a backend).

    ``kind``: ``causal`` or ``masked``. ``prefix`` and ``suffix``: the ids put before and
    after a text's pieces (a start token; for BERT, ``[CLS]`` and ``[SEP]``); a causal model
    needs at least one prefix id, from which its first piece is predicted. ``mask_id``: the
    id of the mask token (masked models). ``pad_id``: the id padding takes.
    """

    kind: str
    name: str
    prefix: list[int]
    suffix: list[int]
    mask_id: int | None = None
    pad_id: int = 0

    @abstractmethod
    def pieces(self, text: str) -> PieceText:
        """The pieces of a raw text, without the prefix and suffix."""

    @abstractmethod
    def log_probs(
        self, ids: torch.Tensor, pad_mask: torch.Tensor, at: torch.Tensor
    ) -> torch.Tensor:
        """(k, V) log-softmax over the vocabulary at the ``k`` positions where ``at`` (B, n)
        is True, for the batch ``ids`` (B, n) with ``pad_mask`` (B, n) True at padding. A
        causal model's distribution at position t is that of the piece at t + 1."""

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")


@dataclass(frozen=True)
class TextScores:
    """One text's pieces and the natural-log probability of each (``log_probs``)."""

    text: str
    pieces: PieceText
    log_probs: list[float]

    @property
    def total(self) -> float:
        """The text's log-probability (a masked model's pseudo-log-likelihood)."""
        return math.fsum(self.log_probs)

    def span_log_prob(self, start: int, end: int) -> float:
        """The summed log-probability of the pieces that begin inside characters
        ``[start, end)`` (a piece over two regions counts in the one it begins in;
        leading white space of a piece is not its beginning)."""
        return math.fsum(
            lp
            for lp, first in zip(self.log_probs, self.first_characters(), strict=True)
            if first is not None and start <= first < end
        )

    def first_characters(self) -> list[int | None]:
        """The character each piece begins at, white space skipped (None: no character)."""
        firsts: list[int | None] = []
        for begin, end in self.pieces.spans:
            first = begin
            while first < end and self.text[first].isspace():
                first += 1
            firsts.append(first if first < end else None)
        return firsts


@dataclass(frozen=True)
class _Sequence:
    """One row of a batch: ids, the positions whose log-probability is read there, the
    ids read at them, and where the results go (text index, piece index)."""

    ids: list[int]
    read_at: list[int]
    targets: list[int]
    text: int
    pieces: list[int]


class Scorer:
    """Scores texts with a ``LanguageModel``: ``score(texts)`` gives each one's
    ``TextScores``. ``pll``: the pseudo-log-likelihood of masked models, ``token``
    (Salazar et al. 2020) or ``word-l2r`` (Kauf & Ivanova 2023). ``batch_tokens``: padded
    tokens per forward pass."""

    def __init__(self, model: LanguageModel, batch_tokens: int = 4096, pll: str = PLL_TOKEN):
        if model.kind not in KINDS:
            raise ValueError(f"a language model is causal or masked, not {model.kind!r}")
        if pll not in PLL_VARIANTS:
            raise ValueError(f"pll must be one of {', '.join(PLL_VARIANTS)}, not {pll!r}")
        if model.kind == CAUSAL and not model.prefix:
            raise ValueError(f"{model.name}: a causal model needs a start token to predict from")
        if model.kind == MASKED and model.mask_id is None:
            raise ValueError(f"{model.name}: a masked model needs a mask token")
        if batch_tokens < 1:
            raise ValueError(f"batch_tokens must be positive, got {batch_tokens}")
        self.model, self.batch_tokens, self.pll = model, batch_tokens, pll

    @property
    def kind(self) -> str:
        return self.model.kind

    def describe(self) -> str:
        if self.kind == CAUSAL:
            return f"{self.model.name} (causal: log-probabilities)"
        return f"{self.model.name} (masked: pseudo-log-likelihood, {self.pll})"

    def score(self, texts: Sequence[str], progress: Progress | None = None) -> list[TextScores]:
        """Each text's piece log-probabilities, in order; a text repeated is scored once.
        ``progress`` (a ``tqdm`` bar) grows by the texts to score and counts them done."""
        unique = list(dict.fromkeys(texts))
        if progress is not None:
            progress.total = (progress.total or 0) + len(unique)
            progress.refresh()
        pieces = [self.model.pieces(text) for text in unique]
        for text, found in zip(unique, pieces, strict=True):
            if not found.ids:
                raise ValueError(f"{self.model.name} reads no piece in the text {text!r}")
        found_log_probs = [[0.0] * len(p.ids) for p in pieces]
        rows = [row for i, p in enumerate(pieces) for row in self._rows(i, p)]
        left = [0] * len(unique)
        for row in rows:
            left[row.text] += 1
        for batch in self._batches(rows):
            values = self._run(batch)
            done = 0
            for row, row_values in zip(batch, values, strict=True):
                for piece, value in zip(row.pieces, row_values, strict=True):
                    found_log_probs[row.text][piece] = value
                left[row.text] -= 1
                done += left[row.text] == 0
            if progress is not None and done:
                progress.update(done)
        by_text = {
            text: TextScores(text, p, lp)
            for text, p, lp in zip(unique, pieces, found_log_probs, strict=True)
        }
        return [by_text[text] for text in texts]

    def _rows(self, index: int, text: PieceText) -> Iterator[_Sequence]:
        """The sequences one text needs: one for a causal model; one per piece for a
        masked one, that piece masked (and, word-l2r, its word's later pieces)."""
        prefix, suffix, n = self.model.prefix, self.model.suffix, len(text.ids)
        if self.kind == CAUSAL:
            ids = [*prefix, *text.ids]
            start = len(prefix) - 1  # the distribution at t is that of the piece at t + 1
            yield _Sequence(ids, list(range(start, start + n)), text.ids, index, list(range(n)))
            return
        for i in range(n):
            masked = [
                j
                for j in range(n)
                if j == i or (self.pll == PLL_WORD_L2R and j > i and text.words[j] == text.words[i])
            ]
            ids = list(text.ids)
            for j in masked:
                ids[j] = self.model.mask_id
            yield _Sequence([*prefix, *ids, *suffix], [len(prefix) + i], [text.ids[i]], index, [i])

    def _batches(self, rows: list[_Sequence]) -> Iterator[list[_Sequence]]:
        """Rows the longest first, in batches of at most ``batch_tokens`` padded tokens."""
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i].ids))
        batch: list[_Sequence] = []
        for i in order:
            if batch and len(batch[0].ids) * (len(batch) + 1) > self.batch_tokens:
                yield batch
                batch = []
            batch.append(rows[i])
        if batch:
            yield batch

    @torch.no_grad()
    def _run(self, batch: list[_Sequence]) -> list[list[float]]:
        """The log-probabilities the rows of one batch read, row by row."""
        # Built from flat lists in one call each: a tensor and an indexing a row took
        # about a seventh of a small masked model's scoring time.
        lengths = [len(row.ids) for row in batch]
        width, pad = max(lengths), self.model.pad_id
        device = self.model.device
        ids = torch.tensor([row.ids + [pad] * (width - len(row.ids)) for row in batch])
        pad_mask = torch.arange(width)[None, :] >= torch.tensor(lengths)[:, None]
        at = torch.zeros(len(batch), width, dtype=torch.bool)
        at[
            torch.tensor([r for r, row in enumerate(batch) for _ in row.read_at]),
            torch.tensor([k for row in batch for k in row.read_at]),
        ] = True
        # Row-major, as boolean indexing reads ``at`` (each row's ``read_at`` ascends).
        targets = [t for row in batch for t in row.targets]
        log_probs = self.model.log_probs(ids.to(device), pad_mask.to(device), at.to(device))
        picked = log_probs.float().gather(1, torch.tensor(targets, device=device)[:, None])
        values = picked.squeeze(1).tolist()
        out, k = [], 0
        for row in batch:
            out.append(values[k : k + len(row.targets)])
            k += len(row.targets)
        return out


class TableModel(LanguageModel):
    """A language model given by a table of probabilities, for tests and examples.

    A text's words are split on spaces, and a word's pieces on ``_`` (``un_happy``: two
    pieces of one word). ``table[(given, piece)]`` is ``p(piece | given)``: for a causal
    model ``given`` is the previous piece (``<s>`` before the first), for a masked one the
    next piece as the model sees it (``<mask>`` where it is masked too, ``</s>`` after the
    last). Mass the table leaves is spread evenly over the other pieces of the vocabulary
    (the table's). Log-probabilities and pseudo-log-likelihoods are then sums of table
    entries, computable by hand."""

    START, END, MASK, PAD = "<s>", "</s>", "<mask>", "<pad>"

    def __init__(self, table: dict[tuple[str, str], float], kind: str = CAUSAL) -> None:
        special = [self.PAD, self.START, self.END, self.MASK]
        words = sorted({w for pair in table for w in pair} - set(special))
        self.vocab = [*special, *words]
        self.ids = {w: i for i, w in enumerate(self.vocab)}
        self.kind, self.name = kind, f"table ({kind})"
        causal = kind == CAUSAL
        self.prefix = [self.ids[self.START]] if causal else []
        self.suffix = [] if causal else [self.ids[self.END]]
        self.mask_id, self.pad_id = self.ids[self.MASK], self.ids[self.PAD]
        size = len(self.vocab)
        probs = torch.zeros(size, size, dtype=torch.float64)
        real = [self.ids[w] for w in words]
        for given in range(size):
            found = {self.ids[b]: p for (a, b), p in table.items() if self.ids[a] == given}
            rest = [w for w in real if w not in found]
            spare = 1.0 - sum(found.values())
            for w in real:
                probs[given, w] = found.get(w, spare / max(1, len(rest)))
        self.table = probs.clamp_min(1e-12).log()

    def pieces(self, text: str) -> PieceText:
        ids, spans, words, position = [], [], [], 0
        for k, word in enumerate(text.split()):
            position = text.index(word, position)
            for piece in word.split("_"):
                ids.append(self.ids[piece])
                spans.append((position, position + len(piece)))
                words.append(k)
                position += len(piece) + 1
            position -= 1
        return PieceText(ids, spans, words)

    def log_probs(
        self, ids: torch.Tensor, pad_mask: torch.Tensor, at: torch.Tensor
    ) -> torch.Tensor:
        if self.kind == CAUSAL:
            return self.table[ids[at]]  # the distribution after the piece at t
        following = torch.cat([ids[:, 1:], torch.full_like(ids[:, :1], self.pad_id)], dim=1)
        return self.table[following[at]]
