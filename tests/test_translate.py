"""Translation: source pieces under their words, padding invariance of the whole
encoder-decoder, memorising a few pairs, resuming, and the ``translate`` command."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tests.helpers import train
from treeattn.attention.registry import Reads
from treeattn.cli import main
from treeattn.data.multi30k import load_multi30k
from treeattn.engine.checkpoint import load_checkpoint
from treeattn.errors import FormatError
from treeattn.models.inputs import InputEncoder
from treeattn.parsing.parser import model_path
from treeattn.parsing.tree_source import PARSER, TreeSource, right_branching
from treeattn.tasks import load_config, make_task
from treeattn.trees import Tree
from treeattn.trees.distance import gap_distances

SPLITS = {"train": (0, 60), "val": (60, 72), "test_2016_flickr": (72, 82)}


@pytest.fixture(scope="module")
def prefixes(tmp_path_factory):
    """Small line-aligned files cut from Multi30k's training split, one per split."""
    from treeattn.data.paths import data_dir

    root = data_dir()
    if root is None or not root.is_dir():
        pytest.skip("evaluation data not found: set TREEATTN_DATA")
    pairs = load_multi30k("train", root=root)
    folder = tmp_path_factory.mktemp("multi30k")
    paths = {}
    for split, (start, end) in {**SPLITS, "test_2017_flickr": (82, 92)}.items():
        chosen = pairs[start:end]
        (folder / f"{split}.en").write_text("".join(en + "\n" for en, _ in chosen))
        (folder / f"{split}.de").write_text("".join(de + "\n" for _, de in chosen))
        paths[split] = str(folder / split)
    return paths


@pytest.fixture(autouse=True)
def tree_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEATTN_CACHE", str(tmp_path / "cache"))


def tiny(prefixes, out, *extra: str):
    return load_config(
        None,
        [
            "task=translate",
            *(f"data.paths.{split}={prefix}" for split, prefix in prefixes.items()),
            "data.source_vocab_size=300",
            "data.target_vocab_size=300",
            "data.trees=right-branching",
            "model.d_model=32",
            "model.n_heads=2",
            "model.n_layers=1",
            "model.d_ff=64",
            "model.dropout=0",
            "model.max_length=128",
            "train.epochs=2",
            "train.max_tokens=300",
            "train.progress=false",
            f"out_dir={out}",
            *extra,
        ],
    )


def fitted(prefixes, tmp_path, *extra: str):
    task = make_task(tiny(prefixes, tmp_path, *extra))
    pairs, where = task.read("train")
    task.fit(pairs)
    return task, pairs, where


def test_a_words_pieces_form_a_subtree_under_it_and_gaps_of_zero_inside_it(prefixes, tmp_path):
    task, _, _ = fitted(prefixes, tmp_path, "model.attention=distance")
    task._pieces = {"The": ["▁The"], "cat": ["▁ca", "t"], "sat": ["▁s", "at"], ".": ["▁."]}
    tree = Tree.parse("(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))")
    inputs = InputEncoder(frozenset({Reads.TREES}))
    split = inputs.model_tree(tree, task.pieces)
    assert split.to_brackets() == "(S (NP (DT ▁The) (NN ▁ca t)) (VP (VBD ▁s at)) (. ▁.))"
    # Word gaps: The|cat meet in NP (height 1), cat|sat and sat|. in S (height 2); shifted
    # by 1, with 0 (shifted: 1) inside a word.
    assert gap_distances([tree], [[1, 2, 2, 1]]) == [2, 1, 3, 1, 3]
    # A word directly under a phrase (no tag) gets a node of its own over its pieces.
    task._pieces = {"a": ["▁a"], "b": ["▁b", "1"], "c": ["▁c"]}
    control = right_branching(["a", "b", "c"])
    assert control.to_brackets() == "(X a (X b c))"
    assert inputs.model_tree(control, task.pieces).to_brackets() == "(X ▁a (X (WORD ▁b 1) ▁c))"


def test_every_encoder_is_batched_by_the_same_lengths(prefixes, tmp_path):
    """Rows train for the same number of updates, so they must see the same sentences:
    a tree encoder's phrase nodes do not count towards train.max_tokens."""
    lengths = {}
    for attention in ["vanilla", "hierarchical", "distance"]:
        task, pairs, where = fitted(prefixes, tmp_path, f"model.attention={attention}")
        data = task.encode(pairs, where)
        lengths[attention] = data.lengths
        pairs_of_ids = zip(data.source_sizes(), data.targets, strict=True)
        assert data.lengths == [max(size, len(target) - 1) for size, target in pairs_of_ids]
    assert lengths["hierarchical"] == lengths["vanilla"] == lengths["distance"]


