"""McCoy, Frank & Linzen (2020): the grammar, the transformations and the readers against the
shared files, the generated training sets, and the metrics."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from tests.helpers import train
from treeattn.data.mccoy import (
    QUESTION,
    TENSE,
    McCoyData,
    first_word_shares,
    generate_pairs,
    main_verb_shares,
    parse_brackets,
    read_bracket_rows,
    sequence_accuracy,
    shared_mix,
    training_set,
    unlabeled,
)
from treeattn.data.mccoy.generate import pair_type, shared_sentences, training_path
from treeattn.data.mccoy.grammar import Grammar
from treeattn.data.mccoy.sentences import read_sentence
from treeattn.data.mccoy.transforms import move_first
from treeattn.data.paths import data_dir
from treeattn.errors import FormatError
from treeattn.tasks import load_config

# A small question-formation grammar in the files' format, for tests without the data.
MINI_QUESTION = """\
1\tROOT\tS .
1\tS\tNP_M_S VP_M_S
1\tS\tNP_M_P VP_M_P
1\tNP_M_S\tDet N_S
1\tNP_M_S\tDet N_S RC_S
1\tNP_M_P\tDet N_P
1\tNP_M_P\tDet N_P Prep Det N
1\tNP_O\tDet N_S
1\tN\tN_S
1\tN\tN_P
1\tVP_M_S\tAux_S V_intrans
1\tVP_M_S\tAux_S V_trans NP_O
1\tVP_M_P\tAux_P V_intrans
1\tRC_S\tRel Aux_S V_intrans
1\tRC_S\tRel Det N_P Aux_P V_trans
1\tDet\tthe
1\tN_S\tnewt
1\tN_P\tnewts
1\tV_intrans\tsleep
1\tV_trans\tamuse
1\tAux_S\tdoes
1\tAux_S\tdoesn't
1\tAux_P\tdo
1\tPrep\tby
1\tRel\tthat\t
"""


@pytest.fixture
def mini(tmp_path):
    (tmp_path / "cfgs").mkdir()
    (tmp_path / "cfgs" / "question.gr").write_text(MINI_QUESTION, encoding="utf-8")
    return McCoyData.load("question", tmp_path)


def _mccoy_data(name: str) -> McCoyData:
    root = data_dir()
    if root is None or not (root / "mccoy2020").is_dir():
        pytest.skip(
            "McCoy et al. 2020 data not found: set TREEATTN_DATA to a folder with mccoy2020/"
        )
    return McCoyData.load(name)


@pytest.fixture(scope="module")
def question():
    return _mccoy_data("question")


@pytest.fixture(scope="module")
def tense():
    return _mccoy_data("tense")


@pytest.fixture(scope="module")
def splits(question, tense):
    """Each task's shared splits, read once."""
    return {
        (data.task.name, split): data.load_split(split)
        for data in (question, tense)
        for split in ("test", "gen")
    }


# -- the grammar and the transformations, without the data --------------------------------


def test_reads_the_tree_and_the_auxiliaries(mini):
    example = mini.example("the newt that does sleep doesn't amuse the newt . quest".split())
    sentence = example.sentence
    assert sentence.tree.to_brackets() == (
        "(ROOT (S (NP (NP the newt) (RC that (VP does sleep))) "
        "(VP doesn't (VP amuse (NP the newt)))) .)"
    )
    assert (sentence.main_aux, sentence.first_aux, sentence.main_verb) == (5, 3, 6)
    assert " ".join(example.target) == "doesn't the newt that does sleep amuse the newt ?"
    assert " ".join(move_first(sentence, mini.lexicon)) == (
        "does the newt that sleep doesn't amuse the newt ?"
    )
    assert not QUESTION.rules_agree(sentence, mini.lexicon)


def test_an_object_relative_clause_has_its_own_subject(mini):
    sentence = read_sentence("the newt that the newts do amuse does sleep .".split(), mini.lexicon)
    assert sentence.verb_subjects == {6: 4, 8: 1}
    assert sentence.subject_modifier == "RC" and sentence.object_modifier is None


def test_a_sentence_the_grammar_cannot_write_is_an_error(mini):
    with pytest.raises(FormatError, match="word 3: expected an auxiliary or a verb"):
        read_sentence("the newt newt does sleep .".split(), mini.lexicon)
    with pytest.raises(FormatError, match="not a task word"):
        mini.example("the newt does sleep . PAST".split())


def test_grammar_lines_are_checked(tmp_path):
    path = tmp_path / "bad.gr"
    path.write_text("1\tROOT\tS .\nx\tS\tNP\n", encoding="utf-8")
    with pytest.raises(FormatError, match="bad.gr:2: weight 'x'"):
        Grammar.read(path)


