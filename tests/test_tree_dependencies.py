"""Brackets and CoNLL-U of one parse agree: a constituency parser's dependencies are the
head-rule conversion of its own tree unless the independent arcs are asked for; CoNLL-U
names its scheme; only a root word is given the relation ``root``."""

from __future__ import annotations

from dataclasses import asdict

import pytest
import torch

from tests.test_parser import TINY_SIZES, TOY
from treeattn.cli import main
from treeattn.parsing import Parser
from treeattn.parsing.config import ParserConfig
from treeattn.parsing.decoding import TREE_SCHEME, best_relations, tree_dependencies
from treeattn.parsing.examples import ptb_example, ud_example
from treeattn.parsing.network import UNNAMED_OUTPUTS, LabelAttentionParser
from treeattn.parsing.vocab import ParserVocab
from treeattn.structs import Eisner, arcs_to_heads
from treeattn.trees import Tree, to_dependency
from treeattn.trees.dependency import DependencyTree, format_conllu, read_conllu

SENTENCES = [
    "the cat sat on the mat .",
    "a dog ran .",
    "it saw the dog on the mat .",
    "the dog sat .",
    "it sat on a cat .",
    "the mat saw a dog ran .",
]
WORDS = [sentence.split() for sentence in SENTENCES]
UD_TREES = [
    DependencyTree(["the", "cat", "sat"], [2, 3, 0], ["det", "nsubj", "root"]),
    DependencyTree(["dogs", "saw", "cats"], [2, 0, 2], ["nsubj", "root", "obj"]),
]


def random_parser(examples: list, data: dict, seed: int = 0) -> Parser:
    """An untrained parser with random weights (its biaffine scorers start at zero, which
    would tie every arc): trees that are anything but the training data's."""
    vocab = ParserVocab.fit(examples)
    sizes = ParserConfig(**TINY_SIZES)
    torch.manual_seed(seed)
    model = LabelAttentionParser(sizes, **vocab.sizes())
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.5)
    run_config = {"task": "parse", "model": asdict(sizes), "data": data}
    return Parser(run_config, vocab, model.eval(), torch.device("cpu"))


@pytest.fixture(scope="module")
def ptb_parser() -> Parser:
    examples = [ptb_example(Tree.parse(t), "toy", i) for i, t in enumerate(TOY, start=1)]
    return random_parser(examples, {"name": "files", "paths": {"train": "toy.txt"}})


@pytest.fixture(scope="module")
def ud_parser() -> Parser:
    return random_parser([ud_example(t) for t in UD_TREES], {"name": "ud-en-ewt"})


def phrases_with_one_word_headed_outside(tree: Tree, heads: list[int]) -> list[bool]:
    return [
        sum(not start < heads[k] <= end for k in range(start, end)) == 1
        for _, start, end in tree.spans()
    ]


def test_a_hand_made_tree_gives_the_conllu_worked_out_by_hand():
    tree = Tree.parse(
        "(S (NP (PRP We)) (VP (VBD met) (NP (NP (DT the) (NN author)) (PP (IN of) (NP (DT the)"
        " (NN book)))) (PP (IN on) (NP (NNP Tuesday)))) (. .))"
    )
    # S's head is its VP, whose head is the verb; NP (NP PP) takes its first NP, the PP
    # its preposition; so "on Tuesday" hangs on "met", as the brackets attach it.
    expected = """\
# scheme = head-rule dependencies of the constituency tree (PHRASE/CHILD relations)
1	We	_	_	PRP	_	2	S/NP	_	_
2	met	_	_	VBD	_	0	root	_	_
3	the	_	_	DT	_	4	NP/DT	_	_
4	author	_	_	NN	_	2	VP/NP	_	_
5	of	_	_	IN	_	4	NP/PP	_	_
6	the	_	_	DT	_	7	NP/DT	_	_
7	book	_	_	NN	_	5	PP/NP	_	_
8	on	_	_	IN	_	2	VP/PP	_	_
9	Tuesday	_	_	NNP	_	8	PP/NP	_	_
10	.	_	_	.	_	2	punct	_	_

"""
    assert format_conllu([tree_dependencies(tree, tree.tags())]) == expected


def test_parser_output_dependencies_are_its_trees_conversion_by_default(ptb_parser):
    for parse in ptb_parser.parse(WORDS):
        converted = to_dependency(parse.tree)
        assert parse.dependencies.heads == converted.heads
        assert parse.dependencies.relations == converted.relations
        assert parse.dependencies.metadata["scheme"] == TREE_SCHEME
        assert all(phrases_with_one_word_headed_outside(parse.tree, converted.heads))


