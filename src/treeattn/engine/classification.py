"""Sentence classification: model construction, batching, evaluation."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from treeattn.attention import attention_names
from treeattn.attention.distance import GAPS, gap_distances
from treeattn.attention.hierarchical import DEFAULT_MAX_DEPTH
from treeattn.data.batching import TokenBatch, bucket_batches, pad_ids
from treeattn.data.sst import IGNORE_LABEL
from treeattn.data.tree_tensors import TreeArrays, collate_trees, encode_tree
from treeattn.data.vocab import Vocab
from treeattn.engine.config import Config, ModelConfig
from treeattn.engine.datasets import CLASSES, TEXT, LabeledSentence
from treeattn.engine.masked_lm import MaskedLanguageModel
from treeattn.metrics.classification import accuracy
from treeattn.models.classifier import SentenceClassifier, TreeClassifier
from treeattn.models.encoder import TransformerEncoder
from treeattn.models.hierarchical import HierarchicalEncoder
from treeattn.models.tree_lstm import TreeLSTMEncoder
from treeattn.trees import Tree, binarize
from treeattn.trees.lnr import to_lnr


def _hierarchical(m: ModelConfig, vocab_size: int, node_vocab_size: int) -> nn.Module:
    return HierarchicalEncoder(
        vocab_size,
        node_vocab_size,
        d_model=m.d_model,
        n_heads=m.n_heads,
        n_layers=m.n_layers,
        d_ff=m.d_ff,
        dropout=m.dropout,
        max_length=m.max_length,
        **m.attention_options,
    )


def _tree_lstm(m: ModelConfig, vocab_size: int, node_vocab_size: int) -> nn.Module:
    return TreeLSTMEncoder(
        vocab_size, node_vocab_size, m.d_model, m.dropout, m.max_length, **m.attention_options
    )


# Encoders that read trees, by ``model.attention`` name, with whether they need binary
# trees. Every other name is a token-level attention mechanism in a TransformerEncoder.
TREE_ENCODERS: dict[str, tuple[Callable[[ModelConfig, int, int], nn.Module], bool]] = {
    "hierarchical": (_hierarchical, False),
    "tree-lstm": (_tree_lstm, True),
}


def model_names() -> list[str]:
    """Every value ``model.attention`` takes: attention mechanisms, then tree encoders."""
    return [*attention_names(), *TREE_ENCODERS]


def uses_trees(cfg: Config) -> bool:
    return cfg.model.attention in TREE_ENCODERS


def uses_distances(cfg: Config) -> bool:
    """Token-level mechanisms that read each sentence's tree as syntactic distances."""
    return cfg.model.attention == "distance"


def build_model(cfg: Config, vocab_size: int, node_vocab_size: int = 0) -> nn.Module:
    """The configured model: a masked language model for the ``text`` data set, otherwise a
    sentence classifier."""
    if cfg.data.name == TEXT:
        if uses_trees(cfg) or uses_distances(cfg):
            raise ValueError(
                "masked language modelling reads raw text, but model.attention="
                f"{cfg.model.attention!r} needs trees; choose a token-level mechanism"
            )
        return MaskedLanguageModel(build_encoder(cfg.model, vocab_size), vocab_size)
    return build_classifier(cfg, vocab_size, node_vocab_size)


def build_classifier(cfg: Config, vocab_size: int, node_vocab_size: int = 0) -> nn.Module:
    m = cfg.model
    classes = CLASSES[cfg.data.name]
    if uses_trees(cfg):
        build, _ = TREE_ENCODERS[m.attention]
        try:
            tree_encoder = build(m, vocab_size, node_vocab_size)
        except TypeError as error:  # an option the encoder does not take
            raise ValueError(f"model.attention_options for {m.attention}: {error}") from None
        pooling = "root" if m.pooling == "auto" else m.pooling
        if cfg.data.phrase_level and pooling != "root":
            raise ValueError(
                "phrase-level training of a tree model trains every node's own prediction; "
                f"the sentence is read at the root, so model.pooling={m.pooling!r} cannot be used"
            )
        return TreeClassifier(tree_encoder, classes, pooling=pooling, dropout=m.dropout)
    pooling = "mean" if m.pooling == "auto" else m.pooling
    return SentenceClassifier(build_encoder(m, vocab_size), classes, pooling, m.dropout)


def build_encoder(m: ModelConfig, vocab_size: int) -> TransformerEncoder:
    """The Transformer encoder of a token-level attention mechanism, as configured."""
    return TransformerEncoder(
        vocab_size,
        d_model=m.d_model,
        n_heads=m.n_heads,
        n_layers=m.n_layers,
        d_ff=m.d_ff,
        dropout=m.dropout,
        attention=m.attention,
        positions=m.positions,
        max_length=m.max_length,
        attention_options=m.attention_options,
    )