def test_samples_follow_the_weights(mini):
    rng = random.Random(0)
    counts = Counter(len(mini.grammar.sample(rng, "NP_M_S").leaves()) for _ in range(4000))
    assert abs(counts[2] / 4000 - 0.5) < 0.03  # Det N_S against Det N_S RC_S


def test_brackets_read_into_unlabeled_trees():
    tree = parse_brackets("[ [ the newt ] [ does sleep ] ] .".split())
    assert tree.to_brackets() == "(X (X (X the newt) (X does sleep)) .)"
    with pytest.raises(FormatError):
        parse_brackets("[ the newt".split())


# -- the metrics on hand-made predictions ---------------------------------------------------


def test_first_word_shares_and_sequence_accuracy(mini):
    example = mini.example("the newt that does sleep doesn't amuse the newt . quest".split())
    predictions = [
        list(example.target),  # main auxiliary fronted, all right
        "doesn't the newt that does sleep amuse the newts ?".split(),  # main, one word wrong
        "does the newt that sleep doesn't amuse the newt ?".split(),  # first auxiliary
        "the newt that does sleep ?".split(),  # neither
    ]
    examples = [example] * 4
    assert first_word_shares(predictions, examples) == {
        "main_aux": 50.0,
        "first_aux": 25.0,
        "neither_aux": 25.0,
    }
    assert sequence_accuracy(predictions, examples) == 25.0


def test_main_verb_shares(tense):
    example = tense.example("my quail upon my peacocks remembered her unicorns . PRESENT".split())
    predictions = [
        "my quail upon my peacocks remembers her unicorns .".split(),  # subject
        "my quail upon my peacocks remember her unicorns .".split(),  # recent noun
        "my quail upon my peacocks remembered her unicorns .".split(),  # past: other
        "my quail upon my peacocks remembers .".split(),  # classes differ: other
    ]
    shares = main_verb_shares(predictions, [example] * 4, tense.lexicon)
    assert shares == {"agree_subject": 25.0, "agree_recent": 25.0, "other_verb": 50.0}


# -- the shared files -----------------------------------------------------------------------


@pytest.mark.slow
def test_move_main_gives_every_gen_output_and_move_first_another_first_word(question, splits):
    gen = splits["question", "gen"]
    assert len(gen) == 10_000
    assert all(QUESTION.hierarchical(e.sentence, question.lexicon) == list(e.target) for e in gen)
    assert all(move_first(e.sentence, question.lexicon)[0] != e.target[0] for e in gen)
    assert first_word_shares([e.target for e in gen], gen)["main_aux"] == 100.0


def test_agree_subject_gives_every_gen_output_and_agree_recent_another_verb(tense, splits):
    gen = splits["tense", "gen"]
    assert len(gen) == 10_000
    assert all(TENSE.hierarchical(e.sentence, tense.lexicon) == list(e.target) for e in gen)
    for e in gen:
        recent = TENSE.linear(e.sentence, tense.lexicon)
        assert recent[e.sentence.main_verb] != e.target[e.sentence.main_verb]
    linear = [TENSE.linear(e.sentence, tense.lexicon) for e in gen]
    assert main_verb_shares(linear, gen, tense.lexicon)["agree_recent"] == 100.0


@pytest.mark.parametrize("name", ["question", "tense"])
def test_test_outputs_are_the_hierarchical_rule_and_both_rules_agree(name, splits, request):
    data = request.getfixturevalue(name)
    test = splits[name, "test"]
    assert all(
        data.task.output(e.sentence, data.lexicon, e.task_word) == list(e.target) for e in test
    )
    transformed = [e for e in test if e.task_word == data.task.transform_word]
    assert len(transformed) > 4000
    assert all(data.task.rules_agree(e.sentence, data.lexicon) for e in transformed)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["question", "tense"])
def test_gen_trees_are_the_bracket_files(name, splits, request):
    data = request.getfixturevalue(name)
    gen = splits[name, "gen"]
    brackets = read_bracket_rows(data.split_path("gen", brackets=True))
    assert len(brackets) == len(gen)
    for example, (source_tree, target_tree) in zip(gen, brackets, strict=True):
        assert tuple(source_tree.leaves()) == example.source
        assert unlabeled(example.source_tree) == source_tree
        assert unlabeled(data.output_tree(example)) == target_tree


