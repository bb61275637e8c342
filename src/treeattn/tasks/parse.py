"""Joint constituency and dependency parsing with the label attention parser (Mrini et al.
2020) on the PTB sample (constituency trees; dependencies from head rules), on UD EWT
(dependencies only), or on both at once (``joint``): one encoder, the span chart learned
from the PTB trees, the tagger from both treebanks' Penn Treebank tags, the arcs and
relations from EWT's Universal Dependencies; each loss counts only the sentences that
have its annotation.

Constituency: a chart of span scores, the structured hinge loss with Hamming-augmented
decoding (Stern et al. 2017), every sentence of a batch decoded at once by ``CKY``; unary
chains are one label (``S+VP``) and are split again on output. Dependency: biaffine arc and
label scores, cross-entropy, trees decoded by ``Eisner`` (projective) or Chu-Liu-Edmonds.
Tags are predicted (an auxiliary loss), never read. The constituency and dependency trees
are decoded separately (the paper decodes them jointly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from treeattn import plugins
from treeattn.data.ptb import load_ptb_sample
from treeattn.data.questions import base_forms_from_ud, make_questions
from treeattn.data.ud import load_ud
from treeattn.engine.config import Config, check_positive
from treeattn.engine.task import Selection, Task
from treeattn.errors import FormatError
from treeattn.metrics.dependency import attachment_scores
from treeattn.metrics.evalb import EvalbResult, evalb, format_evalb
from treeattn.models.pretrained import backbone_parameter_groups
from treeattn.parsing import Parser
from treeattn.parsing.config import ParserConfig
from treeattn.parsing.decoding import Parsed, parse_all, training_treebank
from treeattn.parsing.encoding import ParseBatch, ParseSet, encode
from treeattn.parsing.examples import ParseExample, ptb_example, ud_example, ud_ptb_example
from treeattn.parsing.network import LabelAttentionParser
from treeattn.parsing.vocab import IGNORE, ParserVocab
from treeattn.structs import CKY
from treeattn.trees.dependency import DependencyTree, format_conllu, read_conllu
from treeattn.trees.tokenize import tokenize
from treeattn.trees.transforms import clean_ptb
from treeattn.trees.treebank import iter_treebank

PTB, UD, FILES, JOINT = "ptb-sample", "ud-en-ewt", "files", "joint"


@dataclass
class ParseData:
    """``name``: ``ptb-sample`` (constituency and head-rule dependencies), ``ud-en-ewt``
    (dependencies only), ``joint`` (both treebanks' official splits together: the PTB
    sample's trees and tags, EWT's XPOS tags and Universal Dependencies) or ``files``:
    ``paths`` names a file per split (``train``, ``dev``, ``test``), bracketed trees (one
    per line, or ``.mrg``; cleaned as the PTB sample is) or CoNLL-U (``.conllu``:
    dependencies only).

    ``ptb_repeat`` (``joint`` only) is the mixing rule: each PTB training sentence comes
    that many times in an epoch beside each EWT sentence once, and batches are drawn from
    the union by the usual shuffled length buckets, so a treebank's expected share of
    every batch is its share of the repeated union.

    ``questions`` (``ptb-sample`` and ``joint``): that share of the PTB sample's training
    sentences, drawn with the run's seed, also comes as a question or an imperative made
    from it (``treeattn.data.questions``: the Treebank's own inversion, do-support and
    wh-fronting; base forms from EWT train's lemmas), beside the declarative; what was
    made and what was refused, and why, is printed."""

    name: str = PTB
    root: str | None = None  # data folder; default from TREEATTN_DATA
    paths: dict = field(default_factory=dict)
    min_count: int = 1  # words seen fewer times in training become <unk>
    ptb_repeat: int = 1  # joint: each PTB training sentence this many times an epoch
    questions: float = 0.0  # ptb-sample, joint: share of PTB training sentences made questions


@plugins.tasks.register
class ParseTask(Task):
    """Parsing, chosen by dev EVALB F1 (or dev LAS for dependency-only data)."""

    name = "parse"
    datasets: ClassVar[tuple[str, ...]] = (PTB, UD, JOINT, FILES)  # what data.name may be
    Data = ParseData
    Model = ParserConfig

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        d = cfg.data
        conllu = d.name == FILES and str(d.paths.get("train", "")).endswith(".conllu")
        self.constituency = d.name != UD and not conllu
        self.joint = d.name == JOINT
        self.vocab: ParserVocab | None = None

    @classmethod
    def from_parser(cls, parser: Parser) -> ParseTask:
        """The task of the run that trained ``parser`` (a parser file's or a checkpoint's),
        its vocabularies fitted: to evaluate and predict with ``parser.model``."""
        task = cls(cls.config_from_dict(parser.run_config, "the parser's config"))
        task.vocab = parser.vocab
        return task

    @classmethod
    def check_config(cls, cfg: Config, where: str) -> None:
        d, m = cfg.data, cfg.model
        if d.name not in cls.datasets:
            raise ValueError(
                f"{where}: data.name={d.name!r}; parsing reads {PTB}, {UD}, {JOINT} or {FILES}"
            )
        if d.name == FILES:
            for split in ("train", "dev", "test"):
                if not isinstance(d.paths.get(split), str):
                    raise ValueError(f"{where}: data.paths.{split} is missing (a file)")
        elif d.paths:
            raise ValueError(f"{where}: data.paths is for data.name={FILES}, not {d.name}")
        check_positive({"data.min_count": d.min_count, "data.ptb_repeat": d.ptb_repeat}, where)
        if d.ptb_repeat != 1 and d.name != JOINT:
            raise ValueError(f"{where}: data.ptb_repeat is for data.name={JOINT}, not {d.name}")
        if not 0.0 <= d.questions <= 1.0:
            raise ValueError(f"{where}: data.questions={d.questions} is a share, within [0, 1]")
        if d.questions and d.name not in (PTB, JOINT):
            raise ValueError(f"{where}: data.questions is for data.name={PTB} or {JOINT}")
        m.check(where)
        m.check_backbone(where, cfg.train.schedule)

    @property
    def headline(self) -> tuple[str, ...]:  # type: ignore[override]
        if self.joint:
            return ("f1", "uas", "las", "tagging_ptb", "tagging_ud", "tagging_ud_raw")
        return ("f1", "uas", "las") if self.constituency else ("uas", "las")

    @property
    def title(self) -> str:
        kind = "label attention" if self.cfg.model.label_attention else "self-attention"
        return f"{kind} parser on {self.cfg.data.name}"

    @property
    def selection(self) -> Selection:
        """Dev F1, or dev LAS without a constituency tree; for joint training the mean of
        PTB dev F1 and EWT dev LAS (``f1_las``), so that neither treebank is given up for
        the other."""
        if self.joint:
            return Selection("dev", "f1_las", higher_is_better=True)
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
            if d.name == JOINT:
                examples = self._joint_split(source)
            elif d.name == PTB:
                examples = [
                    ptb_example(e.tree, e.source, e.line)
                    for e in load_ptb_sample(source, root=d.root, clean=True)
                ] + self._questions(source)
            else:
                examples = [ud_example(t) for t in load_ud(source, root=d.root)]
        elif Path(source).is_file():
            where = source
            if self.joint and source.endswith(".conllu"):
                examples = [ud_ptb_example(t, where) for t in read_conllu(source)]
            elif not self.constituency:
                examples = [ud_example(t) for t in read_conllu(source)]
            else:
                examples = [
                    ptb_example(clean_ptb(e.tree), e.source, e.line, not self.joint)
                    for e in iter_treebank(source)
                ]
        else:
            raise FileNotFoundError(
                f"{source!r} is neither a split name (train, dev, test) nor an existing file"
            )
        if not examples:
            raise ValueError(f"{where}: no sentences")
        self._check_lengths(examples, where)
        return examples, where

    def _joint_split(self, split: str) -> list[ParseExample]:
        """The PTB sample's sentences of ``split`` (trees and tags; no dependencies: the
        arcs learn Universal Dependencies alone), then EWT's (XPOS and UD); in training
        each PTB sentence ``data.ptb_repeat`` times (the same objects, so that ``fit``
        counts each once)."""
        d = self.cfg.data
        ptb = [
            ptb_example(e.tree, e.source, e.line, dependencies=False)
            for e in load_ptb_sample(split, root=d.root, clean=True)
        ] + self._questions(split)
        where = f"{UD} {split}"
        ud = [ud_ptb_example(t, where) for t in load_ud(split, root=d.root)]
        return ptb * (d.ptb_repeat if split == self.train_split else 1) + ud

    def _questions(self, split: str) -> list[ParseExample]:
        """The questions and imperatives made from ``data.questions`` of the PTB sample's
        training sentences (none for another split)."""
        d = self.cfg.data
        if split != self.train_split or not d.questions:
            return []
        entries = load_ptb_sample(split, root=d.root)  # function tags name the subject
        forms = base_forms_from_ud(load_ud(self.train_split, root=d.root))
        made = make_questions([e.tree for e in entries], d.questions, forms, seed=self.cfg.seed)
        print(f"{PTB} {split}: {made.summary()}", flush=True)
        return [
            ptb_example(tree, entries[i].source, entries[i].line, dependencies=not self.joint)
            for tree, i in zip(made.trees, made.sources, strict=True)
        ]

    def _check_lengths(self, examples: Sequence[ParseExample], where: str) -> None:
        limit = self.cfg.model.max_length
        for i, ex in enumerate(examples, start=1):
            if len(ex.words) > limit:
                raise ValueError(
                    f"{where}: sentence {i} has {len(ex.words)} words, more than "
                    f"model.max_length={limit}; raise model.max_length"
                )

    def fit(self, train_examples: Sequence[ParseExample]) -> None:
        # A sentence repeated by ``data.ptb_repeat`` is one object: its words count once.
        unique = list({id(ex): ex for ex in train_examples}.values())
        self.vocab = ParserVocab.fit(unique, self.cfg.data.min_count)

    def state_dict(self) -> dict[str, Any]:
        return self.vocab.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.vocab = ParserVocab.from_state(state)

    def encode(self, examples: Sequence[ParseExample], where: str) -> ParseSet:
        return encode(examples, self.vocab)

    # -- model and loss -----------------------------------------------------------------

    def build_model(self) -> nn.Module:
        return LabelAttentionParser(self.cfg.model, **self.vocab.sizes())

    def parameter_groups(self, model: nn.Module) -> list[dict[str, Any]]:
        """The parser's own parameters (the backbone's layer mix among them) at ``train.lr``;
        the backbone's tuned weights at their own rate (``backbone_parameter_groups``)."""
        backbone = getattr(model, "backbone", None)
        if backbone is None:
            return super().parameter_groups(model)
        return backbone_parameter_groups(model, backbone, self.cfg.model, "parser")

    def loss(self, model: nn.Module, batch: ParseBatch) -> torch.Tensor:
        """Per sentence, then averaged over the batch: the constituency hinge loss, plus
        ``tag_weight`` times the tags' cross-entropy and ``dependency_weight`` times the
        arcs' and labels' cross-entropies, each summed over the sentence's words (as the
        authors' release sums every part over its batch, so that the weights keep their
        meaning). A sentence without a tree adds no hinge loss and one without
        dependencies no arc or label loss; every part is divided by the whole batch's
        sentence count, so B times a mixed batch's loss is the sum of its sentences'."""
        m = self.cfg.model
        out = model(batch.words, batch.chars, batch.pad_mask, batch.heads, batch.sentences)
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
            loss = loss + hinge_loss(
                out.span_scores, batch.gold_chart, batch.lengths, batch.has_tree
            )
        if batch.heads is not None and m.dependency_weight:
            arcs = arc_logits(out.arc_scores, batch.lengths)  # (B, n, n + 1)
            arc = summed(arcs, batch.heads, 0.0)
            rel = summed(out.rel_scores, batch.rels, smoothing)
            loss = loss + m.dependency_weight * (arc + rel) / sentences
        return loss

    # -- evaluation and prediction ------------------------------------------------------

    def parse(
        self,
        model: nn.Module,
        data: ParseSet,
        device: torch.device,
        gold_tags: bool = False,
        progress: bool = False,
    ) -> list[Parsed]:
        """Each sentence's predicted constituency tree (None for dependency-only models)
        and dependency tree (its ``xpos``: the predicted tags), in the order of ``data``;
        whole batches are decoded at once. With ``gold_tags`` the constituency trees carry
        the examples' own tags (for EVALB, see ``evaluate``); ``progress`` shows a bar."""
        max_tokens = self.cfg.train.eval_max_tokens
        treebank = training_treebank(asdict(self.cfg.data))  # names a UD parser's scheme
        return parse_all(
            model, data, self.vocab, device, max_tokens, gold_tags, progress, treebank=treebank
        )

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
        if self.joint:
            shown = (
                ("tagging_ptb", f"on the {PTB} sentences"),
                ("tagging_ud", f"on the {UD} sentences, as the WSJ tags the same uses"),
                ("tagging_ud_raw", f"on the {UD} sentences, as EWT tags them"),
            )
            for key, what in shown:
                if key in metrics:
                    parts.append(f"tagging accuracy {what} {metrics[key]:.2f}")
        if "uas" not in metrics:
            return "\n".join(parts)
        relations = "head-rule PHRASE/CHILD relations" if self.cfg.data.name == PTB else "relations"
        if self.joint:
            relations = f"Universal Dependencies relations, the {UD} sentences"
        count = metrics.get("dependency_sentences", len(data))
        parts.append(f"\n=== Dependencies ({count} sentences; LAS on {relations}) ===")
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
        examples = data.examples
        # Each score over the sentences that have its annotation (all of them, but for
        # joint data: the trees of the PTB sentences, the dependencies of EWT's).
        with_tree = [i for i, ex in enumerate(examples) if ex.tree is not None]
        with_deps = [i for i, ex in enumerate(examples) if ex.dependencies is not None]
        metrics: dict[str, Any] = {}
        result = None
        if self.constituency and with_tree:
            result = evalb([examples[i].tree for i in with_tree], [parsed[i][0] for i in with_tree])
            metrics.update(
                f1=result.fmeasure,
                recall=result.recall,
                precision=result.precision,
                complete_match=result.total.complete_match,
            )

        def tagging(chosen: Sequence[int], raw: bool = False) -> float:
            pairs = [
                (gold, guess)
                for i in chosen
                for gold, guess in zip(
                    examples[i].dependencies.xpos if raw else examples[i].tags,
                    parsed[i][1].xpos,
                    strict=True,
                )
            ]
            return 100.0 * sum(g == p for g, p in pairs) / max(1, len(pairs))

        metrics["tagging"] = tagging(range(len(examples)))
        if self.joint:
            if with_tree:
                metrics["tagging_ptb"] = tagging(with_tree)
            if with_deps:
                # EWT's tags as the WSJ writes the same uses (what the tagger learns), and
                # as EWT writes them.
                metrics["tagging_ud"] = tagging(with_deps)
                metrics["tagging_ud_raw"] = tagging(with_deps, raw=True)
        if with_deps:
            gold = [examples[i] for i in with_deps]
            # Joint data's tags are EWT's XPOS, whose HYPH, NFP and others are punctuation
            # only to UPOS: punctuation is found by UPOS there, as for a UD-only parser.
            punct_tags = [ex.dependencies.upos for ex in gold] if self.joint else None
            metrics.update(dependency_scores(gold, [parsed[i][1] for i in with_deps], punct_tags))
            if self.joint:
                metrics["dependency_sentences"] = len(with_deps)
        if self.joint and "f1" in metrics and "las" in metrics:
            metrics["f1_las"] = (metrics["f1"] + metrics["las"]) / 2
        metrics["sentences"] = len(data)
        return metrics, result

    def read_inputs(self, lines: Sequence[str], where: str) -> list[ParseExample]:
        """One sentence per line, split into words as ``treeattn parse`` splits it
        (``tokenize``; words already split on spaces read the same)."""
        examples = []
        for number, line in enumerate(lines, start=1):
            words = tokenize(line)
            if not words:
                raise FormatError("empty line", where, number, 1)
            examples.append(ParseExample(words, ["_"] * len(words)))
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