def check_lengths(examples: Sequence[LabeledSentence], max_length: int, where: str) -> None:
    """Over-long sentences are an error, never truncated."""
    for i, ex in enumerate(examples):
        if len(ex.tokens) > max_length:
            raise ValueError(
                f"{where}: sentence {i + 1} has {len(ex.tokens)} tokens, more than "
                f"model.max_length={max_length}; raise model.max_length"
            )
        if not ex.tokens:
            raise ValueError(f"{where}: sentence {i + 1} is empty")


def node_labels(example: LabeledSentence, binary: bool) -> tuple[str, ...]:
    """The labels of the nodes a tree model sees for ``example``, in pre-order."""
    return to_lnr(_model_tree(example, binary)).labels


def _model_tree(example: LabeledSentence, binary: bool) -> Tree:
    if example.tree is None:
        raise ValueError("tree models need data with trees")
    return binarize(example.tree) if binary else example.tree


class EncodedSet:
    """A data set's token ids, and for tree models its tree arrays, encoded once so that a
    training step only pads and stacks.

    Tree models pass ``node_vocab`` (node label ids) and ``binary`` (binarise the trees
    first); ``where`` names the data in errors. Batches are bounded by leaves + nodes.
    ``distances`` keeps each tree's gap distances instead, for the ``distance`` mechanism.
    """

    def __init__(
        self,
        examples: Sequence[LabeledSentence],
        vocab: Vocab,
        node_vocab: Vocab | None = None,
        binary: bool = False,
        where: str = "data",
        distances: bool = False,
    ) -> None:
        self.ids = [torch.tensor(vocab.encode(ex.tokens), dtype=torch.long) for ex in examples]
        self.labels = torch.tensor([ex.label for ex in examples], dtype=torch.long)
        self.lengths = [len(ids) for ids in self.ids]
        self.node_vocab = node_vocab
        self.gaps = (
            [_gaps(ex, f"{where}: sentence {i + 1}") for i, ex in enumerate(examples)]
            if distances
            else []
        )
        if node_vocab is None:
            return
        self.trees: list[TreeArrays] = []
        self.node_ids: list[torch.Tensor] = []
        self.targets: list[tuple[torch.Tensor, torch.Tensor]] = []
        for i, ex in enumerate(examples):
            lnr, arrays = encode_tree(
                _model_tree(ex, binary), ex.tokens, where=f"{where}: sentence {i + 1}"
            )
            self.trees.append(arrays)
            self.node_ids.append(torch.tensor(node_vocab.encode(lnr.labels), dtype=torch.long))
            self.lengths[i] += arrays.n_nodes
            if ex.phrase_labels:
                self.targets.append(_phrase_targets(ex.phrase_labels, arrays))
        if self.targets and len(self.targets) != len(examples):
            raise ValueError(f"{where}: some sentences have phrase labels and some have none")

    def __len__(self) -> int:
        return len(self.ids)

    def batch(self, indices: Sequence[int]) -> TokenBatch:
        tokens, pad_mask = pad_ids([self.ids[i] for i in indices], Vocab.pad_id)
        batch = TokenBatch(tokens, pad_mask, self.labels[list(indices)])
        if self.gaps:
            # Gaps past a sentence's end (0) can only stretch a range into padding,
            # whose keys are masked.
            batch.context = {GAPS: pad_ids([self.gaps[i] for i in indices])[0]}
        if self.node_vocab is None:
            return batch
        trees = collate_trees([self.trees[i] for i in indices])
        node_ids, _ = pad_ids([self.node_ids[i] for i in indices], Vocab.pad_id)
        batch.context = {"trees": trees, "node_labels": node_ids}
        if self.targets:
            batch.node_targets, _ = pad_ids([self.targets[i][0] for i in indices], IGNORE_LABEL)
            batch.leaf_targets, _ = pad_ids([self.targets[i][1] for i in indices], IGNORE_LABEL)
        return batch


def _gaps(example: LabeledSentence, where: str) -> torch.Tensor:
    if example.tree is None:
        raise ValueError(f"{where}: distance attention needs data with trees")
    gaps = gap_distances([example.tree])
    if len(gaps) != len(example.tokens) - 1:
        raise ValueError(
            f"{where}: its tree has {len(gaps) + 1} words but the sentence has "
            f"{len(example.tokens)} tokens"
        )
    return torch.tensor(gaps, dtype=torch.long)


