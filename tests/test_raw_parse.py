"""Raw text to trees: the Parser API, `treeattn parse`, parser files, bad input."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import train
from tests.test_parser import SMALL, TOY
from treeattn.cli import main
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.parsing import Parser
from treeattn.parsing.tree_source import PARSER, TreeSource, parser_identity
from treeattn.tasks import load_config
from treeattn.trees import Tree
from treeattn.trees.dependency import read_conllu
from treeattn.trees.tokenize import tokenize

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def toy_parser(tmp_path_factory) -> Path:
    """A parser trained a few seconds on a toy treebank, exported as safetensors."""
    folder = tmp_path_factory.mktemp("parser")
    trees = folder / "toy.txt"
    trees.write_text("".join(line + "\n" for line in TOY * 3), encoding="utf-8")
    paths = [f"data.paths.{split}={trees}" for split in ("train", "dev", "test")]
    run = folder / "run"
    settings = ["task=parse", "data.name=files", *paths, *SMALL, "train.epochs=20"]
    train(load_config(None, [*settings, "model.max_length=12", f"out_dir={run}"]))
    model = folder / "toy.safetensors"
    assert main(["export-parser", str(run / "best.pt"), str(model)]) == 0
    return model


def test_tokenization_is_the_treebank_one():
    assert tokenize('He said "no" (twice).') == [
        "He",
        "said",
        "``",
        "no",
        "''",
        "-LRB-",
        "twice",
        "-RRB-",
        ".",
    ]


def test_a_parser_file_loads_and_parses_in_input_order(toy_parser, tmp_path):
    parser = Parser.load(toy_parser)
    lines = ["the cat sat on the mat .", "a dog ran .", "it saw the dog .", "the dog sat ."]
    sentences = [line.split() for line in lines]
    parsed = parser.parse(sentences)
    # Batches sort by length; the results still come in input order.
    assert [p.words for p in parsed] == sentences
    assert all(p.tree.leaves() == p.words for p in parsed)
    assert [len(p.dependencies.heads) for p in parsed] == [7, 4, 5, 4]
    checkpoint = Parser.load(toy_parser.parent / "run" / "best.pt")
    again = checkpoint.parse(sentences)
    assert [p.tree for p in again] == [p.tree for p in parsed]  # float16 weights agree


def test_the_parse_command_writes_brackets_and_conllu(toy_parser, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("the cat sat on the mat.\na dog ran.\n", encoding="utf-8")
    assert main(["parse", str(text), "--model", str(toy_parser)]) == 0
    captured = capsys.readouterr()
    trees = [Tree.parse(line) for line in captured.out.splitlines()]
    assert [t.leaves()[-1] for t in trees] == [".", "."]  # the tokenizer split the stop
    assert "2 sentences in" in captured.err and "sentences/s" in captured.err
    out = tmp_path / "out.conllu"
    assert (
        main(["parse", str(text), "--model", str(toy_parser), "--format", "conllu", "-o", str(out)])
        == 0
    )
    assert [t.words[0] for t in read_conllu(out)] == ["the", "a"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"the cat\n\nsat\n", "in.txt:2: empty sentence"),
        (b"a b c d e f g h i j k l m\n", "in.txt:1: 13 words, more than the parser's limit of 12"),
        (b"the caf\xe9\n", "in.txt:1:8: not valid UTF-8"),
        (b"", "in.txt: empty input"),
    ],
)
def test_bad_input_names_file_and_line_and_writes_nothing(
    toy_parser, tmp_path, capsys, content, message
):
    text = tmp_path / "in.txt"
    text.write_bytes(content)
    out = tmp_path / "out.txt"
    args = ["parse", str(text), "--model", str(toy_parser), "--tokenized", "-o", str(out)]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob("*.partial"))


def test_missing_and_foreign_model_files_are_clear_errors(tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("a b\n")
    assert main(["parse", str(text), "--model", str(tmp_path / "none.safetensors")]) == 2
    assert "no parser model at" in capsys.readouterr().err
    foreign = tmp_path / "foreign.safetensors"
    foreign.write_bytes(b"not a safetensors file at all")
    assert main(["parse", str(text), "--model", str(foreign)]) == 2
    assert "not a safetensors parser file" in capsys.readouterr().err
    assert main(["parse", str(tmp_path / "absent.txt")]) == 2
    assert "absent.txt" in capsys.readouterr().err


@pytest.mark.slow
def test_parse_reads_standard_input(toy_parser):
    command = [sys.executable, "-m", "treeattn.cli", "parse", "--model", str(toy_parser)]
    done = subprocess.run(
        command, input=b"a dog ran .\n", capture_output=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert Tree.parse(done.stdout.decode()).leaves() == ["a", "dog", "ran", "."]


@pytest.mark.parametrize("attention", ["hierarchical", "distance"])
def test_raw_sentences_reach_models_that_read_trees_through_the_parser(
    toy_parser, tmp_path, capsys, attention
):
    # A classifier of labeled trees, trained a few steps; at prediction it gets raw words,
    # which the parser turns into trees.
    rows = [f"({'pos' if 'cat' in t else 'neg'} {t[3:]}" for t in TOY]
    data = tmp_path / "train.txt"
    data.write_text("".join(row + "\n" for row in rows * 3), encoding="utf-8")
    paths = [f"data.paths.{split}={data}" for split in ("train", "dev")]
    run = tmp_path / attention
    settings = ["data.name=labeled", *paths, f"model.attention={attention}", "model.d_model=16"]
    settings += ["model.n_heads=2", "model.d_ff=32", "train.epochs=2", "train.progress=false"]
    train(load_config(None, [*settings, f"out_dir={run}"]))
    text = tmp_path / "in.txt"
    text.write_text("the cat sat on the mat .\na dog ran .\n")
    args = ["predict", str(run / "best.pt"), str(text), "--parser", str(toy_parser)]
    assert main(args) == 0
    assert all(label in ("pos", "neg") for label in capsys.readouterr().out.split())
    assert len(text.read_text().splitlines()) == 2


def test_a_model_trained_on_a_parsers_trees_refuses_another_parser_unless_told(
    toy_parser, tmp_path, capsys, monkeypatch
):
    # SST of a few toy trees, trained on the toy parser's trees of their words.
    monkeypatch.setenv("TREEATTN_CACHE", str(tmp_path / "cache"))
    sst = tmp_path / "data" / "sst"
    sst.mkdir(parents=True)
    neutral = [re.sub(r"\(\S+", "(2", t) for t in TOY]  # every node labeled
    rows = [f"({3 if 'cat' in t else 1}{t[2:]}" for t in neutral]
    for split in ("train", "dev", "test"):
        (sst / f"{split}.txt").write_text("".join(row + "\n" for row in rows * 2))
    run = tmp_path / "run"
    settings = ["data.name=sst5", f"data.root={tmp_path / 'data'}", "data.trees=parser"]
    settings += [f"data.parser={toy_parser}", "model.attention=distance", "model.d_model=16"]
    settings += ["model.n_heads=2", "model.d_ff=32", "train.epochs=1", "train.progress=false"]
    train(load_config(None, [*settings, f"out_dir={run}"]))
    record = load_checkpoint(run / "best.pt")["task_state"]["trees"]
    assert record == {"source": "parser", **parser_identity(str(toy_parser))}
    text = tmp_path / "in.txt"
    text.write_text("the cat sat on the mat .\n")
    predict = ["predict", str(run / "best.pt"), str(text)]
    assert main(predict) == 0  # the parser the model names
    moved = tmp_path / "moved.safetensors"
    shutil.copy(toy_parser, moved)
    assert main([*predict, "--parser", str(moved)]) == 0  # the same parser, moved
    capsys.readouterr()
    for command in (predict, ["evaluate", str(run / "best.pt"), "test"]):
        assert main([*command, "--parser", "fast"]) == 2
        assert f"trained on trees of the parser {toy_parser}" in capsys.readouterr().err
        assert main([*command, "--trees", "parser", "--parser", "fast"]) == 0  # told
    assert main([*predict, "--trees", "right-branching"]) == 0
    with pytest.raises(SystemExit):  # files come with their sentences, not as a kind
        main([*predict, "--trees", "files"])
    assert "invalid choice: 'files'" in capsys.readouterr().err
    # Trees of a file, one a line of the split, score as the same trees from their source.
    given = tmp_path / "test.trees"
    words = [Tree.parse(row).leaves() for row in rows * 2]
    parsed = TreeSource(PARSER, str(toy_parser)).trees(words, "test", progress=False)
    given.write_text("".join(tree.to_brackets() + "\n" for tree in parsed))
    evaluate = ["evaluate", str(run / "best.pt"), "test", "--json"]
    assert main(evaluate) == 0
    expected = json.loads(capsys.readouterr().out)
    assert main([*evaluate, "--trees", str(given)]) == 0
    assert json.loads(capsys.readouterr().out) == expected
    assert main([*evaluate, "--trees", str(tmp_path / "absent.trees")]) == 2
    assert "or trees from a file" in capsys.readouterr().err
    # A checkpoint written before classify recorded its trees reads those its config names.
    state = load_checkpoint(run / "best.pt")
    del state["task_state"]["trees"]
    torch.save(state, tmp_path / "older.pt")
    assert main(["predict", str(tmp_path / "older.pt"), str(text), "--parser", "fast"]) == 0
    # A model of a task that reads no trees says so.
    assert main(["predict", str(toy_parser.parent / "run" / "best.pt"), "--parser", "fast"]) == 2
    assert "a parse model reads no trees" in capsys.readouterr().err


def test_sst_models_get_parser_trees_shaped_as_sst_trees():
    from treeattn.tasks import make_task

    task = make_task(load_config(None, ["data.name=sst5", "model.attention=hierarchical"]))
    parsed = Tree.parse(
        "(S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (PRP it)))) (. .))"
    )
    # Chains collapsed (NP over "it" too), binarized, every label hidden, as SST's trees.
    assert task.training_tree(parsed).to_brackets() == (
        "(X (X (X the) (X cat)) (X (X (X sat) (X (X on) (X it))) (X .)))"
    )


def test_head_contributions_follow_the_release_normalisation():
    import torch

    from treeattn.analysis.label_heads import head_contributions

    torch.manual_seed(0)
    span = torch.randn(3 * 4)  # 3 heads of d_proj 4: [forward halves; backward halves]
    share = head_contributions(span, 3)
    halves = span.view(2, 3, 2)
    raw = torch.tensor([halves[0, h].sum() + halves[1, h].sum() for h in range(3)])
    scaled = (raw - raw.min()) / (raw.max() - raw.min())
    torch.testing.assert_close(share, torch.softmax(scaled, 0))
    assert share.sum().item() == pytest.approx(1.0)


def test_label_heads_needs_a_parser_without_the_feed_forward_layer(toy_parser, tmp_path, capsys):
    assert main(["label-heads", str(toy_parser), "a dog ran ."]) == 2
    assert "lal_feed_forward=false" in capsys.readouterr().err
    trees = tmp_path / "toy.txt"
    trees.write_text("".join(line + "\n" for line in TOY * 3), encoding="utf-8")
    paths = [f"data.paths.{split}={trees}" for split in ("train", "dev", "test")]
    run = tmp_path / "run"
    settings = ["task=parse", "data.name=files", *paths, *SMALL, "train.epochs=20"]
    train(load_config(None, [*settings, "model.lal_feed_forward=false", f"out_dir={run}"]))
    image = tmp_path / "heads.png"
    assert main(["label-heads", str(run / "best.pt"), "a dog ran .", "-o", str(image)]) == 0
    table = capsys.readouterr().out
    assert "strongest heads" in table and image.stat().st_size > 0


def test_evaluate_reads_parser_files(toy_parser, capsys):
    assert main(["evaluate", str(toy_parser), "test", "--json"]) == 0
    assert '"f1"' in capsys.readouterr().out


@pytest.mark.slow
def test_the_shipped_parser_parses_raw_text_out_of_the_box(tmp_path):
    text = b"The cat sat on the mat.\nDogs bark.\n"
    command = [sys.executable, "-m", "treeattn.cli", "parse"]
    done = subprocess.run(command, input=text, capture_output=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    trees = [Tree.parse(line) for line in done.stdout.decode().splitlines()]
    assert [t.leaves() for t in trees] == [
        ["The", "cat", "sat", "on", "the", "mat", "."],
        ["Dogs", "bark", "."],
    ]
    conllu = tmp_path / "out.conllu"
    done = subprocess.run(
        [*command, "--format", "conllu", "-o", str(conllu)],
        input=text,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert [t.words for t in read_conllu(conllu)][1] == ["Dogs", "bark", "."]
    parsed = Parser.load().parse(["Dogs bark."])
    assert parsed[0].tree.leaves() == ["Dogs", "bark", "."]


def test_brackets_in_the_input_are_escaped_so_the_trees_read_back(toy_parser):
    parser = Parser.load(toy_parser)
    for sentence in (["a", "dog", "(", "ran", ")", ":-)"], "A dog (ran) :-)"):
        tree = parser.parse([sentence])[0].tree
        assert "-LRB-" in tree.leaves() and not any("(" in w or ")" in w for w in tree.leaves())
        assert Tree.parse(tree.to_brackets()) == tree


def test_a_parser_file_of_another_version_is_refused(toy_parser, tmp_path):
    from safetensors.torch import load_file, safe_open, save_file

    with safe_open(str(toy_parser), "pt") as f:
        meta = dict(f.metadata())
    other = tmp_path / "other.safetensors"
    save_file(load_file(str(toy_parser)), str(other), metadata={**meta, "version": "0"})
    with pytest.raises(
        ValueError, match="parser file version '0'; this treeattn reads versions 1 and 2"
    ):
        Parser.load(other)
    untagged = tmp_path / "untagged.safetensors"
    save_file(load_file(str(toy_parser)), str(untagged))
    with pytest.raises(ValueError, match="not a treeattn parser file"):
        Parser.load(untagged)


def test_conllu_gives_back_the_original_text(toy_parser, tmp_path, capsys):
    text = tmp_path / "in.txt"
    line = "A dog (ran) to help@example.com."
    text.write_text(line + "\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    args = ["parse", str(text), "--model", str(toy_parser), "--format", "conllu", "-o", str(out)]
    assert main(args) == 0
    written = out.read_text(encoding="utf-8")
    assert f"# text = {line}\n" in written and "# sent_id = 1\n" in written
    (tree,) = read_conllu(out)
    assert tree.words == ["A", "dog", "(", "ran", ")", "to", "help@example.com", "."]
    assert [k for k, misc in enumerate(tree.misc) if misc == "SpaceAfter=No"] == [2, 3, 6]
    rebuilt = "".join(
        w + ("" if m == "SpaceAfter=No" else " ")
        for w, m in zip(tree.words, tree.misc, strict=True)
    )
    assert rebuilt.rstrip() == line


def test_a_line_of_two_sentences_is_split_on_request_and_else_named(toy_parser, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("a dog ran.\nI came home. Then I slept.\n", encoding="utf-8")
    assert main(["parse", str(text), "--model", str(toy_parser)]) == 0
    captured = capsys.readouterr()
    trees = [Tree.parse(line) for line in captured.out.splitlines()]
    assert trees[1].leaves() == ["I", "came", "home", ".", "Then", "I", "slept", "."]
    assert f"{text}:2: the line seems to hold several sentences" in captured.err
    assert f"{text}:1:" not in captured.err
    args = ["parse", str(text), "--model", str(toy_parser), "--split-sentences"]
    assert main([*args, "--format", "conllu"]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    assert "# sent_id = 2.1\n# text = I came home.\n" in captured.out
    assert "# sent_id = 2.2\n# text = Then I slept.\n" in captured.out
    assert main(args) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3


def test_word_lists_parse_as_the_text_they_tokenize_from(toy_parser):
    # Words are taken as they are: no join and split again, so the trees are the raw text's
    # wherever the tokenizer gives those words.
    parser = Parser.load(toy_parser)
    texts = ["The cat sat on the mat.", "A dog (a big one) ran.", "It wasn't the dog."]
    words = [tokenize(text) for text in texts]
    from_words, from_text = parser.parse(words), parser.parse(texts)
    assert [p.words for p in from_words] == words
    assert [p.tree for p in from_words] == [p.tree for p in from_text]
    with pytest.raises(ValueError, match="input:2: a word is empty or holds white space"):
        parser.parse([["a", "dog"], ["New York", "sleeps"]])
    with pytest.raises(TypeError, match="a str or a list of words"):
        parser.parse([["a", "dog"], [1, 2]])


def test_the_library_warns_or_splits_as_the_command_does(toy_parser):
    import warnings

    parser = Parser.load(toy_parser)
    with pytest.warns(UserWarning, match=r"input:1: the text seems to hold 2 sentences"):
        (parsed,) = parser.parse(["Two sentences here. In one string."])
    assert parsed.words[-1] == "."
    split = parser.parse(["Two sentences here. In one string.", "Dogs bark."], split_sentences=True)
    assert [p.words for p in split] == [
        ["Two", "sentences", "here", "."],
        ["In", "one", "string", "."],
        ["Dogs", "bark", "."],
    ]
    assert len(parser.parse("One here. Two there.", split_sentences=True)) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # word lists are taken as they are: no warning
        parser.parse([["One", "here", ".", "Two", "there", "."]])
    for bad, named in ((None, "not NoneType"), (42, "not int"), (b"Dogs bark.", "not bytes")):
        with pytest.raises(TypeError, match=named):
            parser.parse(bad)
    with pytest.raises(TypeError, match="input:2: a sentence is a str or a list of words, not int"):
        parser.parse(["Dogs bark.", 7])


def test_conllu_writes_multiword_tokens_and_gives_back_the_text(toy_parser, tmp_path):
    from tests.test_tokenize import conllu_text

    lines = ["I don't know, it's gonna rain.", "Can't stop :) slides....they"]
    text = tmp_path / "in.txt"
    text.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "out.conllu"
    args = ["parse", str(text), "--model", str(toy_parser), "--format", "conllu", "-o", str(out)]
    assert main(args) == 0
    written = out.read_text(encoding="utf-8")
    assert "\n2-3\tdon't\t_\t" in written and "\n1-2\tCan't\t_\t" in written
    first, second = read_conllu(out)
    assert [row.form for row in first.multiword_tokens] == ["don't", "it's", "gonna"]
    assert second.words[3:] == [":)", "slides", "....", "they"]
    assert [conllu_text(tree) for tree in (first, second)] == lines


def test_brackets_keep_an_emoticon_whole(toy_parser):
    (parse,) = Parser.load(toy_parser).parse(["Nice :) really"])
    assert parse.tree.leaves() == ["Nice", ":-RRB-", "really"]


def test_raw_text_in_the_ud_cut_reaches_the_parser_escaped(toy_parser):
    parser = Parser.load(toy_parser)
    assert parser.words(["Then :) I left (now)."], scheme="ud") == [
        ["Then", ":-RRB-", "I", "left", "-LRB-", "now", "-RRB-", "."]
    ]


def test_pieces_meet_a_sentence_final_abbreviation_whole():
    from treeattn.parsing.alignment import align_pieces

    text = "We met at 5 p.m."
    pieces = [(0, 2), (3, 6), (7, 9), (10, 11), (12, 13), (13, 14), (14, 15), (15, 16)]
    aligned = align_pieces([text], [pieces])
    assert aligned.words == [["We", "met", "at", "5", "p.m."]]
    assert aligned.word_of_piece == [[0, 1, 2, 3, 4, 4, 4, 4]]
