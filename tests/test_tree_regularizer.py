"""``TreeRegularizer``, the library call: TreeReg on a ``transformers`` model's
``outputs.hidden_states`` in a plain training loop, the model's pieces aligned with the
parser's words by characters (``align_text``). A tiny random BERT and its WordPiece
tokenizer (tests/test_backbone.py) stand in for a real model; nothing is fetched."""

from __future__ import annotations

import pytest
import torch

from tests.test_backbone import CONFIG, transformers_tokenizer
from tests.tree_regularization_reference import sentence_loss
from treeattn.models.tree_loss import TreeRegularizer
from treeattn.parsing.alignment import align_text
from treeattn.parsing.tree_source import FILES, TreeSource
from treeattn.trees import Tree

transformers = pytest.importorskip("transformers")

TEXTS = ["Unbelievably, the cat sat on the mat.", "The mat sat."]
TREES = [
    "(S (ADVP (RB Unbelievably)) (, ,) (NP (DT the) (NN cat)) "
    "(VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))",
    "(S (NP (DT The) (NN mat)) (VP (VBD sat)) (. .))",
]


@pytest.fixture
def batch(tmp_path):
    trees_file = tmp_path / "trees.txt"
    trees_file.write_text("\n".join(TREES) + "\n", encoding="utf-8")
    source = TreeSource(FILES, file=str(trees_file))
    tokenizer = transformers_tokenizer()
    encoded, aligned, trees = align_text(
        TEXTS, tokenizer, source, padding=True, return_tensors="pt"
    )
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(**CONFIG)).eval()
    return model, encoded, aligned, trees


def test_the_loss_is_the_references_on_the_models_pieces(batch):
    model, encoded, aligned, trees = batch
    assert [len(t.leaves()) for t in trees] == [len(w) for w in aligned.words]
    regularizer = TreeRegularizer("tree-regularization", layers=[2], weight=0.5)
    syntax = regularizer.inputs(trees, aligned)
    outputs = model(**encoded, output_hidden_states=True)
    loss = regularizer.unweighted(outputs.hidden_states, syntax)
    states = outputs.hidden_states[2].double()
    want = []
    for b, tree in enumerate(trees):
        owners = aligned.word_of_piece[b]
        per_word = [owners.count(w) for w in range(len(aligned.words[b]))]
        pieces = states[b, 1 : 1 + sum(per_word)]  # after [CLS]
        assert owners[1 : 1 + sum(per_word)] == sorted(owners[1 : 1 + sum(per_word)])
        want.append(sentence_loss(pieces, tree, per_word))
    assert max(per_word) >= 1 and aligned.word_of_piece[0].count(0) == 3  # un ##believ ##ably
    torch.testing.assert_close(loss.double(), torch.stack(want).mean(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(regularizer(outputs.hidden_states, syntax), 0.5 * loss)


def test_a_plain_training_loop_lowers_it(batch):
    model, encoded, aligned, trees = batch
    regularizer = TreeRegularizer("tree-regularization", layers=[1, -1])
    syntax = regularizer.inputs(trees, aligned)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(3):
        outputs = model(**encoded, output_hidden_states=True)
        loss = regularizer(outputs.hidden_states, syntax)
        optimizer.zero_grad()
        loss.backward()
        assert model.embeddings.word_embeddings.weight.grad.abs().sum() > 0
        optimizer.step()
        losses.append(loss.item())
    assert losses[2] < losses[1] < losses[0]


def test_word_of_piece_alone_will_do_and_mismatches_are_named(batch):
    model, encoded, aligned, trees = batch
    regularizer = TreeRegularizer("tree-regularization", layers=[1])
    outputs = model(**encoded, output_hidden_states=True)
    from_aligned = regularizer(outputs.hidden_states, regularizer.inputs(trees, aligned))
    owners = regularizer.inputs(trees, word_of_piece=aligned.word_of_piece)
    torch.testing.assert_close(regularizer(outputs.hidden_states, owners), from_aligned)
    with pytest.raises(
        ValueError, match="sentence 2: its tree has 2 words, its pieces belong to 4"
    ):
        regularizer.inputs([trees[0], Tree.parse("(S a b)")], aligned)
    with pytest.raises(ValueError, match="layer 7: the model gave 4 hidden states"):
        TreeRegularizer("tree-regularization", layers=[7])(outputs.hidden_states, owners)
    with pytest.raises(ValueError, match="'distance' is not a loss mechanism"):
        TreeRegularizer("distance")


def test_a_causal_model_with_byte_level_pieces():
    """GPT-2 with a byte-level tokenizer (pieces carry the space before them, no start
    piece): each piece belongs to the word its first non-space character falls in, and
    the loss is the reference's on those pieces."""
    from tests.test_alignment import trained
    from treeattn.parsing.tree_source import RIGHT_BRANCHING

    tokenizer = trained("byte-level")
    texts = ["Dogs bark at the night (loudly).", "See the cat on the sofa."]
    encoded, aligned, trees = align_text(
        texts, tokenizer, TreeSource(RIGHT_BRANCHING), padding=True, return_tensors="pt"
    )
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_embd=16, n_layer=2, n_head=4, n_positions=64
    )
    config.bos_token_id = config.eos_token_id = 0
    model = transformers.GPT2Model(config).eval()
    regularizer = TreeRegularizer("tree-regularization", layers=[1])
    outputs = model(**encoded, output_hidden_states=True)
    loss = regularizer(outputs.hidden_states, regularizer.inputs(trees, aligned))
    states = outputs.hidden_states[1].double()
    want = []
    for b, tree in enumerate(trees):
        owners = aligned.word_of_piece[b]
        kept = [p for p, w in enumerate(owners) if w >= 0]
        assert [owners[p] for p in kept] == sorted(owners[p] for p in kept)  # in order
        per_word = [owners.count(w) for w in range(len(aligned.words[b]))]
        assert min(per_word) >= 1, "every word owns a piece in these texts"
        want.append(sentence_loss(states[b, kept], tree, per_word))
    torch.testing.assert_close(loss.double(), torch.stack(want).mean(), rtol=1e-5, atol=1e-6)
    loss.backward()
    assert model.wte.weight.grad.abs().sum() > 0
