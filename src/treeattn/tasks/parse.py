"""Joint constituency and dependency parsing with the label attention parser (Mrini et al.
2020) on the PTB sample (constituency trees; dependencies from head rules) or on UD EWT
(dependencies only).

Constituency: a chart of span scores, the structured hinge loss with Hamming-augmented
decoding (Stern et al. 2017), every sentence of a batch decoded at once by ``CKY``; unary
chains are one label (``S+VP``) and are split again on output. Dependency: biaffine arc and
label scores, cross-entropy, trees decoded by ``Eisner`` (projective) or Chu-Liu-Edmonds.
Tags are predicted (an auxiliary loss), never read. The constituency and dependency trees
are decoded separately (the paper decodes them jointly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from treeattn.data.batching import bucket_batches, pad_ids
from treeattn.data.ptb import load_ptb_sample
from treeattn.data.ud import load_ud
from treeattn.data.vocab import Vocab
from treeattn.engine.config import Config, check_positive
from treeattn.engine.task import Selection, Task, evaluating
from treeattn.metrics.dependency import attachment_scores
from treeattn.metrics.evalb import EvalbResult, evalb, format_evalb
from treeattn.models.parser import LabelAttentionParser, ParserOutput, ParserSizes
from treeattn.structs import CKY, Eisner, arcs_to_heads, best_heads
from treeattn.structs.cky import tree_spans
from treeattn.tasks.sentences import lines_to_sentences
from treeattn.trees import Tree
from treeattn.trees.dependency import DependencyTree, format_conllu, read_conllu
from treeattn.trees.head_rules import to_dependency
from treeattn.trees.transforms import chain_spans, clean_ptb, tree_from_chain_spans
from treeattn.trees.treebank import iter_treebank

PTB, UD, FILES = "ptb-sample", "ud-en-ewt", "files"
EMPTY = "<empty>"  # the label of a span that is no constituent (score fixed at 0)
START, STOP = "<s>", "</s>"
IGNORE = -100


@dataclass
class ParseData:
    """``name``: ``ptb-sample`` (constituency and head-rule dependencies), ``ud-en-ewt``
    (dependencies only) or ``files``: ``paths`` names a file per split (``train``, ``dev``,
    ``test``), bracketed trees (one per line, or ``.mrg``; cleaned as the PTB sample is)
    or CoNLL-U (``.conllu``: dependencies only)."""

    name: str = PTB
    root: str | None = None  # data folder; default from TREEATTN_DATA
    paths: dict = field(default_factory=dict)
    min_count: int = 1  # words seen fewer times in training become <unk>


@dataclass
class ParseModel:
    """The network's sizes (``ParserSizes``), the loss weights and the dependency decoder."""

    d_word: int = 100
    d_char: int = 64
    d_content: int = 128
    d_position: int = 128
    max_length: int = 300
    n_layers: int = 3
    n_heads: int = 8
    d_kv: int = 32
    d_ff: int = 512
    dropout: float = 0.2
    word_dropout: float = 0.2
    label_attention: bool = True
    lal_heads: int = 0  # 0: one per constituent label of the training data
    lal_d_kv: int = 32
    lal_d_proj: int = 16
    lal_query: str = "vector"  # or matrix (W^Q, Table 2)
    lal_combine: str = "concat"  # or self (heads combined as self-attention, Table 2)
    lal_residual_dropout: float = 0.0  # RD (Table 1)
    lal_feed_forward: bool = True  # PFL (Table 1)
    d_label_hidden: int = 128
    d_tag_hidden: int = 128
    d_arc: int = 256
    d_rel: int = 32
    dependency_weight: float = 0.5  # L = L_c + w L_d (the release's 0.5)
    tag_weight: float = 1.0
    decoder: str = "eisner"  # or mst (Chu-Liu-Edmonds)


@dataclass
class ParseExample:
    """A sentence with its gold trees (``tree`` None for dependency-only data)."""

    words: list[str]
    tags: list[str]
    tree: Tree | None = None
    dependencies: DependencyTree | None = None


