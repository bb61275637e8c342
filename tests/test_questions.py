"""Questions and imperatives made from Penn Treebank declaratives (``treeattn.data.questions``):
each verb form on hand-made trees, against the trees the Treebank's own conventions give;
the refusals, each with its reason, counted and never dropped silently."""

from __future__ import annotations

import pytest

from treeattn.data.questions import (
    IMPERATIVE,
    KINDS,
    OBJECT_WH,
    SUBJECT_WH,
    YES_NO,
    NotTransformed,
    base_forms_from_ud,
    make_questions,
    question_tree,
)
from treeattn.trees import Tree
from treeattn.trees.dependency import parse_conllu

BASE_FORMS = {
    ("rejected", "VBD"): "reject",
    ("makes", "VBZ"): "make",
    ("has", "VBZ"): "have",
    ("wrote", "VBD"): "write",
}

COMMITTEE = (
    "( (S (NP-SBJ (DT The) (NN committee)) (VP (VBD rejected) (NP (DT the) (NN plan))) (. .)) )"
)
COMPANY = (
    "(S (NP-SBJ (DT The) (NN company)) (VP (MD will) (VP (VB sell) (NP (DT the) (NN unit)))) (. .))"
)


def made(declarative: str, kind: str) -> str:
    return question_tree(Tree.parse(declarative), kind, BASE_FORMS).to_brackets()


@pytest.mark.parametrize(
    ("declarative", "question"),
    [
        (  # a modal inverts
            COMPANY,
            "(SQ (MD Will) (NP (DT the) (NN company)) (VP (VB sell) (NP (DT the) (NN unit)))"
            " (. ?))",
        ),
        (  # a contracted modal is spelled out
            "(S (NP-SBJ (PRP He)) (VP (MD 'd) (VP (VB go))) (. .))",
            "(SQ (MD Would) (NP (PRP he)) (VP (VB go)) (. ?))",
        ),
        (  # be as the copula: the predicate under SQ
            "(S (NP-SBJ (PRP It)) (VP (VBZ is) (ADJP-PRD (JJ cheap))) (. .))",
            "(SQ (VBZ Is) (NP (PRP it)) (ADJP (JJ cheap)) (. ?))",
        ),
        (  # be as an auxiliary, its "n't" fronted with it
            "(S (NP-SBJ (PRP It)) (VP (VBZ is) (RB n't) (VP (VBG raining))) (. .))",
            "(SQ (VBZ Is) (RB n't) (NP (PRP it)) (VP (VBG raining)) (. ?))",
        ),
        (  # have as an auxiliary inverts; a contracted "'ve" is spelled out
            "(S (NP-SBJ (NNS Prices)) (VP (VBP 've) (VP (VBN risen))) (. .))",
            "(SQ (VBP Have) (NP (NNS prices)) (VP (VBN risen)) (. ?))",
        ),
        (  # have as a lexical verb: do-support, third person singular
            "(S (NP-SBJ (DT The) (NN firm)) (VP (VBZ has) (NP (DT a) (NN plan))) (. .))",
            "(SQ (VBZ Does) (NP (DT the) (NN firm)) (VP (VB have) (NP (DT a) (NN plan))) (. ?))",
        ),
        (  # do-support in the present, a proper noun keeps its capital
            "(S (NP-SBJ (NNP IBM)) (VP (VBZ makes) (NP (NNS computers))) (. .))",
            "(SQ (VBZ Does) (NP (NNP IBM)) (VP (VB make) (NP (NNS computers))) (. ?))",
        ),
        (  # do-support in the past
            COMMITTEE,
            "(SQ (VBD Did) (NP (DT the) (NN committee)) (VP (VB reject) (NP (DT the) (NN plan)))"
            " (. ?))",
        ),
        (  # do-support for the present but the third person singular: the form is the base
            "(S (NP-SBJ (PRP They)) (VP (VBP want) (NP (NN money))) (. .))",
            "(SQ (VBP Do) (NP (PRP they)) (VP (VB want) (NP (NN money))) (. ?))",
        ),
        (  # an adverb phrase after the subject stays after it; empty elements go
            "(S (NP-SBJ-1 (DT The) (NN plan)) (ADVP (RB also)) (VP (VBD was) (VP (VBN rejected)"
            " (NP (-NONE- *-1)))) (. .))",
            "(SQ (VBD Was) (NP (DT the) (NN plan)) (ADVP (RB also)) (VP (VBN rejected)) (. ?))",
        ),
    ],
)
def test_yes_no_questions_invert_or_take_do_as_the_treebank_writes_them(declarative, question):
    assert made(declarative, YES_NO) == question


