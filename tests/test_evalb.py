"""EVALB-compatible bracket scoring, checked on hand-counted examples.

Bracket lists in comments are (label, start, end) over the words left after deletion.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from treeattn.errors import FormatError
from treeattn.metrics.evalb import COLLINS, evalb, evalb_files, format_evalb
from treeattn.trees.tree import Tree, iter_parse

T = Tree.parse

# the cat sat on the mat
# gold brackets: S(0,6) NP(0,2) VP(2,6) PP(3,6) NP(4,6)  -> 5
GOLD = "(S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))))"


def score(gold: str, test: str, params=COLLINS):
    result = evalb([T(gold)], [T(test)], params)
    return result.sentences[0], result.total


def test_identical_trees_score_100():
    row, total = score(GOLD, GOLD)
    assert (row.gold_brackets, row.test_brackets, row.matched) == (5, 5, 5)
    assert row.complete_match and row.crossing == 0
    assert total.recall == total.precision == total.fmeasure == 100.0
    assert total.complete_match == total.no_crossing == total.tagging_accuracy == 100.0


def test_one_wrong_label():
    # PP(3,6) labeled ADJP in test: 4 of 5 match -> R = P = F = 80
    test = "(S (NP (DT the) (NN cat)) (VP (VBD sat) (ADJP (IN on) (NP (DT the) (NN mat)))))"
    row, total = score(GOLD, test)
    assert (row.gold_brackets, row.test_brackets, row.matched) == (5, 5, 4)
    assert total.recall == pytest.approx(80.0)
    assert total.precision == pytest.approx(80.0)
    assert total.fmeasure == pytest.approx(80.0)
    assert total.complete_match == 0.0


def test_one_missing_bracket():
    # test lacks PP(3,6): 4 test brackets, all matched -> R = 80, P = 100,
    # F = 2 * 80 * 100 / 180 = 88.888...
    test = "(S (NP (DT the) (NN cat)) (VP (VBD sat) (IN on) (NP (DT the) (NN mat))))"
    _, total = score(GOLD, test)
    assert total.recall == pytest.approx(80.0)
    assert total.precision == pytest.approx(100.0)
    assert total.fmeasure == pytest.approx(800 / 9)


def test_crossing_bracket():
    # test: S(0,6) NP(0,2) VP(2,4) NP(4,6); matched S, NP(0,2), NP(4,6) = 3
    # R = 3/5 = 60, P = 3/4 = 75, F = 2*60*75/135 = 66.67
    # VP(2,4) crosses gold PP(3,6) (2 < 3 < 4 < 6): 1 crossing
    test = "(S (NP (DT the) (NN cat)) (VP (VBD sat) (IN on)) (NP (DT the) (NN mat)))"
    row, total = score(GOLD, test)
    assert (row.gold_brackets, row.test_brackets, row.matched, row.crossing) == (5, 4, 3, 1)
    assert total.fmeasure == pytest.approx(200 / 3)
    assert total.average_crossing == 1.0 and total.no_crossing == 0.0


def test_crossing_counts_test_brackets_either_side():
    # gold S(0,3) NP(0,2); test X(1,3) starts inside NP and ends after it: 1 crossing.
    row, _ = score("(S (NP (DT the) (NN cat)) (VBD sat))", "(S (DT the) (X (NN cat) (VBD sat)))")
    assert (row.matched, row.crossing) == (1, 1)


def test_equivalent_labels_apply_to_tags_too():
    # EVALB compares POS tags with the same label test, EQ_LABEL included.
    gold, test = "(S (NP (NN cats)) (VP (VBP sit)))", "(S (NP (NNS cats)) (VP (VBP sit)))"
    assert score(gold, test)[0].correct_tags == 1
    merged = dataclasses.replace(COLLINS, equivalent_labels=(("NN", "NNS"),))
    assert score(gold, test, merged)[0].correct_tags == 2


def test_final_period_inside_a_bracket_still_matches():
    # Words after deleting ".": the cat sat. Gold VP(2,3); test VP covers "sat ." which is
    # also VP(2,3) once the period is gone.
    gold = "(S (NP (DT the) (NN cat)) (VP (VBD sat)) (. .))"
    test = "(S (NP (DT the) (NN cat)) (VP (VBD sat) (. .)))"
    row, total = score(gold, test)
    assert (row.gold_brackets, row.test_brackets, row.matched) == (3, 3, 3)
    assert total.fmeasure == 100.0


def test_punctuation_is_not_a_scored_word_but_counts_in_length():
    # EVALB (README section 7.4): only DELETE_LABEL_FOR_LENGTH (-NONE-) is left out of the
    # sentence length, so "the cat , sat ." has length 5; tags are scored on the 3 words
    # left after deleting "," and "." (the Words column).
    gold = "(S (NP (DT the) (NN cat)) (, ,) (VP (VBD sat)) (. .))"
    test = "(S (NP (DT the) (NN cat) (, ,)) (VP (VBZ sat) (. .)))"
    row, total = score(gold, test)
    assert row.length == 5
    assert row.words == 3 and row.correct_tags == 2  # VBD vs VBZ
    assert total.tagging_accuracy == pytest.approx(200 / 3)
    assert total.fmeasure == 100.0


def test_length_cutoff_block_uses_evalb_length():
    # 40 words plus a final period: length 41, so outside the len<=40 block.
    words = " ".join(f"(NN w{i})" for i in range(40))
    long = f"(S (NP {words}) (. .))"
    short = "(S (NP (NN a) (NN b)) (. .))"
    result = evalb([T(long), T(short)], [T(long), T(short)])
    assert [row.length for row in result.sentences] == [41, 3]
    assert result.total.sentences == 2
    assert result.cutoff.sentences == 1
    assert result.cutoff.words == 2


def test_advp_and_prt_are_the_same_label():
    # S(0,3) NP(0,1) VP(1,3) PRT(2,3): ADVP(2,3) in test matches PRT; tags RP vs RB differ.
    gold = "(S (NP (PRP he)) (VP (VBD gave) (PRT (RP up))))"
    test = "(S (NP (PRP he)) (VP (VBD gave) (ADVP (RB up))))"
    row, total = score(gold, test)
    assert row.matched == 4 and total.fmeasure == 100.0
    assert total.tagging_accuracy == pytest.approx(200 / 3)
    # ADJP is not equivalent: 3 of 4.
    row, _ = score(gold, test.replace("ADVP", "ADJP"))
    assert row.matched == 3
    # Without the equivalence the ADVP bracket no longer matches.
    plain = dataclasses.replace(COLLINS, equivalent_labels=())
    row, _ = score(gold, test, plain)
    assert row.matched == 3


def test_top_and_traces_are_deleted_and_the_outer_bracket_counts():
    # Gold words: John tried *-1 to leave .  -> kept: John tried to leave (4 words).
    # Gold brackets: NP-SBJ (covers only a trace) vanishes; the outer "" stays, as the
    # official program counts it: "" (0,4) S(0,4) NP(0,1) VP(1,4) S(2,4) VP(2,4) VP(3,4) -> 7
    # Test has TOP instead of the outer bracket and no trace: 6 brackets, all matched.
    gold = (
        "( (S (NP-SBJ-1 (NNP John)) (VP (VBD tried) (S (NP-SBJ (-NONE- *-1)) "
        "(VP (TO to) (VP (VB leave))))) (. .)) )"
    )
    test = "(TOP (S (NP (NNP John)) (VP (VBD tried) (S (VP (TO to) (VP (VB leave))))) (. .)))"
    row, total = score(gold, test)
    assert (row.gold_brackets, row.test_brackets, row.matched) == (7, 6, 6)
    assert row.length == 5  # traces do not count, the period does
    assert row.words == 4
    # Were TOP kept, it would be a seventh, unmatched test bracket.
    keep_top = dataclasses.replace(COLLINS, delete_labels=COLLINS.delete_labels - {"TOP"})
    row, _ = score(gold, test, keep_top)
    assert (row.test_brackets, row.matched) == (7, 6)


def test_function_tags_are_ignored():
    gold = "(S-TPC (NP-SBJ=2 (PRP it)) (VP-1 (VBZ works) (ADVP-TMP (RB now))))"
    test = "(S (NP (PRP it)) (VP (VBZ works) (ADVP (RB now))))"
    row, _ = score(gold, test)
    assert row.matched == row.gold_brackets == row.test_brackets == 4
    # The base label still has to agree.
    row, _ = score(gold, test.replace("(NP ", "(PP "))
    assert row.matched == 3


def test_duplicate_brackets_are_a_multiset():
    # Gold: S(0,3) NP(0,2) NP(0,2) VP(2,3); test has one NP(0,2): matched 3.
    gold = "(S (NP (NP (DT the) (NN cat))) (VP (VBD sat)))"
    test = "(S (NP (DT the) (NN cat)) (VP (VBD sat)))"
    row, total = score(gold, test)
    assert (row.gold_brackets, row.test_brackets, row.matched) == (4, 3, 3)
    assert total.recall == pytest.approx(75.0) and total.precision == 100.0
    row, total = score(test, gold)  # and the other way round
    assert total.recall == 100.0 and total.precision == pytest.approx(75.0)


def test_unlabeled_mode_ignores_labels():
    test = "(S (NP (DT the) (NN cat)) (VP (VBD sat) (ADJP (IN on) (NP (DT the) (NN mat)))))"
    unlabeled = dataclasses.replace(COLLINS, labeled=False)
    row, _ = score(GOLD, test, unlabeled)
    assert row.matched == 5


def test_missing_parse_is_a_skipped_sentence():
    result = evalb([T(GOLD), T(GOLD)], [None, T(GOLD)])
    assert result.sentences[0].status == 2
    assert result.total.sentences == 2
    assert result.total.skip_sentences == 1 and result.total.valid_sentences == 1
    assert result.total.gold_brackets == 5 and result.total.fmeasure == 100.0


def test_mismatched_words_are_error_sentences_or_with_strict_errors():
    test = GOLD.replace("(NN mat)", "(NN hat)")
    result = evalb([T(GOLD), T(GOLD)], [T(test), T(GOLD)])
    assert (result.total.error_sentences, result.total.valid_sentences) == (1, 1)
    assert result.total.fmeasure == 100.0  # the error sentence is left out
    assert "sentence 1: words differ" in result.problems[0]
    with pytest.raises(FormatError, match="sentence 1.*'mat'.*'hat'"):
        evalb([T(GOLD)], [T(test)], strict=True)
    # Words count from 1, as sentences do: "the" is word 1.
    with pytest.raises(FormatError, match="word 1 is 'the' in gold but 'a' in test"):
        evalb([T(GOLD)], [T(GOLD.replace("(DT the) (NN cat)", "(DT a) (NN cat)"))], strict=True)
    with pytest.raises(FormatError, match="word 6 is 'mat'"):
        evalb([T(GOLD)], [T(test)], strict=True)
    # A period tagged as a noun survives deletion in the test tree only.
    with pytest.raises(FormatError, match="gold has 2 words, test has 3"):
        evalb(
            [T("(S (NP (NN cats)) (VP (VBP sit)) (. .))")],
            [T("(S (NP (NN cats)) (VP (VBP sit)) (NN .))")],
            strict=True,
        )
    with pytest.raises(FormatError, match="1 gold trees"):
        evalb([T(GOLD)], [T(GOLD), T(GOLD)], strict=True)
    paired = evalb([T(GOLD)], [T(GOLD), T(GOLD)])
    assert paired.total.sentences == 1 and "the first 1 pairs are scored" in paired.problems[0]


def test_format_matches_evalb_layout():
    test = "(S (NP (DT the) (NN cat)) (VP (VBD sat) (ADJP (IN on) (NP (DT the) (NN mat)))))"
    text = format_evalb(evalb([T(GOLD)], [T(test)]))
    lines = text.splitlines()
    assert " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy" in lines
    assert "   1    6    0   80.00  80.00     4      5    5      0      6     6   100.00" in lines
    assert "                 80.00  80.00      4     5     5      0      6     6   100.00" in lines
    for expected in (
        "=== Summary ===",
        "-- All --",
        "-- len<=40 --",
        "Number of sentence        =      1",
        "Bracketing Recall         =  80.00",
        "Bracketing Precision      =  80.00",
        "Bracketing FMeasure       =  80.00",
        "Complete match            =   0.00",
        "Average crossing          =   0.00",
        "No crossing               = 100.00",
        "Tagging accuracy          = 100.00",
    ):
        assert expected in lines
    # The summary appears twice: all sentences, then the short ones.
    assert text.count("Bracketing FMeasure") == 2
    summary = format_evalb(evalb([T(GOLD)], [T(GOLD)]), per_sentence=False)
    assert summary.startswith("=== Summary ===") and "Recal  Prec." not in summary


def test_evalb_files_reads_multiline_trees_and_names_the_line(tmp_path: Path):
    gold = tmp_path / "gold.mrg"
    gold.write_text(
        "( (S (NP (DT the) (NN cat))\n     (VP (VBD sat)) (. .)) )\n"
        "( (S (NP (PRP it))\n     (VP (VBD rained)) (. .)) )\n",
        encoding="utf-8",
    )
    test = tmp_path / "test.txt"
    test.write_text(
        "( (S (NP (DT the) (NN cat)) (VP (VBD sat)) (. .)) )\n"
        "( (S (NP (PRP it)) (VP (VBD rained)) (. .)) )\n",
        encoding="utf-8",
    )
    text, result = evalb_files(gold, test)
    assert result.total.fmeasure == 100.0 and result.total.sentences == 2
    assert "Bracketing FMeasure       = 100.00" in text
    # Without the outer brackets the test side has 6 of the gold side's 8 (as EVALB).
    test.write_text(
        "(S (NP (DT the) (NN cat)) (VP (VBD sat)) (. .))\n"
        "(S (NP (PRP it)) (VP (VBD rained)) (. .))\n",
        encoding="utf-8",
    )
    result = evalb_files(gold, test).result
    assert (result.total.matched, result.total.gold_brackets) == (6, 8)

    test.write_text(
        "(S (NP (DT the) (NN cat)) (VP (VBD sat)) (. .))\n"
        "(S (NP (PRP it)) (VP (VBD snowed)) (. .))\n",
        encoding="utf-8",
    )
    with pytest.raises(FormatError) as caught:
        evalb_files(gold, test, strict=True)
    assert caught.value.source == str(test) and caught.value.line == 2
    assert f"{gold}:3" in str(caught.value)  # where the gold tree starts


def test_evalb_files_reject_a_tree_left_open_and_bad_bytes(tmp_path: Path):
    gold = tmp_path / "gold.txt"
    gold.write_text(GOLD + "\n" + GOLD + "\n", encoding="utf-8")
    test = tmp_path / "test.txt"
    # The first tree lacks its last ")": without the layout rule both lines were one tree.
    test.write_text(GOLD[:-1] + "\n" + GOLD + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"test\.txt:2:1: .*line 1, column 1 is not closed"):
        evalb_files(gold, test)
    test.write_bytes((GOLD + "\n" + GOLD.replace("cat", "ch\u00e2t") + "\n").encode("latin-1"))
    with pytest.raises(FormatError, match=r"test\.txt:2:\d+: not valid UTF-8"):
        evalb_files(gold, test)


def test_ptb_test_split_against_itself(shared_data: Path):
    root = shared_data / "ptb-sample"
    files = [root / f"wsj_{n:04d}.mrg" for n in range(170, 200)]
    trees = [t for f in files for t in iter_parse(f.read_text(encoding="utf-8"), str(f))]
    assert len(trees) == 413
    result = evalb(trees, trees)
    assert result.total.valid_sentences == 413
    assert f"{result.total.fmeasure:.2f}" == "100.00"
    assert result.total.tagging_accuracy == 100.0
    # One multi-line file through the file reader.
    text, _ = evalb_files(files[0], files[0])
    assert "Bracketing FMeasure       = 100.00" in text


def test_every_mrg_file_parses(shared_data: Path):
    files = sorted((shared_data / "ptb-sample").glob("wsj_*.mrg"))
    assert files
    count = sum(len(list(iter_parse(f.read_text(encoding="utf-8"), str(f)))) for f in files)
    assert count > 3000


CASES = ("r1", "r2", "r3", "r4", "r5", "r6")


@pytest.mark.parametrize("case", CASES)
def test_the_official_programs_figures_on_messy_files(shared_data: Path, case: str):
    folder = shared_data / "evalb-cases"
    official = folder / f"{case}.official.txt"
    if not official.is_file():
        pytest.skip(f"{official} is not in this copy of the data")
    expected = official.read_text(encoding="utf-8")
    text, _ = evalb_files(folder / f"{case}.gold", folder / f"{case}.test")
    summary = text[text.index("=== Summary ===") :]
    assert summary.strip() in expected
    for row in text[: text.index("=== Summary ===")].splitlines():
        assert row in expected.splitlines(), row


def test_the_command_says_on_stderr_which_sentences_were_left_out(tmp_path: Path, capsys):
    from treeattn.cli import main

    gold, test = tmp_path / "gold.txt", tmp_path / "test.txt"
    gold.write_text(f"{GOLD}\n{GOLD}\n", encoding="utf-8")
    test.write_text(f"()\n{GOLD.replace('(NN mat)', '(NN hat)')}\n", encoding="utf-8")
    assert main(["evalb", str(gold), str(test)]) == 0
    captured = capsys.readouterr()
    assert "Number of Error sentence  =      1" in captured.out
    assert "Number of Skip  sentence  =      1" in captured.out
    assert "2 problem(s)" in captured.err and f"{test}:1: sentence 1 skipped" in captured.err
    assert main(["evalb", str(gold), str(test), "--strict"]) == 2
    assert f"{test}:1: sentence 1: no test parse" in capsys.readouterr().err
