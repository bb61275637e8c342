"""The real treebanks: SST and the PTB WSJ sample read completely, with the published counts.

These tests skip when the evaluation data is absent. Each file is read once per session.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from treeattn.data.ptb import PTB_SAMPLE_SPLITS, load_ptb_sample, ptb_sample_files
from treeattn.data.sst import (
    IGNORE_LABEL,
    SentimentExample,
    binary_label,
    load_sst,
    read_sst_file,
)
from treeattn.errors import FormatError
from treeattn.trees import (
    TreebankEntry,
    binarize,
    clean_ptb,
    format_tree,
    syntactic_distances,
    tree_from_distances,
    unbinarize,
)

SST_COUNTS = {"train": 8544, "dev": 1101, "test": 2210}
SST2_COUNTS = {"train": 6920, "dev": 872, "test": 1821}
PTB_COUNTS = {"train": 3068, "dev": 433, "test": 413}


@cache
def sst(root: Path, split: str, fine_grained: bool = True) -> list[SentimentExample]:
    return load_sst(split, root, fine_grained)


@cache
def ptb(root: Path, split: str | None = None) -> list[TreebankEntry]:
    return load_ptb_sample(split, root)


# ---------------------------------------------------------------------- SST


@pytest.mark.slow
@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_sst_counts_and_exact_lines(shared_data: Path, split: str) -> None:
    examples = sst(shared_data, split)
    assert len(examples) == SST_COUNTS[split]
    text = (shared_data / "sst" / f"{split}.txt").read_text(encoding="utf-8")
    lines = text.removesuffix("\n").split("\n")
    assert [ex.tree.to_brackets() for ex in examples] == lines
    assert [ex.line for ex in examples] == list(range(1, len(lines) + 1))
    for ex in examples:
        assert ex.tokens == ex.tree.leaves()
        assert ex.label == int(ex.tree.label)
        assert len(ex.phrase_labels) == len(list(ex.tree.subtrees()))
        assert ex.phrase_labels[0] == (0, len(ex.tokens), ex.label)
        assert {label for _, _, label in ex.phrase_labels} <= {0, 1, 2, 3, 4}


@pytest.mark.slow
@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_sst2_counts_and_labels(shared_data: Path, split: str) -> None:
    fine = sst(shared_data, split)
    binary = sst(shared_data, split, fine_grained=False)
    assert len(binary) == SST2_COUNTS[split]
    kept = [ex for ex in fine if ex.label != 2]
    assert [ex.tokens for ex in binary] == [ex.tokens for ex in kept]
    for two, five in zip(binary, kept, strict=True):
        assert two.label == (1 if five.label > 2 else 0)
        assert [label for _, _, label in two.phrase_labels] == [
            binary_label(label) for _, _, label in five.phrase_labels
        ]
    neutral = sum(label == IGNORE_LABEL for ex in binary for _, _, label in ex.phrase_labels)
    assert neutral > 0


def test_sst_trees_are_binary_and_distances_round_trip(shared_data: Path) -> None:
    for ex in sst(shared_data, "dev"):
        tree = ex.tree
        assert all(len(node.children) in (1, 2) for node in tree.subtrees())
        rebuilt = tree_from_distances(ex.tokens, syntactic_distances(tree), tags=tree.tags())
        assert rebuilt.unlabeled_spans() == tree.unlabeled_spans()


def test_sst_bad_split(shared_data: Path) -> None:
    with pytest.raises(ValueError, match="unknown SST split"):
        load_sst("validation", shared_data)


def test_sst_file_with_a_bad_label(tmp_path: Path) -> None:
    # Needs no data: a small file in the SST format.
    path = tmp_path / "mini.txt"
    path.write_text("(3 (2 It) (4 (4 works) (2 .)))\n(2 (2 So) (2 so))\n(1 (2 Not) (X bad))\n")
    with pytest.raises(FormatError, match=r"mini\.txt:3:13: sentiment label 'X' is not 0-4"):
        read_sst_file(path)
    path.write_text("(3 (2 It) (4 (4 works) (2 .)))\n(2 (2 So) (2 so))\n(7 (2 Not) (0 bad))\n")
    with pytest.raises(FormatError, match=r"mini\.txt:3:2: sentiment label '7'"):
        read_sst_file(path)
    path.write_text("(3 (2 It) (4 (4 works) (2 .)))\n(2 (2 So) (2 so))\n(1 (2 Not) (0 (-1 bad)))\n")
    with pytest.raises(FormatError, match=r"mini\.txt:3:16: sentiment label '-1'"):
        read_sst_file(path)
    path.write_text("(3 (2 It) (4 (4 works) (2 .)))\n(2 (2 So) (2 so))\n(0 (2 Not) (0 bad))\n")
    five = read_sst_file(path)
    assert [(ex.label, ex.line) for ex in five] == [(3, 1), (2, 2), (0, 3)]
    assert five[0].phrase_labels == [(0, 3, 3), (0, 1, 2), (1, 3, 4), (1, 2, 4), (2, 3, 2)]
    two = read_sst_file(path, fine_grained=False)
    assert [(ex.label, ex.line) for ex in two] == [(1, 1), (0, 3)]
    assert two[0].phrase_labels == [(0, 3, 1), (0, 1, -1), (1, 3, 1), (1, 2, 1), (2, 3, -1)]


def test_sst_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("(3 (2 It) (3 works))\n(2 (2 caf\u00e9) (2 .))\n".encode("latin-1"))
    with pytest.raises(FormatError, match=r"latin1\.txt:2:10: not valid UTF-8"):
        read_sst_file(path)


# ---------------------------------------------------------------------- PTB sample


def test_ptb_sample_errors_name_the_file_and_line(tmp_path: Path) -> None:
    # Needs no data: a small sample folder.
    folder = tmp_path / "ptb-sample"
    folder.mkdir()
    good = "( (S (NP-SBJ (NNP John) )\n    (VP (VBD left) )))\n"
    (folder / "wsj_0001.mrg").write_text(good)
    (folder / "wsj_0002.mrg").write_bytes(
        ("\n" + good).replace("John", "Jos\u00e9").encode("cp1252")
    )
    with pytest.raises(FormatError, match=r"wsj_0002\.mrg:2:22: not valid UTF-8"):
        load_ptb_sample(root=tmp_path)
    # A tree whose last ")" is missing does not swallow the next one.
    (folder / "wsj_0002.mrg").write_text(good.replace(")))", "))") + good)
    with pytest.raises(FormatError, match=r"wsj_0002\.mrg:3:1: .*line 1, column 1 is not closed"):
        load_ptb_sample(root=tmp_path)
    (folder / "wsj_0002.mrg").write_text(good + good)
    assert len(load_ptb_sample(root=tmp_path)) == 3


@pytest.mark.slow
def test_ptb_counts_by_split(shared_data: Path) -> None:
    everything = ptb(shared_data)
    assert len(everything) == 3914
    by_split = {split: ptb(shared_data, split) for split in PTB_SAMPLE_SPLITS}
    assert {split: len(entries) for split, entries in by_split.items()} == PTB_COUNTS
    assert [e.tree for split in ("train", "dev", "test") for e in by_split[split]] == [
        e.tree for e in everything
    ]
    assert len(ptb_sample_files(root=shared_data)) == 199
    assert [p.name for p in ptb_sample_files("dev", shared_data)][::29] == [
        "wsj_0140.mrg",
        "wsj_0169.mrg",
    ]
    with pytest.raises(ValueError, match="unknown PTB split"):
        load_ptb_sample("valid", shared_data)


def test_ptb_leaves_and_positions(shared_data: Path) -> None:
    everything = ptb(shared_data)
    tags = Counter(tag for e in everything for _, tag in e.tree.pos())
    assert sum(tags.values()) == 100_676  # leaves, as the data's SOURCE.md counts them
    assert tags["-NONE-"] == 6_592
    assert all(e.tree.label for e in everything)  # the outer bracket was removed
    lines: dict[str, list[str]] = {}
    for e in everything:
        if e.source not in lines:
            lines[e.source] = Path(e.source).read_text().splitlines()
        # The recorded line opens the tree: "( (S" or "((S".
        assert lines[e.source][e.line - 1].startswith("(")
    assert (Path(everything[0].source).name, everything[0].line) == ("wsj_0001.mrg", 2)


def test_ptb_cleanup_keeps_the_overt_words(shared_data: Path) -> None:
    for entry in ptb(shared_data):
        cleaned = clean_ptb(entry.tree)
        overt = [word for word, tag in entry.tree.pos() if tag != "-NONE-"]
        assert cleaned.leaves() == overt, (entry.source, entry.line)
        assert all(
            "-" not in node.label[1:] or node.label.startswith("-") for node in cleaned.subtrees()
        ), (entry.source, entry.line)
    cleaned_split = load_ptb_sample("test", shared_data, clean=True)
    assert [e.tree for e in cleaned_split] == [clean_ptb(e.tree) for e in ptb(shared_data, "test")]


def test_ptb_binarize_round_trip_and_drawing(shared_data: Path) -> None:
    entries = ptb(shared_data, "dev")
    for entry in entries:
        for direction in ("left", "right"):
            assert unbinarize(binarize(entry.tree, direction)) == entry.tree
    longest = max(entries, key=lambda e: len(e.tree.leaves())).tree
    drawing = format_tree(longest)
    assert len(longest.leaves()) >= 60
    assert max(len(line) for line in drawing.splitlines()) <= 80
    assert clean_ptb(longest) == clean_ptb(type(longest).parse(drawing))


def test_an_empty_ptb_folder_is_an_error_not_an_empty_treebank(tmp_path):
    from treeattn.data.ptb import load_ptb_sample

    (tmp_path / "ptb-sample").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no wsj_NNNN.mrg files"):
        load_ptb_sample(root=tmp_path)