@dataclass
class ParseBatch:
    words: torch.Tensor  # (B, T) with start and stop tokens
    chars: torch.Tensor  # (B, T, C)
    pad_mask: torch.Tensor  # (B, T)
    lengths: torch.Tensor  # (B,) words
    tags: torch.Tensor  # (B, n), IGNORE at padding
    heads: torch.Tensor | None = None  # (B, n)
    rels: torch.Tensor | None = None  # (B, n)
    gold_chart: torch.Tensor | None = None  # (B, n, n, L), 0/1

    def to(self, device: torch.device) -> ParseBatch:
        def move(x: Any) -> Any:
            return None if x is None else x.to(device)

        return ParseBatch(*(move(getattr(self, f.name)) for f in fields(self)))


class ParseSet:
    """Sentences encoded once; batches build the gold charts of the sentences they hold."""

    def __init__(self, examples: Sequence[ParseExample], task: ParseTask) -> None:
        self.examples = list(examples)
        self.lengths = [len(ex.words) + 2 for ex in examples]
        self.task = task
        self.words = [torch.tensor(task.words.encode([START, *ex.words, STOP])) for ex in examples]
        self.chars = [task.encode_chars(ex.words) for ex in examples]
        self.tags = [torch.tensor(task.tags.encode(ex.tags)) for ex in examples]
        spans = [task.gold_spans(ex) for ex in examples]
        self.spans = [None if item is None else torch.tensor(item).view(-1, 3) for item in spans]
        self.heads = [
            torch.tensor(ex.dependencies.heads) if ex.dependencies else None for ex in examples
        ]
        self.rels = [
            torch.tensor(task.rels.encode(ex.dependencies.relations)) if ex.dependencies else None
            for ex in examples
        ]

    def __len__(self) -> int:
        return len(self.examples)

    def batch(self, indices: Sequence[int]) -> ParseBatch:
        words, pad_mask = pad_ids([self.words[i] for i in indices])
        width = max(c.shape[1] for i in indices for c in [self.chars[i]])
        chars = torch.zeros(*words.shape, width, dtype=torch.long)
        for row, i in enumerate(indices):
            chars[row, : self.chars[i].shape[0], : self.chars[i].shape[1]] = self.chars[i]
        tags, _ = pad_ids([self.tags[i] for i in indices], IGNORE)
        lengths = torch.tensor([self.lengths[i] - 2 for i in indices])
        batch = ParseBatch(words, chars, pad_mask, lengths, tags)
        if all(self.heads[i] is not None for i in indices):
            batch.heads = pad_ids([self.heads[i] for i in indices], IGNORE)[0]
            batch.rels = pad_ids([self.rels[i] for i in indices], IGNORE)[0]
        if self.task.constituency and all(self.spans[i] is not None for i in indices):
            batch.gold_chart = gold_chart(
                [self.spans[i] for i in indices], lengths, len(self.task.labels.tokens) - 3
            )
        return batch


def gold_chart(
    span_lists: Sequence[Sequence[tuple[int, int, int]]], lengths: torch.Tensor, n_labels: int
) -> torch.Tensor:
    """(B, n, n, L) 0/1: each gold span (label id, start, end exclusive) in its cell, and
    the empty label (id 0) in every other cell of a sentence."""
    n = int(lengths.max())
    chart = torch.zeros(len(span_lists), n, n, n_labels)
    cells = torch.ones(n, n, dtype=torch.bool).triu()
    inside = torch.arange(n)[None, :] < lengths[:, None]
    chart[..., 0] = (cells & inside[:, :, None] & inside[:, None, :]).float()
    spans = [torch.as_tensor(item, dtype=torch.long).view(-1, 3) for item in span_lists]
    label, start, end = torch.cat(spans).unbind(1)
    batch = torch.repeat_interleave(torch.tensor([len(item) for item in spans]))
    chart[batch, start, end - 1, 0] = 0
    chart[batch, start, end - 1, label] = 1
    return chart