def dependency_scores(
    examples: Sequence[ParseExample],
    predicted: Sequence[DependencyTree],
    punct_tags: Sequence[Sequence[str]] | None = None,
) -> dict[str, float]:
    """UAS and LAS of ``predicted`` against the examples' gold dependencies, punctuation
    left out by the gold tags (``punct_tags``, default the examples' own: ``uas``,
    ``las``, the paper's convention) and kept (``uas_punct``, ``las_punct``: CoNLL 2018)."""
    gold = [ex.dependencies for ex in examples]
    if any(g is None for g in gold):
        raise ValueError("dependency scores need gold dependencies for every sentence")
    metrics = {}
    for suffix, ignore in (("", True), ("_punct", False)):
        scores = attachment_scores(
            [g.heads for g in gold],
            [g.relations for g in gold],
            [p.heads for p in predicted],
            [p.relations for p in predicted],
            words=[g.words for g in gold],
            tags=punct_tags if punct_tags is not None else [ex.tags for ex in examples],
            ignore_punct=ignore,
        )
        metrics[f"uas{suffix}"], metrics[f"las{suffix}"] = scores.uas, scores.las
    return metrics


def hinge_loss(
    scores: torch.Tensor,
    gold: torch.Tensor,
    lengths: torch.Tensor,
    has_tree: torch.Tensor | None = None,
) -> torch.Tensor:
    """The structured hinge loss (Stern et al. 2017), summed over the sentences with a
    gold tree and divided by all B: the best tree under scores plus a Hamming cost of 1 per
    labeled span not in gold, minus the gold tree's score. Zero exactly when gold beats
    every tree by at least their distance.

    ``scores`` (B, n, n, L) with the empty label at 0; ``gold`` its 0/1 chart (the empty
    label in every cell that is no gold constituent); ``has_tree`` (B,) bool, the
    sentences whose chart is gold (default: all, the mean over sentences). The augmented
    best tree is decoded without a graph; its gradient is (best - gold) on the scores.
    """
    sentences = scores.shape[0]
    some = has_tree is not None and not bool(has_tree.all())
    if some:
        scores, gold, lengths = scores[has_tree], gold[has_tree], lengths[has_tree]
    augmented = CKY(scores.detach(), lengths).loss_augmented(gold)
    best = augmented.argmax
    margin = (scores * (best - gold)).flatten(1).sum(1) + ((1 - gold) * best).flatten(1).sum(1)
    # The mean where every sentence has a tree: the value single-treebank runs always had.
    return margin.sum() / sentences if some else margin.mean()


def arc_logits(arc_scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(B, n, n + 1): for each word, its scores over heads (the root and the words of its
    sentence; itself and padding at -inf)."""
    n = arc_scores.shape[-1] - 1
    logits = arc_scores[:, :, 1:].transpose(1, 2)  # [b, word, head]
    position = torch.arange(n + 1, device=arc_scores.device)
    outside = position[None, None, :] > lengths[:, None, None]
    itself = position[None, None, :] == position[None, 1:, None]
    return logits.masked_fill(outside | itself, float("-inf"))