def encode_split(
    cfg: Config,
    examples: Sequence[LabeledSentence],
    vocab: Vocab,
    node_vocab: Vocab | None,
    where: str,
) -> EncodedSet:
    """``examples`` encoded for the configured model (with trees for tree models)."""
    if not uses_trees(cfg):
        return EncodedSet(examples, vocab, where=where, distances=uses_distances(cfg))
    binary = TREE_ENCODERS[cfg.model.attention][1]
    encoded = EncodedSet(examples, vocab, node_vocab, binary=binary, where=where)
    options = cfg.model.attention_options
    if cfg.model.attention == "hierarchical" and options.get("hierarchical_embeddings", True):
        # Before any training, not when the first too-deep batch comes up.
        limit = options.get("max_depth", DEFAULT_MAX_DEPTH)
        for i, arrays in enumerate(encoded.trees):
            if arrays.paths.shape[1] > limit:
                raise ValueError(
                    f"{where}: sentence {i + 1}: a word lies {arrays.paths.shape[1]} nodes "
                    f"deep, more than model.attention_options.max_depth={limit}"
                )
    return encoded


def _phrase_targets(
    phrases: Sequence[tuple[int, int, int]], arrays: TreeArrays
) -> tuple[torch.Tensor, torch.Tensor]:
    """The label of every node (by its span) and every leaf (the span of its one word).

    Phrases and nodes both come in pre-order. A unary chain shares one span: its k-th node
    takes the span's k-th label, and a word takes the label left over below the nodes over
    it, its collapsed pre-terminal's.
    """
    by_span: dict[tuple[int, int], list[int]] = {}
    for start, end, label in phrases:
        by_span.setdefault((start, end), []).append(label)
    used: dict[tuple[int, int], int] = {}
    nodes = []
    for span in zip(arrays.node_start.tolist(), arrays.node_end.tolist(), strict=True):
        labels, k = by_span.get(span, []), used.get(span, 0)
        nodes.append(labels[k] if k < len(labels) else IGNORE_LABEL)
        used[span] = k + 1
    leaves = []
    for j in range(arrays.n_leaves):
        labels, k = by_span.get((j, j + 1), []), used.get((j, j + 1), 0)
        leaves.append(labels[k] if k < len(labels) else IGNORE_LABEL)
    return torch.tensor(nodes, dtype=torch.long), torch.tensor(leaves, dtype=torch.long)


def _logits(model: nn.Module, batch: TokenBatch) -> torch.Tensor:
    return model(batch.tokens, batch.pad_mask, batch.context)


def batch_loss(model: nn.Module, batch: TokenBatch) -> torch.Tensor:
    """Cross-entropy of the sentence labels, or with phrase targets, of every labeled node
    and leaf together."""
    if batch.node_targets is None:
        return F.cross_entropy(_logits(model, batch), batch.labels, ignore_index=IGNORE_LABEL)
    node_logits, leaf_logits = model(batch.tokens, batch.pad_mask, batch.context, every_node=True)
    logits = torch.cat([node_logits.flatten(0, 1), leaf_logits.flatten(0, 1)])
    targets = torch.cat([batch.node_targets.flatten(), batch.leaf_targets.flatten()])
    total = F.cross_entropy(logits, targets, ignore_index=IGNORE_LABEL, reduction="sum")
    # A batch whose phrases are all unlabeled (neutral, in SST-2) adds 0, not NaN.
    return total / (targets != IGNORE_LABEL).sum().clamp(min=1)


@torch.no_grad()
def evaluate(
    model: nn.Module, data: EncodedSet, max_tokens: int, device: torch.device
) -> dict[str, float]:
    """Accuracy and mean cross-entropy over the sentences of ``data`` that have a label
    (SST-2 phrase-level training data also holds neutral sentences, labeled -1)."""
    was_training = model.training
    model.eval()
    predictions = torch.zeros(len(data), dtype=torch.long)
    total_loss = 0.0
    for indices in bucket_batches(data.lengths, max_tokens, shuffle=False):
        batch = data.batch(indices).to(device)
        logits = _logits(model, batch)
        loss = F.cross_entropy(logits, batch.labels, ignore_index=IGNORE_LABEL, reduction="sum")
        total_loss += loss.item()
        predictions[indices] = logits.argmax(-1).cpu()
    model.train(was_training)
    labeled = data.labels >= 0
    gold = data.labels[labeled].tolist()
    return {
        "accuracy": accuracy(gold, predictions[labeled].tolist()),
        "loss": total_loss / max(1, len(gold)),
        "count": len(gold),
    }
