"""UD EWT, the PTB sample as dependencies, and Multi30k, on the real data (skipped without it)."""

import conllu
import pytest

from treeattn.data.multi30k import load_multi30k, read_parallel
from treeattn.data.ud import load_ud, ud_path
from treeattn.errors import FormatError
from treeattn.trees.dependency import format_conllu, parse_conllu, read_conllu, write_conllu
from treeattn.trees.head_rules import to_dependency
from treeattn.trees.tree import iter_parse

BASIC = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel")


@pytest.mark.parametrize(
    ("split", "sentences", "words"),
    [("train", 12544, 204577), ("dev", 2001, 25147), ("test", 2077, 25094)],
)
def test_ud_counts(shared_data, split, sentences, words):
    trees = load_ud(split, root=shared_data)
    assert len(trees) == sentences
    assert sum(tree.n for tree in trees) == words
    assert all(len(tree.roots) == 1 for tree in trees)


@pytest.mark.slow
def test_ud_dev_round_trip(shared_data, tmp_path):
    path = ud_path("dev", root=shared_data)
    trees = read_conllu(path)
    out = tmp_path / "dev.conllu"
    write_conllu(out, trees)
    assert read_conllu(out) == trees
    original = path.read_text(encoding="utf-8")
    assert out.read_text(encoding="utf-8") == original
    # An independent reader sees the same basic tree in every sentence.
    for before, after in zip(
        conllu.parse(original), conllu.parse(format_conllu(trees)), strict=True
    ):
        assert before.metadata == after.metadata
        assert [[t[f] for f in BASIC] for t in before] == [[t[f] for f in BASIC] for t in after]
    first = trees[0]
    assert first.metadata["sent_id"].endswith("-0001")
    assert first.metadata["text"] == "From the AP comes this story :"
    assert first.words[first.root - 1] == "comes"
    assert any(tree.multiword_tokens for tree in trees)
    assert any(tree.empty_nodes for tree in trees)


def test_ptb_sample_converts_to_projective_trees(shared_data):
    files = sorted((shared_data / "ptb-sample").glob("wsj_*.mrg"))
    assert len(files) == 199
    count = words = 0
    for path in files:
        for tree in iter_parse(path.read_text(encoding="utf-8"), str(path)):
            assert tree.label == ""  # the outer unlabeled bracket
            dep = to_dependency(tree, drop_empty=True, source=str(path))
            dep.validate(single_root=True, source=str(path))
            assert dep.is_projective()
            assert dep.words == [w for w, t in tree.pos() if t != "-NONE-"]
            count += 1
            words += dep.n
    assert (count, words) == (3914, 94084)
    # The converted trees survive CoNLL-U writing and reading.
    assert parse_conllu(dep.to_conllu()) == [dep]


@pytest.mark.parametrize(
    ("split", "pairs"),
    [("train", 29000), ("val", 1014), ("test_2016_flickr", 1000), ("test_2017_flickr", 1000)],
)
def test_multi30k_counts(shared_data, split, pairs):
    data = load_multi30k(split, root=shared_data)
    assert len(data) == pairs
    assert all(src and tgt for src, tgt in data)
    assert len(load_multi30k(split, src="fr", tgt="en", root=shared_data)) == pairs


def test_multi30k_keeps_upstream_lines(shared_data):
    data = load_multi30k("train", root=shared_data)
    assert data[16509][1] == "@@" and data[16663][1] == "@@"
    assert data[0][0].startswith("Two young, White males are outside near many bushes")


# ---------------------------------------------------------------------- no data needed


def test_parallel_files_of_different_length(tmp_path):
    src, tgt = tmp_path / "a.en", tmp_path / "a.de"
    src.write_text("one\ntwo\nthree\n", encoding="utf-8")
    tgt.write_text("eins\nzwei\n", encoding="utf-8")
    with pytest.raises(FormatError) as caught:
        read_parallel(src, tgt)
    assert str(src) in str(caught.value) and str(tgt) in str(caught.value)
    assert (caught.value.source, caught.value.line) == (str(src), 3)


def test_parallel_empty_line(tmp_path):
    src, tgt = tmp_path / "a.en", tmp_path / "a.de"
    src.write_text("one\ntwo\n", encoding="utf-8")
    tgt.write_text("eins\n \n", encoding="utf-8")
    with pytest.raises(FormatError, match="empty line") as caught:
        read_parallel(src, tgt)
    assert (caught.value.source, caught.value.line) == (str(tgt), 2)


def test_parallel_file_that_is_not_utf8(tmp_path):
    src, tgt = tmp_path / "a.en", tmp_path / "a.de"
    src.write_text("one\ntwo\n", encoding="utf-8")
    tgt.write_bytes("eins\nzw\u00f6\n".encode("latin-1"))
    with pytest.raises(FormatError, match=r"a\.de:2:3: not valid UTF-8") as caught:
        read_parallel(src, tgt)
    assert (caught.value.source, caught.value.line, caught.value.column) == (str(tgt), 2, 3)


def test_data_paths(tmp_path, monkeypatch):
    folder = tmp_path / "multi30k"
    folder.mkdir()
    (folder / "val.en").write_text("a dog\n", encoding="utf-8")
    (folder / "val.de").write_text("ein Hund\n", encoding="utf-8")
    # The data folder, or the multi30k folder itself.
    assert load_multi30k("val", root=tmp_path) == [("a dog", "ein Hund")]
    assert load_multi30k("val", root=folder) == [("a dog", "ein Hund")]
    monkeypatch.setenv("TREEATTN_DATA", str(tmp_path))
    assert load_multi30k("val") == [("a dog", "ein Hund")]
    with pytest.raises(FileNotFoundError, match="test_2016_flickr.en"):
        load_multi30k("test_2016_flickr")
    with pytest.raises(FileNotFoundError, match="en_ewt-ud-dev.conllu"):
        ud_path("dev")
    monkeypatch.setenv("TREEATTN_DATA", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="TREEATTN_DATA"):
        ud_path("dev")


def test_loaders_reject_unknown_names(tmp_path):
    with pytest.raises(ValueError, match="split"):
        load_ud("validation", root=tmp_path)
    with pytest.raises(ValueError, match="language"):
        load_multi30k("train", tgt="cs", root=tmp_path)
    with pytest.raises(FileNotFoundError):
        load_ud("dev", root=tmp_path)