def test_the_independent_option_gives_the_arc_decoders_heads(ptb_parser):
    parsed = ptb_parser.parse(WORDS, dependencies="independent")
    data = ptb_parser.encode(WORDS)
    batch = data.batch(list(range(len(SENTENCES))))
    with torch.no_grad():
        out = ptb_parser.model(batch.words, batch.chars, batch.pad_mask, sentences=batch.sentences)
    heads = arcs_to_heads(Eisner(out.arc_scores, batch.lengths).argmax, batch.lengths)[:, 1:]
    for b, parse in enumerate(parsed):
        assert parse.dependencies.heads == heads[b, : len(parse.words)].tolist()
        assert parse.dependencies.metadata["scheme"].startswith("the parser's own arcs")
    # The two kinds differ on these sentences: the default is no copy of the arcs.
    assert any(p.dependencies.heads != to_dependency(p.tree).heads for p in parsed)


def test_the_dependency_kind_is_checked(ptb_parser, ud_parser):
    with pytest.raises(ValueError, match="dependencies='arcs'; one of ud, tree, from-tree, indep"):
        ptb_parser.parse(WORDS[:1], dependencies="arcs")
    with pytest.raises(ValueError, match="trained on toy.txt has no Universal Dependencies"):
        ptb_parser.parse(WORDS[:1], dependencies="ud")
    with pytest.raises(ValueError, match="dependency-only parser has no tree"):
        ud_parser.parse([["the", "cat", "sat"]], dependencies="from-tree")


def test_brackets_and_conllu_of_the_parse_command_agree(ptb_parser, tmp_path, capsys):
    model = ptb_parser.save(tmp_path / "random.safetensors", compact=False)
    text = tmp_path / "in.txt"
    text.write_text("".join(s + "\n" for s in SENTENCES), encoding="utf-8")
    outputs = {}
    for form, extra in (
        ("brackets", []),
        ("conllu", []),
        ("own", ["--dependencies", "independent"]),
    ):
        out = tmp_path / f"{form}.txt"
        args = ["parse", str(text), "--model", str(model), "--tokenized", "-o", str(out)]
        fmt = ["--format", "brackets" if form == "brackets" else "conllu"]
        assert main([*args, *fmt, *extra]) == 0, capsys.readouterr().err
        outputs[form] = out
    trees = [Tree.parse(line) for line in outputs["brackets"].read_text().splitlines()]
    conllu, own = read_conllu(outputs["conllu"]), read_conllu(outputs["own"])
    for tree, deps in zip(trees, conllu, strict=True):
        converted = to_dependency(tree)
        assert (deps.heads, deps.relations) == (converted.heads, converted.relations)
    assert any(o.heads != d.heads for o, d in zip(own, conllu, strict=True))
    text = outputs["conllu"].read_text()
    assert text.count(f"# scheme = {TREE_SCHEME}\n") == len(SENTENCES)
    assert "# scheme = the parser's own arcs, decoded apart from its constituency tree" in (
        outputs["own"].read_text()
    )


def test_only_the_root_word_has_the_relation_root():
    # names: nsubj, root, obj. Word 1 is the root but scores nsubj best; word 2 is not and
    # scores root best.
    logits = torch.full((1, 3, UNNAMED_OUTPUTS + 3), -9.0)
    logits[0, 0, UNNAMED_OUTPUTS:] = torch.tensor([3.0, 1.0, 0.0])
    logits[0, 1, UNNAMED_OUTPUTS:] = torch.tensor([0.0, 5.0, 2.0])
    logits[0, 2, UNNAMED_OUTPUTS:] = torch.tensor([1.0, 0.0, 2.0])
    is_root = torch.tensor([[True, False, False]])
    assert best_relations(logits, is_root, root_id=1).tolist() == [[1, 2, 2]]
    assert best_relations(logits, is_root, root_id=None).tolist() == [[0, 1, 2]]


def test_a_ud_parser_gives_root_to_its_root_word_alone(ud_parser, tmp_path, capsys):
    # Scores that favour root for every word, as an unconstrained decoder would pick it.
    root = UNNAMED_OUTPUTS + ud_parser.vocab.rels.names.index("root")
    with torch.no_grad():
        ud_parser.model.rel.weight[root, -1, -1] += 100.0
    sentences = ["the cat sat", "dogs saw cats", "cats saw the dogs sat", "the the cat"]
    for parse in ud_parser.parse([s.split() for s in sentences]):
        deps = parse.dependencies
        assert [r == "root" for r in deps.relations] == [h == 0 for h in deps.heads]
        assert (
            deps.metadata["scheme"] == "Universal Dependencies (ud-en-ewt), the parser's own arcs"
        )
    model = ud_parser.save(tmp_path / "ud.safetensors", compact=False)
    text = tmp_path / "in.txt"
    text.write_text("dogs saw cats\n", encoding="utf-8")
    assert main(["parse", str(text), "--model", str(model), "--format", "conllu"]) == 0
    out = capsys.readouterr().out
    assert "# scheme = Universal Dependencies (ud-en-ewt), the parser's own arcs\n" in out
    assert [line.split("\t")[7] for line in out.splitlines() if line[:1].isdigit()].count(
        "root"
    ) == 1