def test_wh_questions_front_the_subject_or_the_object_without_traces():
    assert made(COMMITTEE, SUBJECT_WH) == (
        "(SBARQ (WHNP (WDT Which) (NN committee)) (SQ (VP (VBD rejected) (NP (DT the) (NN plan))))"
        " (. ?))"
    )
    assert made(COMMITTEE, OBJECT_WH) == (
        "(SBARQ (WHNP (WDT Which) (NN plan)) (SQ (VBD did) (NP (DT the) (NN committee))"
        " (VP (VB reject))) (. ?))"
    )
    # The object of a verb under a modal; the modal inverts.
    assert made(COMPANY, OBJECT_WH) == (
        "(SBARQ (WHNP (WDT Which) (NN unit)) (SQ (MD will) (NP (DT the) (NN company))"
        " (VP (VB sell))) (. ?))"
    )
    # Pronouns: "who" for he, "what" for it, the verb's agreement unchanged.
    he = "(S (NP-SBJ (PRP He)) (VP (MD will) (VP (VB resign))) (. .))"
    assert (
        made(he, SUBJECT_WH) == "(SBARQ (WHNP (WP Who)) (SQ (VP (MD will) (VP (VB resign)))) (. ?))"
    )
    want = "(S (NP-SBJ (PRP You)) (VP (VBP want) (NP (PRP it))) (. .))"
    assert made(want, OBJECT_WH) == (
        "(SBARQ (WHNP (WP What)) (SQ (VBP do) (NP (PRP you)) (VP (VB want))) (. ?))"
    )
    # A plural subject keeps its number in "which": the verb still agrees.
    wrote = "(S (NP-SBJ (DT The) (NNS analysts)) (VP (VBD wrote) (NP (DT a) (NN report))) (. .))"
    assert made(wrote, SUBJECT_WH).startswith("(SBARQ (WHNP (WDT Which) (NNS analysts)) (SQ (VP")


def test_imperatives_drop_the_subject_and_take_the_base_form():
    assert made(COMMITTEE, IMPERATIVE) == "(S (VP (VB Reject) (NP (DT the) (NN plan))) (. .))"
    with pytest.raises(NotTransformed, match="auxiliary verb"):
        made(COMPANY, IMPERATIVE)


def test_the_declarative_is_not_changed():
    tree = Tree.parse(COMMITTEE)
    before = tree.to_brackets()
    for kind in KINDS:
        question_tree(tree, kind, BASE_FORMS)
    assert tree.to_brackets() == before


@pytest.mark.parametrize(
    ("declarative", "kind", "reason"),
    [
        (
            "(SINV (`` ``) (S-TPC-1 (NP-SBJ (PRP It)) (VP (VBZ works))) (, ,) ('' '')"
            " (VP (VBD said) (S (-NONE- *T*-1))) (NP-SBJ (PRP he)) (. .))",
            YES_NO,
            "root is SINV, not S",
        ),
        ("(S (NP-SBJ (PRP It)) (VP (VBZ works)))", YES_NO, "does not end in a full stop"),
        (
            "(S (PP (IN In) (NP (CD 1988))) (, ,) (NP-SBJ (PRP it)) (VP (VBD grew)) (. .))",
            YES_NO,
            "not subject, verb phrase and full stop",
        ),
        (
            "(S (NP-SBJ (PRP It)) (VP (VP (VBD rose)) (CC and) (VP (VBD fell))) (. .))",
            YES_NO,
            "coordinated verb phrases",
        ),
        (
            "(S (NP-SBJ (PRP It)) (VP (VBD grew))  (. .))",
            YES_NO,
            "base form of the verb unknown",
        ),
        (
            "(S (NP-SBJ (PRP It)) (VP (VBZ 's) (ADJP-PRD (JJ cheap))) (. .))",
            YES_NO,
            "contracted 's or 'd",
        ),
        (
            "(S (NP-SBJ (EX There)) (VP (VBZ is) (NP-PRD (DT a) (NN plan))) (. .))",
            SUBJECT_WH,
            "expletive subject",
        ),
        (
            "(S (NP-SBJ (PRP They)) (VP (VBP want) (NP (NN money))) (. .))",
            SUBJECT_WH,
            "pronoun subject would change the verb's agreement",
        ),
        (  # a predicate is no object
            "(S (NP-SBJ (PRP It)) (VP (VBZ is) (NP-PRD (DT a) (NN plan))) (. .))",
            OBJECT_WH,
            "no single object right after the verb",
        ),
    ],
)
def test_trees_the_rules_are_not_sure_of_are_refused_saying_why(declarative, kind, reason):
    with pytest.raises(NotTransformed) as refused:
        made(declarative, kind)
    assert refused.value.reason == reason


