"""The language-model tasks: the causal one (no position sees a later one; its loss is the
next-token cross-entropy, the same for a sentence alone and in a padded batch; only causal
mechanisms are taken), subword vocabularies for both tasks (a word never seen in
training is read as pieces, not as <unk>), trees kept beside the text, the Tree
Transformer still trained as a masked LM over pieces, and a trained checkpoint scored by
the evaluator as the model itself scores it."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from tests.helpers import train
from treeattn.attention.tree_loss import token_positions
from treeattn.data.vocab import Vocab
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.evaluation import ProjectLM, Scorer
from treeattn.models.causal_lm import CausalLanguageModel
from treeattn.models.inputs import EncoderInputs
from treeattn.models.registry import EncoderConfig, build_encoder
from treeattn.tasks import load_config, make_task
from treeattn.tasks.causal_lm import next_token_loss
from treeattn.tasks.encoding import SentenceBatch
from treeattn.trees import Tree

V = 30


def _model(seed: int = 0) -> CausalLanguageModel:
    torch.manual_seed(seed)
    config = EncoderConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.0)
    return CausalLanguageModel(build_encoder(config, V), V).eval()


def _batch(rows: list[list[int]]) -> SentenceBatch:
    width = max(map(len, rows))
    tokens = torch.tensor([r + [0] * (width - len(r)) for r in rows])
    return SentenceBatch(EncoderInputs(tokens, tokens == 0), torch.zeros(len(rows)))


def test_a_later_token_never_changes_an_earlier_position():
    model = _model()
    tokens = torch.randint(3, V, (1, 9))
    inputs = EncoderInputs(tokens, torch.zeros_like(tokens, dtype=torch.bool))
    changed = tokens.clone()
    changed[0, 5:] = torch.randint(3, V, (4,))
    with torch.no_grad():
        before = model(inputs)
        after = model(inputs.with_tokens(changed))
    torch.testing.assert_close(after[0, :5], before[0, :5], rtol=0, atol=1e-6)
    assert (after[0, 5:] - before[0, 5:]).abs().max() > 1e-4


def test_next_token_loss_is_the_cross_entropy_of_each_sentence_alone():
    model = _model()
    rows = [[3, 7, 9, 4], [3, 5, 6, 8, 10, 4], [3, 11, 4]]
    with torch.no_grad():
        batched, count = next_token_loss(model, _batch(rows))
        alone = 0.0
        for row in rows:
            ids = torch.tensor([row])
            logits = model(EncoderInputs(ids, torch.zeros_like(ids, dtype=torch.bool)))
            alone += F.cross_entropy(logits[0, :-1], ids[0, 1:], reduction="sum").item()
    assert count == sum(len(r) - 1 for r in rows)
    assert batched.item() == pytest.approx(alone, rel=1e-5)


def test_the_causal_task_takes_only_causal_mechanisms():
    with pytest.raises(ValueError, match="model.attention='constituent' lets a word see later"):
        load_config(None, ["task=causal-lm", "data.name=text", "model.attention=constituent"])
    with pytest.raises(ValueError, match="data.start_token"):
        load_config(None, ["task=causal-lm", "data.name=text", "data.start_token=true"])
    with pytest.raises(ValueError, match="data.vocabulary='bpe'"):
        load_config(None, ["task=mlm", "data.name=text", "data.vocabulary=bpe"])


def _lm_config(tmp_path, task: str, attention: str = "vanilla", *extra: str):
    return load_config(
        None,
        [
            f"task={task}",
            "data.name=text",
            "data.corpora=[ptb]",
            "data.vocabulary=subwords",
            "data.vocab_size=400",
            f"model.attention={attention}",
            "model.d_model=16",
            "model.n_heads=2",
            "model.n_layers=2",
            "model.d_ff=32",
            "model.max_length=2048",  # 400 pieces split a long sentence finely
            "train.max_updates=2",
            "train.epochs=null",
            "train.max_tokens=2000",
            "train.eval_max_tokens=20000",
            "train.progress=false",
            f"out_dir={tmp_path / task}",
            *extra,
        ],
    )


def test_subwords_read_an_unseen_word_as_pieces_and_trees_split_over_them(tmp_path, shared_data):
    task = make_task(_lm_config(tmp_path, "causal-lm", "vanilla", "data.trees=right-branching"))
    examples, _ = task.read("train")
    task.fit(examples)
    assert len(task.vocab) <= 400 + 3
    words = make_task(_lm_config(tmp_path, "causal-lm", "vanilla", "data.vocabulary=words"))
    words.fit(examples)
    assert {"<s>", "</s>"} <= set(words.vocab.index)  # a word vocabulary holds the specials
    unseen = task.text_pieces("Zyxwvut barked.")
    assert Vocab.unk_id not in unseen.ids and len(unseen.ids) > 3
    assert unseen.spans[0] == (0, 7) and unseen.words[0] == unseen.words[1] == 0
    # Trees over the words (between <s> and </s>), split over the pieces.
    first = task.as_pieces(examples[:1])[0]
    assert first.tokens[0] == "<s>" and first.tokens[-1] == "</s>"
    assert first.tree.leaves() == first.tokens[1:-1]
    # The checkpoint records where the trees came from.
    assert task.state_dict()["trees"] == {"source": "right-branching"}
    # A parser's tree writes a bracket word as -LRB-: it takes the pieces of the word.
    tree = Tree.parse("(S (-LRB- -LRB-) (NP (NNS Dogs)) (VP (VBP bark)) (-RRB- -RRB-))")
    bracketed = replace(examples[0], tokens=["<s>", "(", "Dogs", "bark", ")", "</s>"], tree=tree)
    (pieces,) = task.as_pieces([bracketed])
    assert pieces.tree.leaves() == pieces.tokens[1:-1]
    assert pieces.tokens[1] == task.pieces("(")[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("task", "attention"), [("causal-lm", "vanilla"), ("mlm", "constituent"), ("mlm", "vanilla")]
)
def test_a_subword_language_model_trains_and_is_scored_as_it_scores_itself(
    tmp_path, shared_data, task, attention
):
    results = train(_lm_config(tmp_path, task, attention))
    assert math.isfinite(results["dev_perplexity"])
    lm = ProjectLM.load(tmp_path / task / "best.pt", "cpu")
    text = "The keys to the cabinet are here."
    scores = Scorer(lm).score([text])[0]
    pieces = lm.pieces(text)
    ids = torch.tensor([[*lm.prefix, *pieces.ids]])
    pad = torch.zeros_like(ids, dtype=torch.bool)
    model = lm.trained.model
    with torch.no_grad():
        if task == "causal-lm":
            log_probs = model(EncoderInputs(ids, pad)).log_softmax(-1)[0]
            expected = [log_probs[t, ids[0, t + 1]].item() for t in range(len(pieces.ids))]
        else:
            start = len(lm.prefix)
            expected = []
            for i in range(len(pieces.ids)):
                masked = ids.clone()
                masked[0, start + i] = Vocab.mask_id
                log_probs = model(EncoderInputs(masked, pad)).log_softmax(-1)[0]
                expected.append(log_probs[start + i, ids[0, start + i]].item())
    assert scores.log_probs == pytest.approx(expected, abs=1e-5)
    # treeattn predict: a causal model gives each line's log-probability (its pieces and
    # the end), a masked one fills in <mask>.
    if task == "causal-lm":
        (line,) = lm.trained.predict(["The keys are here ."], "input")
        found = json.loads(line)
        n = len(lm.pieces("The keys are here .").ids)
        assert found["tokens"] == n + 1 and found["log_prob"] < 0
        assert found["perplexity"] == pytest.approx(math.exp(-found["log_prob"] / (n + 1)))
    else:
        (line,) = lm.trained.predict(["The <mask> are here ."], "input")
        assert "<mask>" not in line and line.startswith("The") and line.endswith("here .")


TREE_LOSS = ["data.trees=right-branching", "model.tree_loss=tree-regularization"]


def _weights(run) -> dict[str, torch.Tensor]:
    return load_checkpoint(run / "last.pt")["model"]


@pytest.mark.slow
@pytest.mark.parametrize("task", ["causal-lm", "mlm"])
def test_a_tree_loss_at_weight_zero_is_the_plain_step_and_is_logged(tmp_path, shared_data, task):
    quick = ["train.eval_max_tokens=100000"]
    train(_lm_config(tmp_path / "plain", task, "vanilla", "data.trees=right-branching", *quick))
    runs = {"one": [*TREE_LOSS, *quick]}
    if task == "causal-lm":  # the weight is applied once, in with_tree_loss, for both tasks
        runs["zero"] = [*TREE_LOSS, "model.tree_loss_weight=0", *quick]
    for name, settings in runs.items():
        train(_lm_config(tmp_path / name, task, "vanilla", *settings))
    plain, one = _weights(tmp_path / "plain" / task), _weights(tmp_path / "one" / task)
    assert not all(torch.equal(plain[k], one[k]) for k in plain)
    if "zero" in runs:
        zero = _weights(tmp_path / "zero" / task)
        assert all(torch.equal(plain[k], zero[k]) for k in plain)
    records = [json.loads(line) for line in (tmp_path / "one" / task / "metrics.jsonl").open()]
    logged = [r for r in records if "train_loss" in r]
    assert logged and all(r["train_tree_loss"] > 0 for r in logged)


@pytest.mark.slow
def test_the_causal_tree_loss_reads_the_words_states_after_the_start_token(tmp_path, shared_data):
    """Each tree's leaves are the pieces after ``<s>``: the task's tree loss is the loss of
    the states with the ``<s>`` state left out, a token a leaf."""
    task = make_task(_lm_config(tmp_path, "causal-lm", "vanilla", *TREE_LOSS))
    examples, where = task.read("train")
    task.fit(examples)
    data = task.encode(examples[:4], where)
    batch = data.batch(list(range(4)))
    model = task.build_model().eval()
    with torch.no_grad():
        task.loss(model, batch)
        got = task.loss_terms()["tree_loss"]
        kept: list[torch.Tensor] = []
        model.encoder.state_watchers.append(kept.extend)
        model(batch.inputs)  # every state, before the final norm
        words = kept[-1][:, 1:]  # the last layer's, <s> left out
        positions = token_positions(batch.inputs.pad_mask[:, 1:])
        expected = task.tree_loss([words], batch.tree_targets, positions)
    torch.testing.assert_close(got, expected)


def test_a_language_model_tree_loss_needs_trees(tmp_path):
    with pytest.raises(ValueError, match="model.tree_loss reads each training sentence's tree"):
        make_task(_lm_config(tmp_path, "mlm", "vanilla", "model.tree_loss=tree-regularization"))
