"""Joint training of one parser on Penn Treebank trees and UD EWT: each loss sees only the
sentences that carry its annotation, and the two treebanks' words and tags meet."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from treeattn.tasks import load_config, make_task

PTB_TREES = [
    "( (S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)) )",
    "( (S (NP (DT a) (NN dog)) (VP (VBD ran)) (. .)) )",
    "( (S (NP (PRP it)) (VP (VBD saw) (NP (DT the) (NN dog) (-LRB- -LRB-) (NN pet) "
    "(-RRB- -RRB-))) (. .)) )",
]
# (form, upos, xpos, head, deprel) per word.
UD_SENTENCES = [
    [
        ("Can", "AUX", "MD", 3, "aux"),
        ("dogs", "NOUN", "NNS", 3, "nsubj"),
        ("run", "VERB", "VB", 0, "root"),
        ("?", "PUNCT", ".", 3, "punct"),
    ],
    [
        ("Visit", "VERB", "VB", 0, "root"),
        ("(", "PUNCT", "-LRB-", 3, "punct"),
        ("us", "PRON", "PRP", 1, "obj"),
        (")", "PUNCT", "-RRB-", 3, "punct"),
        ("today", "NOUN", "NN", 1, "obl:tmod"),
    ],
    [
        ("the", "DET", "DT", 2, "det"),
        ("cat", "NOUN", "NN", 3, "nsubj"),
        ("sat", "VERB", "VBD", 0, "root"),
        ("e-mail", "NOUN", "NN", 3, "obj"),
    ],
]
TINY = [
    "model.d_word=8",
    "model.d_char=8",
    "model.d_content=8",
    "model.d_position=8",
    "model.n_layers=1",
    "model.n_heads=2",
    "model.d_kv=8",
    "model.d_ff=16",
    "model.lal_d_kv=8",
    "model.lal_d_proj=4",
    "model.d_label_hidden=8",
    "model.d_tag_hidden=8",
    "model.d_arc=8",
    "model.d_rel=8",
    "model.dropout=0.0",
    "model.word_dropout=0.0",
    "train.progress=false",
]


def conllu_block(words: list[tuple[str, str, str, int, str]], number: int) -> str:
    text = " ".join(w[0] for w in words)
    lines = [f"# sent_id = toy-{number}", f"# text = {text}"]
    for i, (form, upos, xpos, head, rel) in enumerate(words, start=1):
        lines.append(f"{i}\t{form}\t{form.lower()}\t{upos}\t{xpos}\t_\t{head}\t{rel}\t_\t_")
    return "\n".join(lines) + "\n\n"


@pytest.fixture
def joint_root(tmp_path) -> Path:
    """A data folder laid out as the real one: ``ptb-sample/wsj_NNNN.mrg`` (a file in each
    split's range) and ``ud-en-ewt/en_ewt-ud-{split}.conllu``."""
    ptb, ud = tmp_path / "ptb-sample", tmp_path / "ud-en-ewt"
    ptb.mkdir()
    ud.mkdir()
    for number in (1, 140, 170):  # train, dev, test
        (ptb / f"wsj_{number:04d}.mrg").write_text("\n".join(PTB_TREES) + "\n")
    blocks = "".join(conllu_block(s, i) for i, s in enumerate(UD_SENTENCES, start=1))
    for split in ("train", "dev", "test"):
        (ud / f"en_ewt-ud-{split}.conllu").write_text(blocks)
    return tmp_path


def joint_task(root: Path, *settings: str):
    cfg = load_config(
        None, ["task=parse", "data.name=joint", f"data.root={root}", *TINY, *settings]
    )
    task = make_task(cfg)
    examples, _ = task.read("train")
    task.fit(examples)
    return task, examples


def test_joint_data_reads_ptb_trees_and_ewt_xpos_and_ud(joint_root):
    task, examples = joint_task(joint_root, "data.ptb_repeat=2")
    ptb, ud = examples[:6], examples[6:]
    assert [ex.words for ex in ptb[:3]] == [ex.words for ex in ptb[3:]]
    assert ptb[0] is ptb[3]  # repeated, not copied: the vocabulary counts it once
    assert all(ex.tree is not None and ex.dependencies is None for ex in ptb)
    assert all(ex.tree is None and ex.dependencies is not None for ex in ud)
    assert ud[0].tags == ["MD", "NNS", "VB", "."]  # XPOS, Penn Treebank tags
    assert ud[1].words == ["Visit", "-LRB-", "us", "-RRB-", "today"]  # as PTB writes them
    vocab = task.vocab
    assert "-LRB-" in vocab.tags.index and "MD" in vocab.tags.index  # tags of both
    assert vocab.rels.names and set(vocab.rels.names) <= {r[4] for s in UD_SENTENCES for r in s}
    assert "S" in vocab.labels.index  # constituent labels of the PTB trees
    dev, _ = task.read("dev")
    assert len(dev) == 6  # repeats are for training only
    assert task.selection.metric == "f1_las"


def test_ewt_tags_are_learned_as_the_wsj_writes_the_same_uses():
    from treeattn.parsing.examples import ud_ptb_example
    from treeattn.trees.dependency import DependencyTree

    words = ["Go", "to", "school", ";", "to", "run", "--", "e", "-", "mail", "...", "me", "!!!"]
    xpos = ["VB", "IN", "NN", ",", "TO", "VB", ",", "NN", "HYPH", "NN", ".", "PRP", "."]
    tree = DependencyTree(words, [0] + [1] * (len(words) - 1), xpos=xpos)
    example = ud_ptb_example(tree)
    # "to" is TO, semicolons, dashes and ellipses ":"; EWT's HYPH and "!!!" stay.
    assert example.tags == [
        "VB", "TO", "NN", ":", "TO", "VB", ":", "NN", "HYPH", "NN", ":", "PRP", ".",
    ]  # fmt: skip
    assert example.dependencies.xpos == xpos  # the gold tree keeps EWT's own


def test_ptb_repeat_is_for_joint_data_only():
    with pytest.raises(ValueError, match="data.ptb_repeat is for data.name=joint"):
        load_config(None, ["task=parse", "data.name=ptb-sample", "data.ptb_repeat=2"])
    with pytest.raises(ValueError, match="data.ptb_repeat"):
        load_config(None, ["task=parse", "data.name=joint", "data.ptb_repeat=0"])


UD_HEAD = ("arc_head", "arc_dependent", "arc.", "rel_head", "rel_dependent", "rel.")
SPAN_HEAD = ("label_hidden", "label_norm", "label_out")


def gradients(task, model, batch) -> dict[str, torch.Tensor]:
    model.zero_grad()
    task.loss(model, batch).backward()
    return {
        name: (p.grad if p.grad is not None else torch.zeros_like(p))
        for name, p in model.named_parameters()
    }


def norm(grads: dict[str, torch.Tensor], prefixes: tuple[str, ...]) -> float:
    return sum(float(g.abs().sum()) for n, g in grads.items() if n.startswith(prefixes))


def test_each_batch_trains_only_the_heads_its_annotation_reaches(joint_root):
    task, examples = joint_task(joint_root)
    torch.manual_seed(0)
    model = task.build_model().double().eval()  # no dropout: losses are deterministic
    data = task.encode(examples, "train")
    ptb_only, ud_only, mixed = data.batch([0, 1, 2]), data.batch([3, 4, 5]), data.batch([0, 3])
    assert ptb_only.heads is None and ud_only.gold_chart is None
    assert mixed.has_tree.tolist() == [True, False]
    assert mixed.heads[0].eq(-100).all() and mixed.heads[1, :4].tolist() == [3, 3, 0, 3]

    grads = gradients(task, model, ptb_only)
    assert norm(grads, UD_HEAD) == 0.0
    assert norm(grads, SPAN_HEAD) > 0 and norm(grads, ("tagger",)) > 0
    grads = gradients(task, model, ud_only)
    assert norm(grads, SPAN_HEAD) == 0.0
    assert norm(grads, UD_HEAD) > 0 and norm(grads, ("tagger",)) > 0
    grads = gradients(task, model, mixed)
    assert norm(grads, UD_HEAD) > 0 and norm(grads, SPAN_HEAD) > 0


def test_a_mixed_batch_loss_is_the_sum_of_its_sentences(joint_root):
    """Each part is summed over its sentences and divided by the batch's count, so B times
    a batch's loss is the sum of its sentences' losses, whichever treebank each is from
    (sentences of different lengths, so the padding differs between the batches too)."""
    task, examples = joint_task(joint_root)
    torch.manual_seed(1)
    model = task.build_model().double().eval()
    data = task.encode(examples, "train")

    def loss(indices: list[int]) -> torch.Tensor:
        with torch.no_grad():
            return task.loss(model, data.batch(indices)) * len(indices)

    alone = [loss([i]) for i in range(6)]
    assert_close(loss([0, 1, 2, 3, 4, 5]), sum(alone))
    assert_close(loss([2, 4]), alone[2] + alone[4])
    assert_close(loss([0, 1, 2]) + loss([3, 4, 5]), loss([0, 1, 2, 3, 4, 5]))


# ---------------------------------------------------------------- output


FIXTURES = Path(__file__).parent / "fixtures"


def check_conllu(text: str, words: list[list[str]]) -> list:
    """The CoNLL-U blocks of ``text`` read back by the strict reader (one root, heads in
    range, no cycle: ``read_conllu`` refuses anything else), one per sentence of ``words``."""
    from treeattn.trees.dependency import parse_conllu, tree_problem

    trees = parse_conllu(text, "output", single_root=True)
    assert [list(t.words) for t in trees] == words
    for tree in trees:
        assert tree_problem(tree.heads, single_root=True) is None
        assert sum(h == 0 for h in tree.heads) == 1
        assert all(0 <= h <= len(tree.heads) for h in tree.heads)
    return trees


@pytest.fixture
def joint_parser(joint_root, tmp_path) -> Path:
    """A tiny joint parser trained a few epochs on the toy treebanks, as a parser file."""
    from tests.helpers import train
    from treeattn.cli import main

    run = tmp_path / "run"
    settings = ["task=parse", "data.name=joint", f"data.root={joint_root}", *TINY]
    settings += ["train.epochs=8", "train.lr=0.01", "train.warmup_steps=2", f"out_dir={run}"]
    results = train(load_config(None, settings))
    for key in ("f1", "uas", "las", "tagging_ptb", "tagging_ud", "tagging_ud_raw"):
        assert f"test_{key}" in results
    path = tmp_path / "joint.safetensors"
    assert main(["export-parser", str(run / "best.pt"), str(path)]) == 0
    return path


def test_a_joint_parser_gives_ud_by_default_and_the_tree_on_request(joint_parser, tmp_path, capsys):
    from treeattn.cli import main
    from treeattn.parsing import Parser

    parser = Parser.load(joint_parser, device="cpu")
    assert parser.ud and parser.constituency and parser.default_dependencies == "ud"
    parsed = parser.parse("Can dogs run?")
    assert parsed.dependencies is parsed.ud
    assert parsed.ud.metadata["scheme"].startswith("Universal Dependencies (ud-en-ewt)")
    assert parsed.tree_dependencies.metadata["scheme"].startswith("head-rule dependencies")
    assert set(parsed.ud.relations) <= set(parser.vocab.rels.names)
    assert parser.parse("Can dogs run?", dependencies="tree").dependencies.heads == (
        parsed.tree_dependencies.heads
    )

    inputs = tmp_path / "in.txt"
    inputs.write_text("Can dogs run?\nVisit (us) today, don't you?\ne-mail the Coca-Cola team!!\n")
    words = [
        ["Can", "dogs", "run", "?"],
        ["Visit", "(", "us", ")", "today", ",", "do", "n't", "you", "?"],
    ]
    # Words as EWT cuts them where the output is UD, as the Penn Treebank where it is not.
    ud_words = [*words, ["e-mail", "the", "Coca", "-", "Cola", "team", "!!"]]
    ptb_words = [*words, ["e-mail", "the", "Coca-Cola", "team", "!", "!"]]
    capsys.readouterr()
    for scheme, comment, cut in (
        ("ud", "Universal Dependencies", ud_words),
        ("tree", "head-rule", ptb_words),
    ):
        args = ["parse", "--model", str(joint_parser), "--format", "conllu"]
        assert main([*args, "--dependencies", scheme, str(inputs)]) == 0
        trees = check_conllu(capsys.readouterr().out, cut)
        assert all(t.metadata["scheme"].startswith(comment) for t in trees)
    assert main(["parse", "--model", str(joint_parser), "--format", "conllu", str(inputs)]) == 0
    default = check_conllu(capsys.readouterr().out, ud_words)

    # Models that read trees get them over Penn Treebank words, whatever the parser's default.
    from treeattn.parsing.sentence_trees import sentence_trees

    words_of_trees, _ = sentence_trees(["e-mail the Coca-Cola team!!"], parser)
    assert words_of_trees == [ptb_words[-1]]
    assert all(t.metadata["scheme"].startswith("Universal Dependencies") for t in default)


def test_the_shipped_fast_parser_parses_as_it_did(capsys):
    """An old parser file loads and writes the same CoNLL-U, byte for byte, as before."""
    from treeattn.cli import main
    from treeattn.parsing import Parser

    inputs = FIXTURES / "fast-parser-input.txt"
    assert main(["parse", "--model", "fast", "--format", "conllu", str(inputs)]) == 0
    out = capsys.readouterr().out
    assert out == (FIXTURES / "fast-parser-conllu.txt").read_text(encoding="utf-8")
    parser = Parser.load("fast", device="cpu")
    assert not parser.ud and parser.default_dependencies == "tree"
    parsed = parser.parse("The cat sat.")
    assert parsed.ud is None and parsed.dependencies == parsed.tree_dependencies
    with pytest.raises(ValueError, match="has no Universal Dependencies"):
        parser.parse("The cat sat.", dependencies="ud")


# ---------------------------------------------------------------- words as EWT cuts them


TEXT = (
    "Coca-Cola's e-mail and/or 713-853-3989 at https://x.com/a-b wow!! :) #tags Iran’s "
    "back.. don’t (self-driven) l/c"
)


def test_ud_tokens_cut_compounds_and_keep_runs_whole_as_ewt_does():
    from treeattn.trees.tokenize import tokenize, tokenize_with_offsets

    # Each word is its form, as EWT writes it: a curly apostrophe's clitic stays curly.
    assert tokenize(TEXT, "ud") == [
        *["Coca", "-", "Cola", "'s", "e-mail", "and", "/", "or", "713-853-3989", "at"],
        *["https://x.com/a-b", "wow", "!!", ":)", "#tags", "Iran", "’s", "back", ".."],
        *["do", "n’t", "(", "self", "-", "driven", ")", "l/c"],
    ]
    assert tokenize("\"Stop\" and 'go'", "ud") == ['"', "Stop", '"', "and", "'", "go", "'"]
    # The Penn Treebank's own cut keeps compounds, runs and symbols.
    assert tokenize(TEXT) == [
        *["Coca-Cola", "'s", "e-mail", "and/or", "713-853-3989", "at", "https://x.com/a-b"],
        *["wow", "!", "!", ":-RRB-", "#", "tags", "Iran", "'s", "back..", "do", "n't"],
        *["-LRB-", "self-driven", "-RRB-", "l/c"],
    ]
    for token in tokenize_with_offsets(TEXT, "ud"):  # every word keeps its place
        assert TEXT[token.start : token.end] == token.form
    # Contractions without their apostrophe, where EWT always cuts them; "its" is a word.
    bare = "Dont worry, im sure ive seen its bowl. Cant, wont. At 5pm, 11:30AM; 65k, 4kg."
    assert tokenize(bare, "ud") == [
        *["Do", "nt", "worry", ",", "i", "m", "sure", "i", "ve", "seen", "its", "bowl", "."],
        *["Ca", "nt", ",", "wo", "nt", ".", "At", "5", "pm", ",", "11:30", "AM", ";"],
        *["65", "k", ",", "4kg", "."],
    ]
    # A range of numbers is three words, a phone number or ZIP code one.
    numbers = "In 1969-1970, pages 10-12, call 853-3989 or 713-853-3989, ZIP 77002-1234."
    assert tokenize(numbers, "ud")[1:4] == ["1969", "-", "1970"]
    assert tokenize(numbers, "ud")[6:9] == ["10", "-", "12"]
    assert {"853-3989", "713-853-3989", "77002-1234"} <= set(tokenize(numbers, "ud"))
    ptb = tokenize(bare + " " + numbers)
    assert {"Dont", "im", "5pm", "1969-1970"} <= set(ptb)  # not in the PTB's cut
    with pytest.raises(ValueError, match="scheme='spacy'"):
        tokenize(TEXT, "spacy")


def test_ud_tokens_cut_units_edge_hyphens_and_dots_between_words_as_ewt_does():
    from treeattn.trees.tokenize import tokenize, tokenize_with_offsets

    text = "Paid $170m, $2.7m and $4.7b - smuggling- from the 1980s- by -Russia..ok? Room.?"
    assert tokenize(text, "ud") == [
        *["Paid", "$", "170", "m", ",", "$", "2.7", "m", "and", "$", "4.7", "b", "-"],
        *["smuggling", "-", "from", "the", "1980s", "-", "by", "-", "Russia", "..", "ok"],
        *["?", "Room", ".?"],
    ]
    assert tokenize(text)[2:5] == ["170m", ",", "$"]  # the Penn Treebank's cut keeps them
    assert "-Russia..ok" in tokenize(text)
    for token in tokenize_with_offsets(text, "ud"):
        assert text[token.start : token.end] == token.form


def test_ewt_dev_sentences_tokenize_as_its_gold_words(shared_data):
    """The count docs/results/parsing.md gives ("One parser for web text"): EWT dev's raw
    sentences (``# text``) whose words come out exactly as EWT's (syntactic words,
    contractions split)."""
    from treeattn.data.ud import load_ud
    from treeattn.trees.tokenize import tokenize_with_offsets

    trees = load_ud("dev", root=shared_data)

    def same(scheme: str) -> int:
        return sum(
            [t.form for t in tokenize_with_offsets(tree.metadata["text"], scheme)]
            == list(tree.words)
            for tree in trees
        )

    assert (same("ptb"), same("ud"), len(trees)) == (1724, 1894, 2001)