# -- generated training sets ----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["question", "tense"])
def test_generated_training_pairs_are_ambiguous_and_mixed_as_the_test_set(name, splits, request):
    data = request.getfixturevalue(name)
    excluded = shared_sentences(data)
    pairs = generate_pairs(data, 12_000, seed=1, exclude=excluded, mix=shared_mix(data))
    assert not {" ".join(p.source[:-1]) for p in pairs} & excluded
    transformed = [p for p in pairs if p.task_word == data.task.transform_word]
    assert all(data.task.rules_agree(p.sentence, data.lexicon) for p in transformed)
    assert all(
        data.task.hierarchical(p.sentence, data.lexicon) == list(p.target) for p in transformed
    )

    def shares(examples):
        counts = Counter(pair_type(e)[1:] for e in examples)
        return {kind: 100 * n / len(examples) for kind, n in counts.items()}

    ours, shared = shares(pairs), shares(splits[name, "test"])
    for kind in ours.keys() | shared.keys():
        assert abs(ours.get(kind, 0) - shared.get(kind, 0)) < 2, kind
    words = Counter(p.task_word for p in pairs)
    assert 38 < 100 * words[data.task.transform_word] / len(pairs) < 44


def test_derivation_phrases_are_phrases_of_the_read_tree(question):
    rng = random.Random(3)
    for _ in range(500):
        derivation = question.grammar.sample(rng)
        sentence = read_sentence(derivation.leaves(), question.lexicon)
        read_spans = {(s, e) for _, s, e in sentence.tree.spans()}
        # Phrases of two words or more: the derivation's unary chains over a word
        # (N -> N_S -> newt) have no bracket of their own.
        phrases = {(s, e) for _, s, e in derivation.spans() if e - s > 1}
        assert phrases <= read_spans


def test_training_set_is_cached_by_size_and_seed(tense, tmp_path, monkeypatch):
    monkeypatch.setenv("TREEATTN_CACHE", str(tmp_path))
    first = training_set(tense, size=300, seed=5)
    path = training_path(tense, 300, 5)
    assert path.is_file() and path.parent == tmp_path / "mccoy"
    again = training_set(tense, size=300, seed=5)
    assert [e.source for e in again] == [e.source for e in first]
    assert [e.target for e in again] == [e.target for e in first]
    other = training_set(tense, size=300, seed=6)
    assert [e.source for e in other] != [e.source for e in first]
    assert not list(tmp_path.glob("mccoy/*.partial"))


# -- sequence to sequence -------------------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        ["model.attention=hierarchical"],
        ["model.tree_loss=tree-regularization", "model.tree_loss_options.layers=[1]"],
    ],
    ids=["hierarchical", "tree-regularization"],
)
def test_a_tiny_model_trains_on_a_small_generated_set(question, tmp_path, monkeypatch, model):
    """End to end with the encoder that reads the grammar's trees, and with the plain
    encoder under tree regularization from the same trees (the plain one alone reads less
    of the same batches)."""
    monkeypatch.setenv("TREEATTN_CACHE", str(tmp_path / "cache"))
    splits = {}
    for split in ("dev", "test", "gen"):  # the first lines of each shared split
        lines = question.split_path(split).read_text(encoding="utf-8").splitlines()[:30]
        splits[split] = tmp_path / f"{split}.tsv"
        splits[split].write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = load_config(
        None,
        [
            "task=hierarchical_generalization",
            "data.task=question",
            "data.train_size=200",
            "data.watch_gen=10",
            *(f"data.paths.{split}={path}" for split, path in splits.items()),
            *model,
            "model.d_model=32",
            "model.n_heads=2",
            "model.n_layers=1",
            "model.d_ff=64",
            "model.dropout=0",
            "model.max_length=40",
            "train.epochs=null",
            "train.max_updates=6",
            "train.max_tokens=400",
            "train.eval_every=3",
            "train.eval_each_epoch=false",
            "train.progress=false",
            f"out_dir={tmp_path / 'run'}",
        ],
    )
    results = train(cfg)
    assert results["global_step"] == 6
    for split in ("dev", "test", "gen"):
        assert 0 <= results[f"{split}_sequence_accuracy"] <= 100
        assert 0 <= results[f"{split}_main_aux"] + results[f"{split}_first_aux"] <= 100
    logged = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    evaluations = [r for r in logged if r.get("split") == "dev"]
    assert [r["step"] for r in evaluations] == [3, 6]
    shares = ("gen_main_aux", "gen_first_aux", "gen_neither_aux")
    assert all(sum(r[k] for k in shares) == pytest.approx(100) for r in evaluations)
    assert all(r["gen_count"] == 10 for r in evaluations)
    assert (tmp_path / "cache" / "mccoy").is_dir()
    steps = [r for r in logged if "train_loss" in r]
    assert steps and all(("train_tree_loss" in r) == ("tree_loss" in model[0]) for r in steps)