class ParseTask(Task):
    """Parsing, chosen by dev EVALB F1 (or dev LAS for dependency-only data)."""

    name = "parse"
    Data = ParseData
    Model = ParseModel

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        d = cfg.data
        conllu = d.name == FILES and str(d.paths.get("train", "")).endswith(".conllu")
        self.constituency = d.name != UD and not conllu
        self.words = self.chars = self.tags = self.labels = self.rels = None

    @classmethod
    def check_config(cls, cfg: Config, where: str) -> None:
        d, m = cfg.data, cfg.model
        if d.name not in (PTB, UD, FILES):
            raise ValueError(f"{where}: data.name={d.name!r}; parsing reads {PTB}, {UD} or {FILES}")
        if d.name == FILES:
            for split in ("train", "dev", "test"):
                if not isinstance(d.paths.get(split), str):
                    raise ValueError(f"{where}: data.paths.{split} is missing (a file)")
        elif d.paths:
            raise ValueError(f"{where}: data.paths is for data.name={FILES}, not {d.name}")
        sizes = {
            f"model.{f.name}": getattr(m, f.name)
            for f in fields(m)
            if f.type == "int" and f.name != "lal_heads"
        }
        check_positive({"data.min_count": d.min_count, **sizes}, where)
        for key, value, allowed in (
            ("model.lal_query", m.lal_query, ("vector", "matrix")),
            ("model.lal_combine", m.lal_combine, ("concat", "self")),
            ("model.decoder", m.decoder, ("eisner", "mst")),
        ):
            if value not in allowed:
                raise ValueError(f"{where}: {key}={value!r}; use {' or '.join(allowed)}")
        for key in ("d_kv", "lal_d_kv", "lal_d_proj", "d_ff"):
            if getattr(m, key) % 2:
                raise ValueError(f"{where}: model.{key} must be even (content and position halves)")
        if m.lal_heads < 0:
            raise ValueError(f"{where}: model.lal_heads must be 0 (one per label) or more")

    @property
    def headline(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("f1", "uas", "las") if self.constituency else ("uas", "las")

    @property
    def title(self) -> str:
        kind = "label attention" if self.cfg.model.label_attention else "self-attention"
        return f"{kind} parser on {self.cfg.data.name}"

    @property
    def selection(self) -> Selection:
        return Selection("dev", "f1" if self.constituency else "las", higher_is_better=True)

    @property
    def final_splits(self) -> tuple[str, ...]:
        return ("dev", "test")

    # -- data ---------------------------------------------------------------------------

    def read(self, source: str) -> tuple[list[ParseExample], str]:
        d = self.cfg.data
        if d.name == FILES and source in d.paths:
            source = d.paths[source]
        if source in ("train", "dev", "test"):
            where = f"{d.name} {source}"
            if d.name == PTB:
                examples = [
                    _ptb_example(e.tree, e.source, e.line)
                    for e in load_ptb_sample(source, root=d.root, clean=True)
                ]
            else:
                examples = [_ud_example(t) for t in load_ud(source, root=d.root)]
        elif Path(source).is_file():
            where = source
            if not self.constituency:
                examples = [_ud_example(t) for t in read_conllu(source)]
            else:
                examples = [
                    _ptb_example(clean_ptb(e.tree), e.source, e.line) for e in iter_treebank(source)
                ]
        else:
            raise FileNotFoundError(
                f"{source!r} is neither a split name (train, dev, test) nor an existing file"
            )
        if not examples:
            raise ValueError(f"{where}: no sentences")
        self._check_lengths(examples, where)
        return examples, where

    def _check_lengths(self, examples: Sequence[ParseExample], where: str) -> None:
        limit = self.cfg.model.max_length
        for i, ex in enumerate(examples, start=1):
            if len(ex.words) > limit:
                raise ValueError(
                    f"{where}: sentence {i} has {len(ex.words)} words, more than "
                    f"model.max_length={limit}; raise model.max_length"
                )

    def fit(self, train_examples: Sequence[ParseExample]) -> None:
        sentences = [[START, STOP, *ex.words] for ex in train_examples]
        self.words = Vocab.build(sentences, self.cfg.data.min_count)
        self.chars = Vocab.build([[START, STOP]] + [list(w) for s in sentences for w in s[2:]])
        self.tags = Vocab.build(ex.tags for ex in train_examples)
        trees = [ex.tree for ex in train_examples if ex.tree is not None]
        labels = Vocab.build([label for label, _, _ in chain_spans(t)] for t in trees)
        # The empty label comes first among the labels (id 0 of the chart).
        self.labels = Vocab([*labels.tokens[:3], EMPTY, *labels.tokens[3:]])
        self.rels = Vocab.build(
            ex.dependencies.relations for ex in train_examples if ex.dependencies
        )

    def state_dict(self) -> dict[str, Any]:
        return {
            name: getattr(self, name).tokens
            for name in ("words", "chars", "tags", "labels", "rels")
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name in ("words", "chars", "tags", "labels", "rels"):
            setattr(self, name, Vocab(state[name]))

    def encode_chars(self, words: Sequence[str]) -> torch.Tensor:
        """(n + 2, C) character ids of the start token, the words and the stop token."""
        rows = [[self.chars.index.get(START, 1)]]
        rows += [self.chars.encode(list(word)) for word in words]
        rows += [[self.chars.index.get(STOP, 1)]]
        return pad_ids(rows)[0]

    def gold_spans(self, example: ParseExample) -> list[tuple[int, int, int]] | None:
        """(label id in the chart, start, end) of the gold tree's phrases; labels unseen in
        training are left out (they can be scored by EVALB, never predicted)."""
        if example.tree is None:
            return None
        index = self.labels.index
        return [
            (index[label] - 3, start, end)
            for label, start, end in chain_spans(example.tree)
            if label in index
        ]

    def encode(self, examples: Sequence[ParseExample], where: str) -> ParseSet:
        return ParseSet(examples, self)

    # -- model and loss -----------------------------------------------------------------

    def build_model(self) -> nn.Module:
        m = self.cfg.model
        same = {f.name: getattr(m, f.name) for f in fields(ParserSizes) if hasattr(m, f.name)}
        # One label attention head per constituent label (the empty label aside), or per
        # dependency relation for dependency-only data.
        labels = len(self.labels) - 4 if self.constituency else len(self.rels) - 3
        same["lal_heads"] = m.lal_heads or max(1, labels)
        sizes = ParserSizes(
            n_words=len(self.words),
            n_chars=len(self.chars),
            n_tags=len(self.tags),
            n_labels=len(self.labels) - 3 if self.constituency else 1,
            n_rels=len(self.rels),
            **same,
        )
        return LabelAttentionParser(sizes)

    def loss(self, model: nn.Module, batch: ParseBatch) -> torch.Tensor:
        """Per sentence, then averaged over the batch: the constituency hinge loss, plus
        ``tag_weight`` times the tags' cross-entropy and ``dependency_weight`` times the
        arcs' and labels' cross-entropies, each summed over the sentence's words (as the
        authors' release sums every part over its batch, so that the weights keep their
        meaning)."""
        m = self.cfg.model
        out = model(batch.words, batch.chars, batch.pad_mask, batch.heads)
        smoothing = self.cfg.train.label_smoothing

        def summed(logits: torch.Tensor, targets: torch.Tensor, smooth: float) -> torch.Tensor:
            return F.cross_entropy(
                logits.flatten(0, 1),
                targets.flatten(),
                ignore_index=IGNORE,
                reduction="sum",
                label_smoothing=smooth,
            )

        sentences = batch.words.shape[0]
        loss = m.tag_weight * summed(out.tag_logits, batch.tags, smoothing) / sentences
        if batch.gold_chart is not None:
            loss = loss + hinge_loss(out.span_scores, batch.gold_chart, batch.lengths)
        if batch.heads is not None and m.dependency_weight:
            arcs = arc_logits(out.arc_scores, batch.lengths)  # (B, n, n + 1)
            arc = summed(arcs, batch.heads, 0.0)
            rel = summed(out.rel_scores, batch.rels, smoothing)
            loss = loss + m.dependency_weight * (arc + rel) / sentences
        return loss

    # -- evaluation and prediction ------------------------------------------------------

    @torch.no_grad()
    def parse(
        self,
        model: nn.Module,
        data: ParseSet,
        device: torch.device,
        gold_tags: bool = False,
        progress: bool = False,
    ) -> list[tuple[Tree | None, DependencyTree]]:
        """Each sentence's predicted constituency tree (None for dependency-only models)
        and dependency tree (its ``xpos``: the predicted tags), in the order of ``data``;
        whole batches are decoded at once. With ``gold_tags`` the constituency trees carry
        the examples' own tags (for EVALB, see ``evaluate``); ``progress`` shows a bar."""
        found: dict[int, tuple[Tree | None, DependencyTree]] = {}
        batches = bucket_batches(data.lengths, self.cfg.train.eval_max_tokens, False)
        bar = tqdm(total=len(data), unit="sentence", disable=not progress, leave=False)
        with evaluating(model), bar:
            for indices in batches:
                batch = data.batch(indices).to(device)
                out = model(batch.words, batch.chars, batch.pad_mask)
                examples = [data.examples[i] for i in indices]
                trees = self._decode(model, out, batch.lengths, examples, gold_tags)
                found.update(zip(indices, trees, strict=True))
                bar.update(len(indices))
        return [found[i] for i in range(len(data))]

    def _decode(
        self,
        model: nn.Module,
        out: ParserOutput,
        lengths: torch.Tensor,
        examples: list[ParseExample],
        gold_tags: bool = False,
    ) -> list[tuple[Tree | None, DependencyTree]]:
        counts = lengths.tolist()
        tag_ids = out.tag_logits.argmax(-1).cpu()
        tags = [self.tags.decode(row[:n].tolist()) for row, n in zip(tag_ids, counts, strict=True)]
        constituents: list[Tree | None] = [None] * len(examples)
        if self.constituency:
            names = self.labels.tokens[3:]
            chart = CKY(out.span_scores, lengths).argmax
            for b, spans in enumerate(tree_spans(chart, lengths)):
                named = [(names[label], start, end) for label, start, end in spans if label]
                leaf_tags = examples[b].tags if gold_tags else tags[b]
                constituents[b] = tree_from_chain_spans(examples[b].words, named, leaf_tags)
        if self.cfg.model.decoder == "eisner":
            heads = arcs_to_heads(Eisner(out.arc_scores, lengths).argmax, lengths)
        else:
            heads = best_heads(out.arc_scores, lengths)
        heads = heads[:, 1:].clamp(min=0)  # (B, n): word k's head, 0 = root
        rel_ids = model.rel_scores(out, heads).argmax(-1).cpu()
        heads = heads.cpu()
        dependencies = [
            DependencyTree(
                ex.words,
                heads[b, :n].tolist(),
                self.rels.decode(rel_ids[b, :n].tolist()),
                xpos=tags[b],
            )
            for b, (ex, n) in enumerate(zip(examples, counts, strict=True))
        ]
        return list(zip(constituents, dependencies, strict=True))

    def evaluate(self, model: nn.Module, data: ParseSet, device: torch.device) -> dict[str, Any]:
        """EVALB (COLLINS.prm) recall, precision and F1, tagging accuracy, and UAS/LAS with
        punctuation left out (the paper's convention) and kept (``*_punct``, CoNLL 2018).

        EVALB reads the predicted trees with the gold tags on their words: it deletes
        punctuation by each tree's own tags, and a mistagged comma would make the two
        trees' words differ (an error sentence, left out of EVALB's totals). Brackets do
        not depend on tags; the tagger's own accuracy is ``tagging``.
        """
        return self._score(model, data, device)[0]

    def report(self, model: nn.Module, data: ParseSet, device: torch.device) -> str:
        """EVALB's summary, then UAS/LAS without and with punctuation."""
        metrics, result = self._score(model, data, device)
        parts = []
        if result is not None:
            parts.append(format_evalb(result, per_sentence=False).rstrip("\n"))
            parts.append(
                "(EVALB read the gold tags on the predicted trees; the parser's own tagging "
                f"accuracy is {metrics['tagging']:.2f})"
            )
        else:
            parts.append(f"tagging accuracy {metrics['tagging']:.2f}")
        relations = "head-rule PHRASE/CHILD relations" if self.cfg.data.name == PTB else "relations"
        parts.append(f"\n=== Dependencies ({len(data)} sentences; LAS on {relations}) ===")
        parts.append(f"UAS, punctuation excluded (the paper's convention)  {metrics['uas']:6.2f}")
        parts.append(f"LAS, punctuation excluded                          {metrics['las']:6.2f}")
        parts.append(
            f"UAS, punctuation included (CoNLL 2018)             {metrics['uas_punct']:6.2f}"
        )
        parts.append(
            f"LAS, punctuation included (CoNLL 2018)             {metrics['las_punct']:6.2f}"
        )
        return "\n".join(parts)

    def _score(
        self, model: nn.Module, data: ParseSet, device: torch.device
    ) -> tuple[dict[str, Any], EvalbResult | None]:
        parsed = self.parse(model, data, device, gold_tags=True)
        predicted = [deps for _, deps in parsed]
        metrics: dict[str, Any] = {}
        result = None
        if self.constituency:
            result = evalb([ex.tree for ex in data.examples], [tree for tree, _ in parsed])
            metrics.update(
                f1=result.fmeasure,
                recall=result.recall,
                precision=result.precision,
                complete_match=result.total.complete_match,
            )
        pairs = [
            (gold, guess)
            for ex, deps in zip(data.examples, predicted, strict=True)
            for gold, guess in zip(ex.tags, deps.xpos, strict=True)
        ]
        metrics["tagging"] = 100.0 * sum(g == p for g, p in pairs) / max(1, len(pairs))
        gold = [ex.dependencies for ex in data.examples]
        for suffix, ignore in (("", True), ("_punct", False)):
            scores = attachment_scores(
                [g.heads for g in gold],
                [g.relations for g in gold],
                [p.heads for p in predicted],
                [p.relations for p in predicted],
                words=[g.words for g in gold],
                tags=[ex.tags for ex in data.examples],
                ignore_punct=ignore,
            )
            metrics[f"uas{suffix}"], metrics[f"las{suffix}"] = scores.uas, scores.las
        metrics["sentences"] = len(data)
        return metrics, result

    def read_inputs(self, lines: Sequence[str], where: str) -> list[ParseExample]:
        """One tokenized sentence per line (words separated by spaces)."""
        examples = [
            ParseExample(words, ["_"] * len(words)) for words in lines_to_sentences(lines, where)
        ]
        self._check_lengths(examples, where)
        return examples

    @property
    def output_formats(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("brackets", "conllu") if self.constituency else ("conllu",)

    def predict(
        self, model: nn.Module, data: ParseSet, device: torch.device, output_format: str = ""
    ) -> list[str]:
        """Each sentence's bracketed tree (one line), or its dependency tree (a CoNLL-U
        block, the predicted tags as XPOS)."""
        parsed = self.parse(model, data, device)
        if (output_format or self.output_formats[0]) == "brackets":
            return [tree.to_brackets() for tree, _ in parsed]
        return [format_conllu([deps]) for _, deps in parsed]


def hinge_loss(scores: torch.Tensor, gold: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The structured hinge loss (Stern et al. 2017), mean over sentences: the best tree
    under scores plus a Hamming cost of 1 per labeled span not in gold, minus the gold
    tree's score. Zero exactly when gold beats every tree by at least their distance.

    ``scores`` (B, n, n, L) with the empty label at 0; ``gold`` its 0/1 chart (the empty
    label in every cell that is no gold constituent). The augmented best tree is decoded
    without a graph; its gradient is (best - gold) on the scores.
    """
    augmented = CKY(scores.detach(), lengths).loss_augmented(gold)
    best = augmented.argmax
    margin = (scores * (best - gold)).flatten(1).sum(1) + ((1 - gold) * best).flatten(1).sum(1)
    return margin.mean()


def arc_logits(arc_scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(B, n, n + 1): for each word, its scores over heads (the root and the words of its
    sentence; itself and padding at -inf)."""
    n = arc_scores.shape[-1] - 1
    logits = arc_scores[:, :, 1:].transpose(1, 2)  # [b, word, head]
    position = torch.arange(n + 1, device=arc_scores.device)
    outside = position[None, None, :] > lengths[:, None, None]
    itself = position[None, None, :] == position[None, 1:, None]
    return logits.masked_fill(outside | itself, float("-inf"))


def _ptb_example(tree: Tree, source: str, line: int) -> ParseExample:
    """A cleaned PTB tree as a parser example; its dependencies from head rules."""
    dependencies = to_dependency(tree, source=f"{source}:{line}")
    return ParseExample(tree.leaves(), tree.tags(), tree, dependencies)


def _ud_example(tree: DependencyTree) -> ParseExample:
    return ParseExample(list(tree.words), list(tree.upos), None, tree)
