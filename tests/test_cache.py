"""`treeattn cache`: the files the tree source keeps, the unpacked weights and the generated
McCoy training sets, their size, and clearing them."""

from __future__ import annotations

import hashlib
import re

import pytest
import torch

from treeattn.cli import main
from treeattn.cli.cache import SIZE_HELP
from treeattn.parsing.tree_source import PARSER, RIGHT_BRANCHING, TreeSource
from treeattn.trees.tokenize import tokenize


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("TREEATTN_CACHE", str(folder))
    return folder


def test_cache_lists_what_the_tree_source_keeps_and_clear_removes_only_that(cache, capsys):
    source = TreeSource(PARSER, parser="fast")
    sentences = [["Dogs", "bark", "."], ["The", "cat", "sat", "."]]
    trees = source.trees(sentences, "input", progress=False)
    (written,) = (cache / "trees").iterdir()
    (cache / "notes.txt").write_text("not ours\n")  # beside the trees: left alone
    assert main(["cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    size = written.stat().st_size
    assert lines[0] == str(cache / "trees")
    assert re.fullmatch(rf"  {written.name} +{size} B  2 trees", lines[1])
    assert lines[2:] == [
        f"1 file, {size} B",
        f"{cache / 'weights'} (absent: nothing cached)",
        "0 files, 0 B",
        f"{cache / 'mccoy'} (absent: nothing cached)",
        "0 files, 0 B",
    ]
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{cache / 'trees'}: removed 1 file, {size} B"
    assert not (cache / "trees").exists() and (cache / "notes.txt").is_file()
    assert main(["cache", "info"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "0 files, 0 B"
    # Cleared trees are parsed again, the same.
    assert source.trees(sentences, "input", progress=False) == trees
    assert (cache / "trees" / written.name).read_text() == "".join(
        t.to_brackets() + "\n" for t in trees
    )


def test_an_empty_or_absent_cache_is_reported_not_an_error(cache, capsys):
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out == (
        f"{cache / 'trees'}: removed 0 files, 0 B\n{cache / 'weights'}: removed 0 files, 0 B\n"
        f"{cache / 'mccoy'}: removed 0 files, 0 B\n"
    )
    assert main(["cache"]) == 0
    assert capsys.readouterr().out.startswith(f"{cache / 'trees'} (absent: nothing cached)\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["cache", "purge"])
    assert exit_info.value.code == 2 and "choose from 'info', 'clear'" in capsys.readouterr().err


def test_the_documented_size_of_a_cached_split_holds(cache, shared_data):
    lines = (shared_data / "multi30k" / "val.en").read_text(encoding="utf-8").splitlines()
    sentences = [tokenize(line) for line in lines[:40]]
    TreeSource(PARSER, parser="fast").trees(sentences, "val", progress=False)
    (written,) = (cache / "trees").iterdir()
    per_word = written.stat().st_size / sum(map(len, sentences))
    per_text = written.stat().st_size / sum(len(line.encode()) + 1 for line in lines[:40])
    assert "about 15 bytes a word, three times its text" in SIZE_HELP
    assert 12 < per_word < 18 and 2.5 < per_text < 3.5, (per_word, per_text)


def test_unpacked_weights_are_kept_checked_listed_and_cleared(cache, tmp_path, capsys):
    import zipfile

    from tests.test_backbone import write_tiny_bert
    from treeattn.models.weights import FILES, read_archive

    (tmp_path / "tiny").mkdir()
    folder = write_tiny_bert(tmp_path / "tiny")
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for name in FILES:
            z.write(folder / name, name)
    sha256 = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    first = read_archive(archive, sha256)
    (kept,) = (cache / "weights").iterdir()
    assert kept.name.startswith(sha256)
    assert kept.read_bytes() == (folder / "model.safetensors").read_bytes()
    kept.write_bytes(b"damaged")  # a kept copy whose hash is wrong is unpacked again
    again = read_archive(archive, sha256)
    assert all(torch.equal(first.state[k], again.state[k]) for k in first.state)
    assert kept.read_bytes() == (folder / "model.safetensors").read_bytes()
    assert main(["cache"]) == 0
    assert f"  {kept.name}" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "weights: removed 1 file" in capsys.readouterr().out and not kept.exists()
    read_archive(archive, None)  # unpinned weights are not kept
    assert not (cache / "weights").exists()


def test_cached_trees_of_words_with_brackets_read_back(cache):
    # The parser writes "(" as -LRB-: the cached tree is checked against that.
    source = TreeSource(PARSER, parser="fast")
    sentences = [["(", "Dogs", "bark", ")", "."]]
    (tree,) = source.trees(sentences, "input", progress=False)
    assert tree.leaves() == ["-LRB-", "Dogs", "bark", "-RRB-", "."]
    assert source.trees(sentences, "input", progress=False) == [tree]


def test_right_branching_trees_write_bracket_words_as_a_parsers_trees_do():
    # Every tree source gives the escaped words as leaves, so pieces and caches agree.
    sentences = [["(", "Dogs", "bark", ")", "."]]
    (tree,) = TreeSource(RIGHT_BRANCHING).trees(sentences, "input", progress=False)
    assert tree.leaves() == ["-LRB-", "Dogs", "bark", "-RRB-", "."]


def test_generated_training_sets_are_listed_and_cleared(cache, capsys):
    folder = cache / "mccoy"
    folder.mkdir(parents=True)
    (folder / "question-train-10-seed0-shared-0123456789ab.tsv").write_text("a . decl\ta .\n")
    assert main(["cache"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == [
        str(folder),
        "  question-train-10-seed0-shared-0123456789ab.tsv       13 B",
        "1 file, 13 B",
    ]
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{folder}: removed 1 file, 13 B"
    assert not folder.exists()