def test_make_questions_counts_every_chosen_declarative():
    declaratives = [
        Tree.parse(COMMITTEE),
        Tree.parse(COMPANY),
        Tree.parse("(S (NP-SBJ (PRP It)) (VP (VBZ works)))"),  # no full stop
        Tree.parse("(NP (DT A) (NN plan) (. .))"),
    ]
    found = make_questions(declaratives, 1.0, BASE_FORMS, seed=3)
    assert found.chosen == 4 and len(found.trees) == 2
    assert found.refused == {"does not end in a full stop": 1, "root is NP, not S": 1}
    assert sorted(found.sources) == [0, 1] and found.made.total() == 2
    assert all(t.label in ("SQ", "SBARQ", "S") for t in found.trees)
    assert all(
        t.leaves()[-1] == ("." if k == IMPERATIVE else "?")
        for t, k in zip(found.trees, found.kinds, strict=True)
    )
    assert "2 of 4 declaratives" in found.summary()
    # The same seed draws the same; a share draws that many; only the kinds asked for.
    again = make_questions(declaratives, 1.0, BASE_FORMS, seed=3)
    assert [t.to_brackets() for t in again.trees] == [t.to_brackets() for t in found.trees]
    assert make_questions(declaratives, 0.5, BASE_FORMS, seed=1).chosen == 2
    assert make_questions(declaratives, 0.0, BASE_FORMS).chosen == 0
    only = make_questions(declaratives, 1.0, BASE_FORMS, kinds=[YES_NO])
    assert set(only.kinds) == {YES_NO} and len(only.trees) == 2
    with pytest.raises(ValueError, match="share"):
        make_questions(declaratives, 1.5, BASE_FORMS)
    with pytest.raises(ValueError, match="kinds"):
        make_questions(declaratives, 1.0, BASE_FORMS, kinds=["exclamation"])


def test_base_forms_come_from_the_treebanks_lemmas():
    conllu = (
        "# text = He wrote and she writes.\n"
        "1\tHe\the\tPRON\tPRP\t_\t2\tnsubj\t_\t_\n"
        "2\twrote\twrite\tVERB\tVBD\t_\t0\troot\t_\t_\n"
        "3\tand\tand\tCCONJ\tCC\t_\t5\tcc\t_\t_\n"
        "4\tshe\tshe\tPRON\tPRP\t_\t5\tnsubj\t_\t_\n"
        "5\tWrites\twrite\tVERB\tVBZ\t_\t2\tconj\t_\t_\n"
        "6\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_\n\n"
    )
    forms = base_forms_from_ud(parse_conllu(conllu))
    assert forms == {("wrote", "VBD"): "write", ("writes", "VBZ"): "write"}


# ---------------------------------------------------------------- in the parser's training data
@pytest.fixture
def data_root(tmp_path):
    """``ptb-sample/`` with the two declaratives above in each split's range, and EWT
    train giving "rejected" its base form."""
    ptb, ud = tmp_path / "ptb-sample", tmp_path / "ud-en-ewt"
    ptb.mkdir()
    ud.mkdir()
    for number in (1, 140, 170):  # train, dev, test
        (ptb / f"wsj_{number:04d}.mrg").write_text(f"{COMMITTEE}\n( {COMPANY} )\n")
    conllu = (
        "# text = They rejected it\n"
        "1\tThey\tthey\tPRON\tPRP\t_\t2\tnsubj\t_\t_\n"
        "2\trejected\treject\tVERB\tVBD\t_\t0\troot\t_\t_\n"
        "3\tit\tit\tPRON\tPRP\t_\t2\tobj\t_\t_\n\n"
    )
    for split in ("train", "dev", "test"):
        (ud / f"en_ewt-ud-{split}.conllu").write_text(conllu)
    return tmp_path


@pytest.mark.parametrize("name", ["ptb-sample", "joint"])
def test_the_parser_trains_on_questions_beside_the_declaratives(data_root, name, capsys):
    from treeattn.tasks import load_config, make_task

    settings = ["task=parse", f"data.name={name}", f"data.root={data_root}", "data.questions=1"]
    task = make_task(load_config(None, settings))
    examples, _ = task.read("train")
    trees = [ex.tree for ex in examples if ex.tree is not None]
    assert len(trees) == 4  # two declaratives, each also as a question or imperative
    for tree in trees[2:]:  # after the declaratives
        assert tree.label in ("SQ", "SBARQ") or [c.label for c in tree.children] == ["VP", "."]
    assert all(ex.tree is not None for ex in examples[:4])
    assert "2 of 2 declaratives made questions or imperatives" in capsys.readouterr().out
    dev, _ = task.read("dev")
    assert len([ex for ex in dev if ex.tree is not None]) == 2  # training only


def test_questions_are_a_share_of_ptb_training_data():
    from treeattn.tasks import load_config

    with pytest.raises(ValueError, match="data.questions=1.5 is a share"):
        load_config(None, ["task=parse", "data.questions=1.5"])
    with pytest.raises(ValueError, match="data.questions is for data.name=ptb-sample or joint"):
        load_config(None, ["task=parse", "data.name=ud-en-ewt", "data.questions=0.5"])
