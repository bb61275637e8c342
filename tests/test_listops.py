import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeattn.data.listops import (
    OPERATORS,
    apply_operator,
    evaluate_tree,
    generate_listops,
    parse_expression,
    read_listops,
    write_listops,
)
from treeattn.errors import FormatError


def test_operators_follow_the_original_definitions():
    assert apply_operator("MAX", [2, 9, 4]) == 9
    assert apply_operator("MIN", [2, 9, 4]) == 2
    assert apply_operator("MED", [2, 9, 4]) == 4
    assert apply_operator("MED", [2, 9, 4, 7]) == 5  # median 5.5, truncated
    assert apply_operator("SUM_MOD", [2, 9, 4]) == 5


def test_a_hand_checked_expression():
    tokens = "[MAX 2 9 [MIN 4 7 ] 0 ]".split()
    tree = parse_expression(tokens)
    assert tree.leaves() == tokens
    assert tree.to_brackets() == "(MAX [MAX 2 9 (MIN [MIN 4 7 ]) 0 ])"
    assert evaluate_tree(tree) == 9
    assert evaluate_tree(parse_expression("[SUM_MOD 7 [MED 1 8 3 ] 5 ]".split())) == 5


@given(st.integers(0, 10_000), st.integers(1, 4))
def test_generated_examples_are_consistent(seed, depth):
    examples = generate_listops(5, seed, max_depth=depth, max_length=60)
    assert examples == generate_listops(5, seed, max_depth=depth, max_length=60)
    for ex in examples:
        assert len(ex.tokens) <= 60
        assert ex.tree.leaves() == ex.tokens
        assert parse_expression(ex.tokens) == ex.tree
        assert ex.label == evaluate_tree(ex.tree)
        # Nesting never exceeds the requested depth.
        assert max(ex.tree.leaf_depths()) <= depth


def test_operators_restrict_the_draws_and_default_to_all_four():
    # The default is the generator as it always was: the same draws for the same seed.
    assert generate_listops(50, 4, operators=OPERATORS) == generate_listops(50, 4)
    examples = generate_listops(300, 4, operators=("MAX", "MIN", "MED"))
    drawn = {node.label for ex in examples for node in ex.tree.subtrees()}
    assert drawn == {"MAX", "MIN", "MED"}
    assert {t for ex in examples for t in ex.tokens if t.startswith("[")} == {
        "[MAX",
        "[MIN",
        "[MED",
    }
    assert all(ex.label == evaluate_tree(ex.tree) for ex in examples)
    only_max = generate_listops(20, 4, operators=["MAX"])
    assert all(ex.label == max(int(t) for t in ex.tokens if t.isdigit()) for ex in only_max)
    for bad, message in (
        ((), "non-empty"),
        ("MAX", "non-empty"),
        (("MAX", "SM"), "unknown ListOps operator"),
        (("MAX", "MAX"), "repeat"),
    ):
        with pytest.raises(ValueError, match=message):
            generate_listops(5, 0, operators=bad)


def test_the_operators_option_of_the_config_is_checked():
    from treeattn.tasks import load_config
    from treeattn.tasks.datasets import open_dataset

    assert load_config(None).data.operators == list(OPERATORS)
    cfg = load_config(None, ["data.operators=[MIN, MAX]", "data.train_size=40"])
    train = open_dataset(cfg.data).load_split("train", whole_trees=False)
    assert len(train) == 40
    assert {t for ex in train for t in ex.tokens if t.startswith("[")} == {"[MIN", "[MAX"}
    with pytest.raises(ValueError, match=r"data.operators: unknown ListOps operator\(s\) 'ADD'"):
        load_config(None, ["data.operators=[MAX, ADD]"])
    with pytest.raises(ValueError, match="data.operators: expected list"):
        load_config(None, ["data.operators=MAX"])


def test_unsatisfiable_settings_raise_instead_of_looping():
    # No expression is shorter than 4 tokens ("[MAX 2 9 ]").
    with pytest.raises(ValueError, match=r"produced 0 of 3 .*max_length"):
        generate_listops(3, 0, max_length=3)
    # max_depth=1, max_args=2 allows only 4 operators x 100 digit pairs.
    every = {f"[{op} {a} {b} ]" for op in OPERATORS for a in range(10) for b in range(10)}
    with pytest.raises(ValueError, match=r"produced 0 of 1 .*exclude"):
        generate_listops(1, 0, max_depth=1, max_args=2, exclude=every)
    # Without nesting, 3 arguments give at most 5 tokens.
    with pytest.raises(ValueError, match=r"produced 0 of 5 examples in 10500 draws"):
        generate_listops(5, 0, max_depth=1, max_args=3, min_length=6)
    # A few allowed expressions are enough: examples may repeat.
    some = set(sorted(every)[:390])
    assert len(generate_listops(20, 0, max_depth=1, max_args=2, exclude=some)) == 20


def test_same_seed_gives_the_same_examples_as_before():
    # Fixed outputs: the generator's draws must not change, or saved results would no
    # longer match the data they were trained on.
    assert [" ".join(ex.tokens) for ex in generate_listops(3, 0, max_length=20)] == [
        "[MIN 7 [MAX 9 [MED 3 1 ] ] 5 ]",
        "[SUM_MOD [SUM_MOD 6 [MED 9 2 3 0 2 ] ] 5 1 ]",
        "[SUM_MOD [MAX 7 7 9 0 ] 4 ]",
    ]