@pytest.mark.parametrize(
    "attention", ["vanilla", "distance", "hierarchical", "constituent", "structured"]
)
def test_a_padded_batch_equals_each_sentence_alone(prefixes, tmp_path, attention):
    task, pairs, where = fitted(prefixes, tmp_path, f"model.attention={attention}")
    torch.manual_seed(0)
    model = task.build_model().double().eval()
    data = task.encode(pairs[:4], where)
    batch = data.batch([0, 1, 2, 3])
    together = model(batch.inputs, batch.targets[:, :-1])
    for i in range(4):
        alone = data.batch([i])
        expected = model(alone.inputs, alone.targets[:, :-1])
        t = expected.shape[1]
        torch.testing.assert_close(together[i, :t], expected[0], rtol=0, atol=1e-10)


@pytest.mark.parametrize("attention", ["vanilla", "distance", "hierarchical"])
def test_attention_dropout_reaches_every_attention_and_nothing_else(prefixes, tmp_path, attention):
    extra = (f"model.attention={attention}", "model.dropout=0.3", "model.attention_dropout=0")
    task, _, _ = fitted(prefixes, tmp_path, *extra)
    model = task.build_model()
    attention_rates = [
        m.dropout for m in model.modules() if isinstance(getattr(m, "dropout", None), float)
    ]
    other_rates = [m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    # Encoder layer and the decoder's self- and cross-attention.
    assert attention_rates == [0.0] * len(attention_rates) and len(attention_rates) == 3
    assert other_rates and set(other_rates) == {0.3}
    # Unset, attention weights drop as everything else does.
    task, _, _ = fitted(prefixes, tmp_path, f"model.attention={attention}", "model.dropout=0.3")
    model = task.build_model()
    assert {
        m.dropout for m in model.modules() if isinstance(getattr(m, "dropout", None), float)
    } == {0.3}


TREE_REGULARIZATION = (
    "data.trees=right-branching",
    "model.tree_loss=tree-regularization",
    "model.tree_loss_options.layers=[1]",
)


def test_tree_regularization_reads_each_training_sources_tree_over_its_pieces(prefixes, tmp_path):
    """The loss's spans run over the source's pieces (the root spans them all); only the
    training split is given trees, and the loss is added to the next-word loss."""
    task, pairs, where = fitted(prefixes, tmp_path, *TREE_REGULARIZATION)
    data = task.encode(pairs, where)
    assert all(p.tree is not None for p in pairs)
    for targets, source in zip(data.tree_targets, data.sources, strict=True):
        assert int(targets[:, 1].max()) == len(source.ids)
    assert any(
        len(source.ids) > len(p.words) for source, p in zip(data.sources, pairs, strict=True)
    )
    val, _ = task.read("val")
    assert all(p.tree is None for p in val)
    torch.manual_seed(0)
    model = task.build_model()
    batch = data.batch(range(8))
    with_loss = task.loss(model, batch)
    assert task.loss_terms()["tree_loss"] > 0
    task.cfg.model.tree_loss_weight = 0.0
    assert task.loss(model, batch) < with_loss


@pytest.mark.slow
def test_a_model_trained_on_twenty_pairs_translates_them_back(prefixes, tmp_path):
    task, pairs, where = fitted(prefixes, tmp_path, "model.d_model=64", "model.d_ff=128")
    pairs = pairs[:20]
    data = task.encode(pairs, where)
    torch.manual_seed(0)
    model = task.build_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    batch = data.batch(list(range(20)))
    for _ in range(300):
        optimizer.zero_grad()
        task.loss(model, batch).backward()
        optimizer.step()
    # What the target pieces can say of each reference (SentencePiece folds spaces).
    expected = [task.target_subwords.decode(task.target_subwords.encode(p.target)) for p in pairs]
    for beam in (1, 4):
        assert task.translations(model, data, torch.device("cpu"), beam) == expected


def test_resumed_training_ends_with_the_same_weights(prefixes, tmp_path):
    periodic = "train.checkpoint_every=3"
    expected = train(tiny(prefixes, tmp_path / "straight", periodic))
    assert expected["finished"] and expected["test_2017_flickr_signature"].startswith("nrefs:1")
    first = train(tiny(prefixes, tmp_path / "stopped", periodic), stop_after_steps=4)
    assert not first["finished"]
    second = train(tiny(prefixes, tmp_path / "stopped", periodic))
    assert second["finished"] and second["global_step"] == expected["global_step"]
    for name in ("last.pt", "best.pt"):
        a = load_checkpoint(tmp_path / "straight" / name)["model"]
        b = load_checkpoint(tmp_path / "stopped" / name)["model"]
        for key, value in a.items():
            assert torch.equal(value, b[key]), (name, key)


@pytest.fixture(scope="module")
def checkpoint(prefixes, tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    extra = ("model.attention=hierarchical", "train.epochs=12", "train.max_tokens=150")
    train(tiny(prefixes, out, *extra))
    return out / "best.pt"


@pytest.mark.slow
def test_translate_keeps_every_line_in_order(checkpoint, tmp_path, capsys):
    lines = ["A dog runs on the beach.", "", "Two men sit on a bench.", "", "A girl."]
    text = tmp_path / "in.txt"
    text.write_text("\n".join(lines) + "\n\n")  # the last line empty too
    out = tmp_path / "out.txt"
    assert main(["translate", str(checkpoint), str(text), "-o", str(out), "--beam", "2"]) == 0
    together = out.read_text().split("\n")
    assert len(together) == len(lines) + 2 and together[-1] == ""  # 6 lines, each ended
    assert [together[k] for k in (1, 3, 5)] == ["", "", ""]
    assert len({together[k] for k in (0, 2, 4)} - {""}) == 3  # three different sentences
    for k in (0, 2, 4):  # each line translated alone gives the same
        single = tmp_path / f"one{k}.txt"
        single.write_text(lines[k] + "\n")
        assert main(["translate", str(checkpoint), str(single), "--beam", "2"]) == 0
        assert capsys.readouterr().out == together[k] + "\n"


def test_translate_names_the_bad_line_and_writes_nothing(checkpoint, tmp_path, capsys):
    out = tmp_path / "out.txt"
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"A dog runs.\nA \xff cat.\n")
    assert main(["translate", str(checkpoint), str(bad), "-o", str(out)]) == 2
    assert f"{bad}:2" in capsys.readouterr().err and not out.exists()
    long = tmp_path / "long.txt"
    long.write_text("A dog runs.\n" + " ".join(["dog"] * 200) + "\n")
    assert main(["translate", str(checkpoint), str(long), "-o", str(out)]) == 2
    error = capsys.readouterr().err
    assert f"{long}:2" in error and "limit of 128" in error and not out.exists()
    # Trees given by hand must fit their lines' words.
    text = tmp_path / "in.txt"
    text.write_text("A dog runs.\n\nDogs bark.\n")
    trees = tmp_path / "trees.txt"
    dog = "(S (NP (DT A) (NN dog)) (VP (VBZ runs)) (. .))"
    trees.write_text(f"{dog}\n\n(S (NP (NNS Cats)) (VP (VBP bark)) (. .))\n")
    assert main(["translate", str(checkpoint), str(text), "--trees", str(trees)]) == 2
    assert f"{trees}:3" in capsys.readouterr().err
    trees.write_text(f"{dog}\n\n(S (NP (NNS Dogs)) (VP (VBP bark)) (. .))\n")
    assert main(["translate", str(checkpoint), str(text), "--trees", str(trees)]) == 0
    assert len(capsys.readouterr().out.split("\n")) == 4
    # A tree too deep for the hierarchical embeddings: its line, blank lines counted.
    deep = tmp_path / "deep.txt"
    deep.write_text("A dog runs.\n\n" + " ".join(["a"] * 70) + "\n")
    assert main(["translate", str(checkpoint), str(deep)]) == 2
    assert f"{deep}:3: a token lies" in capsys.readouterr().err


def test_split_sentences_translates_each_apart_and_else_warns(checkpoint, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("A dog runs. Two men sit on a bench.\nA girl.\n")
    assert main(["translate", str(checkpoint), str(text), "--split-sentences"]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    split = captured.out.split("\n")
    alone = []
    for sentence in ("A dog runs.", "Two men sit on a bench."):
        single = tmp_path / "one.txt"
        single.write_text(sentence + "\n")
        assert main(["translate", str(checkpoint), str(single)]) == 0
        alone.append(capsys.readouterr().out.rstrip("\n"))
    assert split[0] == " ".join(alone) and len(split) == 3
    assert main(["translate", str(checkpoint), str(text)]) == 0
    err = capsys.readouterr().err
    assert f"{text}:1: the line seems to hold several sentences" in err and f"{text}:2" not in err
    trees = tmp_path / "trees.txt"
    trees.write_text("(S (NN a))\n(S (NN b))\n")
    args = ["translate", str(checkpoint), str(text), "--split-sentences", "--trees", str(trees)]
    assert main(args) == 2
    assert "cannot go with --split-sentences" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_translate_refuses_an_input_without_a_sentence_as_parse_does(
    checkpoint, tmp_path, capsys, content
):
    empty = tmp_path / "empty.txt"
    empty.write_text(content)
    out = tmp_path / "out.txt"
    assert main(["translate", str(checkpoint), str(empty), "-o", str(out)]) == 2
    assert f"{empty}: empty input, no sentence to read" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
def test_translate_keeps_the_trees_of_its_input_only_with_cache(prefixes, tmp_path, capsys):
    run = tmp_path / "run"
    extra = ("model.attention=distance", "data.trees=parser")
    train(tiny(prefixes, run, *extra, "train.epochs=1"))
    kept = tmp_path / "cache" / "trees"
    splits = set(kept.glob("*.txt"))
    assert len(splits) == 4  # every split, parsed once
    text = tmp_path / "in.txt"
    text.write_text("A dog runs.\n")
    assert main(["translate", str(run / "best.pt"), str(text)]) == 0
    assert set(kept.glob("*.txt")) == splits
    assert main(["translate", str(run / "best.pt"), str(text), "--cache"]) == 0
    assert len(set(kept.glob("*.txt")) - splits) == 1


def test_a_model_on_a_parsers_trees_refuses_another_parser_unless_told(prefixes, tmp_path, capsys):
    run = tmp_path / "run"
    extra = ("model.attention=distance", "data.trees=parser", "data.parser=fast")
    train(tiny(prefixes, run, *extra, "train.epochs=1"))
    text = tmp_path / "in.txt"
    text.write_text("A dog runs.\n")
    moved = tmp_path / "moved.safetensors"
    shutil.copy(model_path("fast"), moved)
    for command in ("predict", "translate"):
        args = [command, str(run / "best.pt"), str(text)]
        assert main(args) == 0 and main([*args, "--parser", str(moved)]) == 0
        capsys.readouterr()
        assert main([*args, "--parser", "accurate"]) == 2
        assert "trained on trees of the parser fast" in capsys.readouterr().err
        assert main([*args, "--trees", "right-branching", "--parser", "accurate"]) == 0
    assert main(["evaluate", str(run / "best.pt"), prefixes["val"], "--trees", "gold"]) == 2
    assert "--trees gold: this model reads parser, right-branching trees" in (
        capsys.readouterr().err
    )
    # Trees of a file, one a line of the split, score as the same trees from their source.
    val = [p.words for p in make_task(tiny(prefixes, tmp_path)).read(prefixes["val"])[0]]
    parsed = TreeSource(PARSER, "fast").trees(val, "val", progress=False)
    given = tmp_path / "val.trees"
    given.write_text("".join(tree.to_brackets() + "\n" for tree in parsed))
    evaluate = ["evaluate", str(run / "best.pt"), prefixes["val"], "--json"]
    assert main(evaluate) == 0
    expected = json.loads(capsys.readouterr().out)
    assert main([*evaluate, "--trees", str(given)]) == 0
    assert json.loads(capsys.readouterr().out) == expected
    # A model whose encoder reads no trees says so.
    plain = tmp_path / "plain"
    train(tiny(prefixes, plain, "model.attention=vanilla", "train.max_updates=1"))
    assert main(["translate", str(plain / "best.pt"), str(text), "--parser", "fast"]) == 2
    assert "a vanilla translation model reads no trees" in capsys.readouterr().err


def test_trees_from_files_are_named_outright():
    sets = ["task=translate", "model.attention=distance"]
    with pytest.raises(ValueError, match="data.trees=files reads data.tree_files"):
        load_config(None, [*sets, "data.tree_files.train=train.trees"])
    with pytest.raises(ValueError, match="data.trees='files' with no files"):
        load_config(None, [*sets, "data.trees=files"])


def test_cross_attention_shares_split_between_nodes_and_leaves(checkpoint, tmp_path, capsys):
    assert main(["cross-attention", str(checkpoint), "val"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert [row[0] for row in rows] == ["1"]
    nodes, leaves, keys = map(float, rows[0][1:])
    assert abs(nodes + leaves - 100) < 0.11 and 0 < nodes < 100 and 0 < keys < 100
    # With the queries zeroed every key weighs the same: the share on nodes is theirs.
    state = load_checkpoint(checkpoint)
    for name, weights in state["model"].items():
        if ".cross.query." in name:
            weights.zero_()
    uniform = tmp_path / "uniform.pt"
    torch.save(state, uniform)
    assert main(["cross-attention", str(uniform), "val"]) == 0
    row = capsys.readouterr().out.splitlines()[2].split()
    assert float(row[1]) == pytest.approx(float(row[3]), abs=0.1) and float(row[1]) != nodes


@pytest.mark.slow
def test_parser_trees_are_cached_by_the_parsers_hash_and_another_parser_is_refused(
    prefixes, tmp_path
):
    task, pairs, where = fitted(prefixes, tmp_path, "model.attention=distance", "data.trees=parser")
    assert task.trees["source"] == "parser" and len(task.trees["sha256"]) == 64
    cached = list((tmp_path / "cache" / "trees").glob("*.txt"))
    assert len(cached) == 1  # the training split's trees, parsed once
    again, _ = task.read("train")
    assert [p.tree for p in again] == [p.tree for p in pairs]
    assert list((tmp_path / "cache" / "trees").glob("*.txt")) == cached  # read, not parsed
    # Sentences to translate are parsed without a trace, unless asked to be kept.
    task.sources(["A dog runs."], "input")
    assert list((tmp_path / "cache" / "trees").glob("*.txt")) == cached
    task.sources(["A dog runs."], "input", cache=True)
    assert len(list((tmp_path / "cache" / "trees").glob("*.txt"))) == 2
    other = {**task.trees, "sha256": "0" * 64}  # as if trained with another parser
    trained = make_task(task.cfg)
    trained.load_state_dict({**task.state_dict(), "trees": other})
    with pytest.raises(ValueError, match="trained on trees of the parser"):
        trained.sources(["A dog runs."], "input")


def test_a_run_on_tree_files_needs_one_for_every_split_and_cuts_it_with_the_lines(
    prefixes, tmp_path
):
    def flat(words):
        return Tree("S", [Tree("W", [word]) for word in words])

    sentences = [p.words for p in fitted(prefixes, tmp_path)[1]]
    trees = tmp_path / "train.trees"
    trees.write_text("".join(flat(words).to_brackets() + "\n" for words in sentences))
    extra = ("model.attention=distance", "data.trees=files", f"data.tree_files.train={trees}")
    task, pairs, _ = fitted(prefixes, tmp_path, *extra, "data.train_fraction=0.5")
    assert [p.tree for p in pairs] == [flat(words) for words in sentences[:30]]
    assert task.trees == {"source": "files"}
    # Val would be parsed while train came from a file: refused before any training,
    # which reads every split before it fits the task.
    with pytest.raises(ValueError, match="data.tree_files"):
        make_task(tiny(prefixes, tmp_path, *extra)).read("val")
    trees.write_text(flat(sentences[0]).to_brackets() + "\n")
    with pytest.raises(FormatError, match="1 trees for 60 sentences"):
        task.read("train")


def test_a_resumed_run_whose_parser_changed_is_refused(prefixes, tmp_path):
    cfg = tiny(prefixes, tmp_path, "model.attention=distance", "data.trees=parser")
    trained, _, _ = fitted(prefixes, tmp_path, "model.attention=distance", "data.trees=parser")
    state = trained.state_dict()
    for sha256, refused in ((state["trees"]["sha256"], False), ("0" * 64, True)):
        resumed = make_task(cfg)
        resumed.read("train")  # training reads its splits before it loads last.pt
        state["trees"]["sha256"] = sha256
        if refused:
            with pytest.raises(ValueError, match="its splits were parsed by"):
                resumed.load_state_dict(state)
        else:
            resumed.load_state_dict(state)