def test_labels_are_spread_over_all_ten_values():
    labels = [ex.label for ex in generate_listops(2000, 0)]
    assert set(labels) == set(range(10))
    assert max(labels.count(v) for v in range(10)) < 0.2 * len(labels)


def test_file_round_trip_and_errors(tmp_path):
    examples = generate_listops(20, 3)
    path = tmp_path / "listops.tsv"
    write_listops(path, examples)
    assert read_listops(path) == examples
    bad = tmp_path / "bad.tsv"
    bad.write_text("9\t[MAX 2 9 ]\n\n9\t[MAX 2 9 ]\n")
    with pytest.raises(FormatError, match=r"bad.tsv:2: empty line"):
        read_listops(bad)
    bad.write_text("9\t[MAX 2 9 ]\n3\t[MAX 2 9 ]\n")
    with pytest.raises(FormatError, match=r"bad.tsv:2: label 3 does not match"):
        read_listops(bad)
    bad.write_text("9\t[MAX 2 9\n")
    with pytest.raises(FormatError, match=r"bad.tsv:1: unfinished"):
        read_listops(bad)
    bad.write_bytes(b"9\t[MAX 2 9 ]\n9\t[MAX 2 \xff ]\n")
    with pytest.raises(FormatError, match=r"bad.tsv:2:10: not valid UTF-8"):
        read_listops(bad)
    bad.write_text("9\t[MAX 2 x ]\n")
    with pytest.raises(FormatError, match=r"bad.tsv:1: token 2: expected a digit"):
        read_listops(bad)


@pytest.mark.parametrize(
    "digit", ["\u00b2", "\u0663", "\uff19"]
)  # superscript, Arabic-Indic, fullwidth
def test_only_ascii_digits_are_digits(tmp_path, digit):
    bad = tmp_path / "bad.tsv"
    bad.write_text(f"9\t[MAX 2 {digit} ]\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"bad.tsv:1: token 2: expected a digit"):
        read_listops(bad)
    bad.write_text(f"{digit}\t[MAX 2 9 ]\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"bad.tsv:1:1: expected 'label<TAB>expression'"):
        read_listops(bad)


def test_operation_without_arguments():
    with pytest.raises(FormatError, match=r"token 3: operation MAX has no arguments"):
        parse_expression("[MIN 2 [MAX ] ]".split())
    with pytest.raises(FormatError, match=r"token 1: operation SUM_MOD has no arguments"):
        parse_expression("[SM ]".split())
    with pytest.raises(FormatError, match=r"token 0: ']' without an open operation"):
        parse_expression("] 2".split())


def test_original_release_with_binarising_parentheses(tmp_path):
    # A row of the original release (Nangia & Bowman 2018): label first, and "(" ")"
    # tokens that bracket each operation's arguments two by two.
    path = tmp_path / "train_d20s.tsv"
    path.write_text("7\t( ( ( ( [MAX 2 ) 7 ) ( ( ( [SM 1 ) 4 ) ] ) ) ] )\n", encoding="utf-8")
    [example] = read_listops(path)
    assert example.tokens == "[MAX 2 7 [SM 1 4 ] ]".split()
    assert example.label == 7
    assert example.tree == parse_expression(example.tokens)
    assert example.tree.leaves() == example.tokens


@pytest.mark.parametrize("header", ["Source\tTarget", "label\tsource"])
def test_a_header_line_is_named_as_such(tmp_path, header):
    path = tmp_path / "listops.tsv"
    path.write_text(f"{header}\n9\t[MAX 2 9 ]\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"listops.tsv:1:1: .*header.*'label<TAB>expression'"):
        read_listops(path)
    # Rows with the label last (as some later copies write them) get a hint too.
    path.write_text("[MAX 2 9 ]\t9\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"listops.tsv:1:1: .*the label comes first"):
        read_listops(path)


def test_a_byte_order_mark_is_not_part_of_the_first_label(tmp_path):
    path = tmp_path / "bom.tsv"
    path.write_bytes(b"\xef\xbb\xbf9\t[MAX 2 9 ]\n")
    assert read_listops(path) == read_listops_text(tmp_path, "9\t[MAX 2 9 ]\n")
    # Columns of later errors on line 1 do not count the mark.
    path.write_bytes(b"\xef\xbb\xbf9\t[MAX \xff ]\n")
    with pytest.raises(FormatError, match=r"bom.tsv:1:8: not valid UTF-8"):
        read_listops(path)


def read_listops_text(folder, text):
    path = folder / "plain.tsv"
    path.write_text(text, encoding="utf-8")
    return read_listops(path)


def test_configured_splits_share_no_expression():
    from treeattn.tasks import load_config
    from treeattn.tasks.datasets import open_dataset

    cfg = load_config(None, ["data.train_size=3000", "data.dev_size=500", "data.test_size=500"])
    seen = [
        {" ".join(ex.tokens) for ex in open_dataset(cfg.data).load_split(s)}
        for s in ("train", "dev", "test")
    ]
    assert not seen[0] & seen[1] and not seen[0] & seen[2] and not seen[1] & seen[2]
    assert len(open_dataset(cfg.data).load_split("test")) == 500
