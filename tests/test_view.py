"""``treeattn view``: the attention it extracts is the model's, the page holds it whole and
fetches nothing, and in a real headless browser a click shows a word's row."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.test_backbone import CONFIG as BERT_CONFIG
from tests.test_engine import TINY
from treeattn.analysis.capture import capture
from treeattn.analysis.page_data import LEVELS, SCALE, decode_attention
from treeattn.analysis.view import view_data, view_page
from treeattn.attention.constituent import LINKS, ConstituentAttention
from treeattn.attention.distance import GAPS, DistanceAttention
from treeattn.attention.head_edit import HeadEdit
from treeattn.attention.heads import merge_heads, split_heads
from treeattn.attention.registry import LAYER
from treeattn.attention.vanilla import VanillaSelfAttention
from treeattn.cli import main
from treeattn.models.bert import BertConfig, BertLayer
from treeattn.models.hierarchical import HierarchicalEncoder
from treeattn.tasks.sentences import LabeledSentence
from treeattn.tasks.trained import load_trained
from treeattn.testing.browser import headless_chromium
from treeattn.viz.page import render_page

LINES = ["[MAX 2 9 [MIN 4 7 ] 0 ]", "[MIN 3 [MAX 4 5 ] ]", "[SUM_MOD 1 2 ]"]
CLOSE = 0.5 / LEVELS + 0.0005  # stored in LEVELS steps, shown to 3 decimals


def _stored(sentence: dict, layer: int) -> torch.Tensor:
    """(H, q, q) the attention a page holds for one sentence and layer."""
    size = len(sentence["nodes"]) + len(sentence["words"])
    return torch.stack([decode_attention(head, size) for head in sentence["attention"][layer]])


def _mixed(layer, weights: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The layer's output had it mixed its values with ``weights`` (B, H, n, n)."""
    v = split_heads(layer.qkv(x).chunk(3, dim=-1)[2], layer.n_heads)
    return layer.out(merge_heads(weights @ v))


def _padded_batch():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 16)
    pad_mask = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    return x, pad_mask


@pytest.mark.parametrize(
    "layer, context",
    [
        (VanillaSelfAttention(16, 4), {}),
        (DistanceAttention(16, 4, local_heads=2), {GAPS: torch.tensor([[3, 1, 2, 4, 1]] * 2)}),
        (
            DistanceAttention(16, 4, local_heads=3, gate="soft", layers=[1]),
            {GAPS: torch.tensor([[3, 1, 2, 4, 1]] * 2), LAYER: 1},
        ),
        (DistanceAttention(16, 4, layers=[0]), {GAPS: torch.zeros(2, 5), LAYER: 1}),
        (ConstituentAttention(16, 4), {LINKS: torch.full((2, 5), 0.3)}),
        (ConstituentAttention(16, 4, prior_diagonal=0.1), {}),
    ],
)
def test_attention_weights_are_what_the_forward_pass_mixed_values_with(layer, context):
    x, pad_mask = _padded_batch()
    layer.eval()
    out = layer(x, pad_mask, context)  # leaves this layer's links and gate in context
    weights = layer.attention_weights(x, pad_mask, context)
    assert weights.shape == (2, 4, 6, 6)
    assert torch.allclose(_mixed(layer, weights, x), out, atol=1e-5)
    assert (weights[1, :, :, 4:] == 0).all()  # nothing on padding
    if not isinstance(layer, ConstituentAttention):  # the prior is not renormalised
        assert torch.allclose(weights.sum(-1), torch.ones(2, 4, 6), atol=1e-5)


def _bert_mixed(layer: BertLayer, weights: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
    """A BERT layer's output had its attention mixed its values with ``weights``."""
    batch, length, d = states.shape
    values = layer.value(states).view(batch, length, layer.n_heads, -1).transpose(1, 2)
    attended = (weights @ values).transpose(1, 2).reshape(batch, length, d)
    states = layer.attention_norm(states + layer.attention_out(attended))
    return layer.feed_norm(states + layer.feed_out(layer.activation(layer.feed_in(states))))


@pytest.mark.parametrize("change", [None, "bias", "prior"])
def test_a_bert_layers_attention_weights_are_what_its_forward_pass_mixed_values_with(change):
    torch.manual_seed(0)
    layer = BertLayer(BertConfig.from_dict(BERT_CONFIG)).eval()
    states = torch.randn(2, 6, 16)
    allowed = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])[:, None, None, :]
    edit = None
    if change == "bias":  # a hard local range: each piece sees its neighbours and [CLS]
        near = (torch.arange(6)[:, None] - torch.arange(6)).abs() <= 1
        near[:, 0] = True  # a padded query keeps a key to see
        bias = torch.zeros(6, 6).masked_fill(~near, -torch.inf)
        edit = HeadEdit((3, 1), bias=bias.expand(2, 1, 6, 6))
    elif change == "prior":
        edit = HeadEdit((2,), prior=torch.rand(2, 1, 6, 6))
    with torch.no_grad():
        out = layer(states, allowed, edit)
        weights = layer.attention_weights(states, allowed, edit)
        plain = layer.attention_weights(states, allowed)
        assert weights.shape == (2, 4, 6, 6)
        assert torch.allclose(_bert_mixed(layer, weights, states), out, atol=1e-5)
    assert (weights[1, ..., 4:] == 0).all()  # nothing on padding
    chosen = [] if edit is None else list(edit.heads)
    others = [h for h in range(4) if h not in chosen]
    assert torch.equal(weights[:, others], plain[:, others])
    if change is not None:
        assert not torch.allclose(weights[:, chosen], plain[:, chosen])
    if change == "bias":
        assert (weights[:, chosen][..., ~near] == 0).all()
    if change != "prior":  # the prior is not renormalised
        assert torch.allclose(weights.sum(-1), torch.ones(2, 4, 6), atol=1e-5)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Tiny ListOps models, one per mechanism, trained on first use."""
    made: dict[str, Path] = {}

    def run(attention: str) -> Path:
        if attention not in made:
            out = tmp_path_factory.mktemp(attention) / "run"
            sets = [*TINY, "train.epochs=1", f"model.attention={attention}", f"out_dir={out}"]
            assert main(["train", *(item for o in sets for item in ("--set", o))]) == 0
            made[attention] = out / "best.pt"
        return made[attention]

    return run


def _data(checkpoint: Path, lines=LINES, **options):
    saved = load_trained(checkpoint, "cpu")
    examples = saved.task.read_inputs(lines, "<test>")
    return saved, examples, view_data(saved, examples, "<test>", "test", **options)


def _layer_outputs(saved, inputs) -> list[torch.Tensor]:
    """Each attention layer's output in a plain forward pass, with its input."""
    seen = []
    layers = [layer.attn for layer in saved.model.encoder.layers]
    hooks = [a.register_forward_hook(lambda m, i, o: seen.append((m, i[0], o))) for a in layers]
    with torch.no_grad():
        saved.model.encoder.encode_inputs(inputs)
    for hook in hooks:
        hook.remove()
    return seen


@pytest.mark.parametrize("attention", ["vanilla", "distance", "constituent"])
def test_the_page_holds_the_attention_each_layer_mixed_its_values_with(runs, attention):
    saved, examples, data = _data(runs(attention))
    encoded = saved.encode(examples, "<test>")
    assert data["layers"] == saved.cfg.model.n_layers
    # ListOps' trees have no label head rules know: no arcs, and the page says why.
    assert [sentence["arcs"] for sentence in data["sentences"]] == [None] * len(LINES)
    (note,) = data["notes"]
    assert note.startswith(f"no dependency arcs for {len(LINES)} trees without Penn Treebank")
    for k, sentence in enumerate(data["sentences"]):
        inputs = encoded.batch([k]).inputs
        found = capture(saved, inputs)
        n = len(examples[k].tokens)
        for layer, (module, x, out), weights in zip(
            range(len(found.attention)), _layer_outputs(saved, inputs), found.attention, strict=True
        ):
            assert weights.shape == (saved.cfg.model.n_heads, n, n)
            with torch.no_grad():
                assert torch.allclose(_mixed(module, weights[None], x), out, atol=1e-5)
            stored = _stored(sentence, layer)
            assert (stored - weights).abs().max() <= 0.5 / LEVELS + 1e-6


def test_constituent_and_distance_panels(runs):
    *_, data = _data(runs("constituent"))
    titles = [p["title"] for p in data["sentences"][0]["panels"]]
    assert titles == ["link probabilities a (Tree Transformer)", "constituent prior C"]
    links = data["sentences"][0]["panels"][0]
    words = data["sentences"][0]["words"]
    assert len(links["rows"]) == data["layers"] and len(links["cols"]) == len(words) - 1
    columns = torch.tensor(links["values"][0]).view(data["layers"], -1)
    assert (columns[1:] >= columns[:-1]).all()  # links only grow upward
    *_, data = _data(runs("distance"))
    gate = data["sentences"][1]["panels"][0]
    assert gate["title"] == "local range per word (gate)" and "heads 1-2" in gate["note"]
    # "[MIN 3 [MAX 4 5 ] ]": "4" sees [MAX 4 5 ], not the words of the outer bracket.
    inside = torch.tensor(gate["values"][0]).view(7, 7)[3] == SCALE
    assert inside.tolist() == [False, False, True, True, True, True, False]


def test_structured_rows_are_each_words_parent_distribution(runs):
    saved, examples, data = _data(runs("structured"))
    for sentence in data["sentences"]:
        n = len(sentence["words"])
        roots = sentence["panels"][0]
        for layer in range(data["layers"]):
            parents = _stored(sentence, layer)
            root = torch.tensor(roots["values"][layer]).view(-1, n) / SCALE
            # Every word has one head: a word or the root.
            bound = n * 0.5 / LEVELS + 0.5 / SCALE
            assert torch.allclose(parents.sum(-1) + root, torch.ones_like(root), atol=bound)
            for heads in sentence["latent"][layer]:
                assert len(heads) == n and heads.count(0) == 1


def test_hierarchical_rows_cover_phrase_nodes_and_words(runs):
    saved, examples, data = _data(runs("hierarchical"))
    assert isinstance(saved.model.encoder, HierarchicalEncoder)
    sentence = data["sentences"][1]  # [MIN 3 [MAX 4 5 ] ]: two phrase nodes
    assert sentence["nodes"] == ["MIN 0-7", "MAX 2-6"]
    assert sentence["tree"]["node"] == 0 and sentence["tree"]["children"][2]["node"] == 1
    weights = _stored(sentence, 0)
    assert torch.allclose(
        weights.sum(-1), torch.ones(weights.shape[:2]), atol=weights.shape[-1] * 0.5 / LEVELS
    )
    shares = sentence["panels"][0]
    assert shares["cols"] == ["on nodes", "on words"] and len(shares["values"]) == data["layers"]


def _cut_notes(data: dict) -> list[str]:
    """The page's notes on what it leaves out (not the one on ListOps' trees)."""
    return [note for note in data["notes"] if not note.startswith("no dependency arcs")]


def test_a_page_too_large_shows_fewer_heads_then_fewer_sentences_and_says_so(runs):
    saved, examples, data = _data(runs("vanilla"))
    full = sum(len(json.dumps(s, separators=(",", ":"))) for s in data["sentences"])
    *_, smaller = _data(runs("vanilla"), max_bytes=full - 1)
    assert smaller["heads"] == 1 and len(smaller["sentences"]) == len(LINES)
    why = f", to keep the page under {(full - 1) / 1e6:.1f} MB"
    assert _cut_notes(smaller) == [f"showing the first 1 of 2 heads in each layer{why}"]
    first = len(json.dumps(smaller["sentences"][0], separators=(",", ":")))
    *_, smallest = _data(runs("vanilla"), max_bytes=first)
    assert smallest["heads"] == 1 and len(smallest["sentences"]) == 1
    why = f", to keep the page under {first / 1e6:.1f} MB"
    assert _cut_notes(smallest) == [
        f"showing the first 1 of {len(LINES)} sentences{why}",
        f"showing the first 1 of 2 heads in each layer{why}",
    ]


def test_the_page_is_one_self_contained_file_that_says_what_it_leaves_out(runs):
    page = view_page(runs("vanilla"), LINES * 3, max_sentences=4, max_heads=1)
    assert "showing the first 4 of 9 sentences" in page
    assert "showing the first 1 of 2 heads in each layer" in page
    for fetching in ("<link", " src=", "href=", "url(", "@import", "fetch("):
        assert fetching not in page
    payload = re.search(r'id="view-data">(.*?)</script>', page, re.S).group(1)
    data = json.loads(payload)
    assert len(data["sentences"]) == 4 and data["heads"] == 1
    assert all(len(layer) == 1 for layer in data["sentences"][0]["attention"])
    assert _cut_notes(data) == [
        "showing the first 4 of 9 sentences",
        "showing the first 1 of 2 heads in each layer",
    ]
    # A word that would end the script element is escaped, and comes back whole.
    data["sentences"][0]["words"][0] = "</script>"
    assert "</script><" not in render_page(data).split('id="view-data">')[1].split("</script>\n")[0]


def test_view_command_writes_the_page_whole_or_not_at_all(runs, tmp_path, monkeypatch, capsys):
    checkpoint = str(runs("vanilla"))
    source = tmp_path / "in.txt"
    source.write_text("\n".join(LINES) + "\n")
    out = tmp_path / "page.html"
    assert main(["view", checkpoint, str(source), "-o", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert main(["view", checkpoint, "--max-sentences", "2", "--max-heads", "1"]) == 0
    assert "showing the first 2 of 40 sentences" in capsys.readouterr().out
    source.write_text("[MAX 2 9 ]\n[NOT an expression\n")
    bad = tmp_path / "bad.html"
    assert main(["view", checkpoint, str(source), "-o", str(bad)]) == 2
    assert not bad.exists() and not list(tmp_path.glob("*.partial"))
    assert main(["view", checkpoint, "--max-mb", "0", "-o", str(bad)]) == 2
    assert "--max-mb must be positive" in capsys.readouterr().err
    assert main(["view", str(runs("tree-lstm")), "-o", str(bad)]) == 2
    assert "no attention layer whose weights can be shown" in capsys.readouterr().err
    parser = Path("src/treeattn/resources/parser-ptb-sample.safetensors")  # a parser file
    source.write_text("The cat sat on the mat.\n")
    assert main(["view", str(parser), str(source), "-o", str(out)]) == 0
    assert '"task":"parse"' in out.read_text()


# -- models on a pretrained backbone -------------------------------------------------


@pytest.fixture(scope="module")
def backbone_runs(tmp_path_factory):
    """Tiny classifiers on the tiny random BERT of tests/test_backbone.py, trained on first
    use (the settings of tests/test_classify_backbone.py)."""
    from tests.test_backbone import write_tiny_bert
    from tests.test_classify_backbone import ROWS, settings

    tiny = tmp_path_factory.mktemp("backbone") / "tiny"  # layers are named by the folder
    tiny.mkdir()
    write_tiny_bert(tiny)
    data = tmp_path_factory.mktemp("labeled") / "trees.txt"
    data.write_text("".join(row + "\n" for row in ROWS * 4), encoding="utf-8")
    made: dict[str, Path] = {}

    def run(name: str) -> Path:
        if name not in made:
            out = tmp_path_factory.mktemp(name) / "run"
            sets = settings(tiny, data, out, name, "train.epochs=1")
            assert main(["train", *(item for o in sets for item in ("--set", o))]) == 0
            made[name] = out / "best.pt"
        return made[name]

    return run


def _backbone_lines() -> list[str]:
    from tests.test_classify_backbone import ROWS

    return ROWS  # "unbelievably" is three pieces, "zq" two


def _real_layers(saved, example, inputs, syntax=None):
    """The backbone's hidden states and each layer's edit in the model's own pass over one
    sentence, syntax made from its tree as ``inject_syntax``'s users make it."""
    backbone = saved.model.encoder.backbone
    pieces = inputs.pieces
    injection = getattr(backbone.encoder, "syntax_injection", None)
    if injection is not None:
        trees = [example.tree] if injection.reads else None
        syntax = injection.inputs(trees, pieces.word_of_piece, pieces.pad_mask)
    with torch.no_grad():
        states = backbone.hidden_states(pieces, syntax)
    return backbone, pieces, states, syntax


def _literal_word_attention(pieces: torch.Tensor, owner: list[int]) -> torch.Tensor:
    """(H, p, p) over pieces -> (H, n, n) over words, pair by pair: the sum over the key
    word's pieces, the mean over the query word's."""
    n = max(owner) + 1
    out = torch.zeros(pieces.shape[0], n, n)
    for i in range(n):
        rows = [a for a, w in enumerate(owner) if w == i]
        for j in range(n):
            cols = [b for b, w in enumerate(owner) if w == j]
            out[:, i, j] = pieces[:, rows][:, :, cols].sum(-1).mean(-1)
    return out


@pytest.mark.parametrize("name", ["vanilla", "distance"])
def test_a_backbone_models_word_attention_is_its_layers_piece_attention_over_words(
    backbone_runs, name
):
    lines = _backbone_lines()
    saved, examples, data = _data(backbone_runs(name), lines)
    encoded = saved.encode(examples, "<test>")
    n_layers = len(saved.model.encoder.backbone.encoder.layers)
    assert data["layers"] == n_layers and data["heads"] == 4
    assert data["layer_names"] == [f"tiny layer {i}" for i in (1, 2, 3)]
    assert any("sum over its pieces" in note and "less than 1" in note for note in data["notes"])
    several = 0
    for k, sentence in enumerate(data["sentences"]):
        backbone, pieces, states, syntax = _real_layers(
            saved, examples[k], encoded.batch([k]).inputs
        )
        owner = pieces.word_of_piece[0].tolist()
        several += len(owner) - 2 > len(examples[k].tokens)
        allowed = ~pieces.pad_mask[:, None, None, :]
        for index, layer in enumerate(backbone.encoder.layers):
            edit = None if syntax is None else syntax(index, states[index])
            assert (edit is not None) == (name == "distance" and index in (1, 2))
            with torch.no_grad():
                piece_weights = layer.attention_weights(states[index], allowed, edit)[0]
            expected = _literal_word_attention(piece_weights, owner)
            assert (_stored(sentence, index) - expected).abs().max() <= 0.5 / LEVELS + 1e-6
            assert (expected.sum(-1) < 1).all()  # [CLS] and [SEP] keep a share
    assert several  # some word is more than one piece


def test_syntax_inside_a_backbone_shows_its_gate_and_constituent_prior(backbone_runs):
    from treeattn.attention.constituent import constituent_prior
    from treeattn.attention.distance import local_bias
    from treeattn.trees.distance import gap_distances

    lines = _backbone_lines()
    saved, examples, data = _data(backbone_runs("distance"), lines)
    for example, sentence in zip(examples, data["sentences"], strict=True):
        (gate,) = sentence["panels"]
        assert gate["title"] == "local range per word (gate)"
        assert "heads 1-2" in gate["note"] and "tiny layer 2, tiny layer 3" in gate["note"]
        gaps = torch.tensor(gap_distances([example.tree]))[None]
        expected = local_bias(gaps, "hard").exp()[0]
        assert torch.equal(torch.tensor(gate["values"][0]).view(expected.shape), expected * SCALE)
        assert not expected.all()  # some word's range is not the whole sentence
    saved, examples, data = _data(backbone_runs("constituent"), lines)
    encoded = saved.encode(examples, "<test>")
    for k, sentence in enumerate(data["sentences"]):
        links, prior = sentence["panels"]
        assert links["title"] == "link probabilities a (Tree Transformer)"
        assert links["rows"] == ["tiny layer 1", "tiny layer 2"]  # layers [0, 1]
        assert prior["title"] == "constituent prior C" and prior["layers"] == [0, 1]
        *_, syntax = _real_layers(saved, examples[k], encoded.batch([k]).inputs)
        n = len(examples[k].tokens)
        top = torch.tensor(links["values"][0]).view(2, n - 1)[1] / SCALE
        assert (
            top - syntax.passing["links"][0]
        ).abs().max() <= 0.5 / SCALE + 1e-6  # the top chosen layer's
        shown = torch.tensor(prior["values"][1]).view(n, n) / SCALE
        assert (
            shown - constituent_prior(syntax.passing["links"])[0]
        ).abs().max() <= 0.5 / SCALE + 1e-6


def test_view_command_writes_the_page_of_a_backbone_classifier(backbone_runs, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("\n".join(_backbone_lines()) + "\n")
    out = tmp_path / "page.html"
    assert main(["view", str(backbone_runs("structured")), str(source), "-o", str(out)]) == 0
    data = json.loads(re.search(r'id="view-data">(.*?)</script>', out.read_text(), re.S).group(1))
    assert data["layer_names"][3:] == ["structured layer 1"] and data["layers"] == 4
    for sentence in data["sentences"]:
        assert [len(layer) for layer in sentence["attention"]] == [4, 4, 4, 2]
        assert sentence["latent"][:3] == [[], [], []] and len(sentence["latent"][3]) == 2
        (roots,) = sentence["panels"]
        assert roots["layers"] == [3]  # the structured layer's, above the backbone's three
    assert main(["view", str(backbone_runs("tree-lstm")), str(source), "-o", str(out)]) == 0
    assert "the tree-lstm encoder on top of" in out.read_text()


# -- in a real browser -------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    chrome, reason = headless_chromium()
    if chrome is None:
        pytest.skip(reason)
    yield chrome
    chrome.quit()


def _open(browser, page: str, path: Path) -> list:
    path.write_text(page, encoding="utf-8")
    browser.get(path.as_uri())
    assert browser.execute_script("return document.body.dataset.ready") == "true"
    return [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def _row_shown(browser, sentence: int) -> dict[int, list[float]]:
    """The heat map's cells after a click: for each head, the values over the keys."""
    from selenium.webdriver.common.by import By

    cells = browser.find_elements(By.CSS_SELECTOR, f"#sentence-{sentence} svg.row-view rect")
    rows: dict[int, list[float]] = {}
    for cell in cells:
        head = cell.get_attribute("data-head")
        if head != "mean":
            rows.setdefault(int(head), []).append(float(cell.get_attribute("data-v")))
    return rows


@pytest.mark.parametrize("attention", ["vanilla", "hierarchical"])
def test_in_a_browser_clicking_a_word_shows_its_row_of_the_models_attention(
    runs, browser, tmp_path, attention
):
    from selenium.webdriver.common.by import By

    checkpoint = runs(attention)
    saved, examples, _ = _data(checkpoint)
    errors = _open(browser, view_page(checkpoint, LINES), tmp_path / "page.html")
    assert errors == []
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.tree")) == len(LINES)
    encoded = saved.encode(examples, "<test>")
    found = capture(saved, encoded.batch([1]).inputs)
    m = len(found.attention[0][0]) - len(examples[1].tokens)  # phrase nodes come first
    assert browser.find_elements(By.CSS_SELECTOR, "#sentence-1 svg.row-view") == []
    words = browser.find_elements(By.CSS_SELECTOR, "#sentence-1 svg.tree text.word")
    words[3].click()
    last = saved.cfg.model.n_layers - 1
    for head, shown in _row_shown(browser, 1).items():
        expected = found.attention[last][head, m + 3].tolist()
        assert shown == pytest.approx(expected, abs=CLOSE)
    # The slider moves every heat map to another layer.
    browser.execute_script(
        "const s = document.getElementById('layer'); s.value = 1;"
        "s.dispatchEvent(new Event('input'));"
    )
    for head, shown in _row_shown(browser, 1).items():
        assert shown == pytest.approx(found.attention[0][head, m + 3].tolist(), abs=CLOSE)
    if m:  # a phrase node of a hierarchical model is a query too
        browser.find_element(By.CSS_SELECTOR, '#sentence-1 svg.tree text.node[data-q="0"]').click()
        for head, shown in _row_shown(browser, 1).items():
            assert shown == pytest.approx(found.attention[0][head, 0].tolist(), abs=CLOSE)
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


def test_in_a_browser_a_backbone_models_layers_come_first_then_the_ones_on_top(
    backbone_runs, browser, tmp_path
):
    from selenium.webdriver.common.by import By

    checkpoint = backbone_runs("hierarchical")  # phrase nodes on top of word-only layers
    lines = _backbone_lines()
    saved, examples, _ = _data(checkpoint, lines)
    assert _open(browser, view_page(checkpoint, lines), tmp_path / "page.html") == []
    found = capture(saved, saved.encode(examples, "<test>").batch([1]).inputs)
    n = len(examples[1].tokens)
    m = found.attention[-1].shape[-1] - n
    assert m and found.backbone_layers == 3
    browser.find_elements(By.CSS_SELECTOR, "#sentence-1 svg.tree text.word")[1].click()
    shown = _row_shown(browser, 1)  # the top layer: the hierarchical one's two heads
    assert sorted(shown) == [0, 1]
    for head, values in shown.items():
        assert values == pytest.approx(found.attention[3][head, m + 1].tolist(), abs=CLOSE)
    browser.execute_script(
        "const s = document.getElementById('layer'); s.value = 2;"
        "s.dispatchEvent(new Event('input'));"
    )
    assert "tiny layer 2" in browser.find_element(By.ID, "layer-value").text
    shown = _row_shown(browser, 1)  # the backbone's: four heads over the words, none on nodes
    assert sorted(shown) == [0, 1, 2, 3]
    for head, values in shown.items():
        expected = [0.0] * m + found.attention[1][head, 1].tolist()
        assert values == pytest.approx(expected, abs=CLOSE)
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


def test_a_sentence_without_a_tree_is_drawn_with_the_shipped_parsers_tree(runs):
    saved = load_trained(runs("vanilla"), "cpu")
    # Words the parser reads as English (ListOps' own it may leave unlabelled, arcless).
    sentence = LabeledSentence(["Dogs", "bark", "loudly", "."], -1)
    data = view_data(saved, [sentence], "<test>", "test")
    drawn = data["sentences"][0]
    assert drawn["tree"]["label"] and len(drawn["arcs"]) == 4
    leaves = []

    def walk(node):
        for child in node["children"]:
            if isinstance(child, int):
                leaves.append(child)
            else:
                walk(child)

    walk(drawn["tree"])
    assert leaves == [0, 1, 2, 3]


@pytest.mark.slow
def test_the_page_benchmark_runs_end_to_end(runs, tmp_path):
    """``benchmarks.view_page --quick`` (its timings are never asserted)."""
    root = Path(__file__).parents[1]
    command = [sys.executable, "-m", "benchmarks.view_page", str(runs("vanilla")), "--quick"]
    command += ["--out", str(tmp_path)]
    subprocess.run(command, cwd=root, check=True, capture_output=True, timeout=300)
    rows = json.loads((tmp_path / "view_page.json").read_text())["rows"]
    assert rows[0]["bytes"] > 0 and rows[0]["console_errors"] == 0


def _spans(tree: dict) -> set[tuple[int, int]]:
    """The (first, last + 1) word spans of a page's tree."""
    found = set()

    def walk(node: dict) -> tuple[int, int]:
        ends = []
        for child in node["children"]:
            ends += [child, child + 1] if isinstance(child, int) else list(walk(child))
        span = (min(ends), max(ends))
        found.add(span)
        return span

    walk(tree)
    return found


@pytest.mark.slow
def test_a_tree_transformers_page_draws_the_tree_induce_reads_off_its_links(shared_data, tmp_path):
    from treeattn.analysis.induction import induce_trees

    run = tmp_path / "run"
    sets = ["train.max_updates=3", "train.epochs=null", "model.d_model=16", "model.n_heads=2"]
    sets += ["model.d_ff=32", "train.progress=false", f"out_dir={run}"]
    argv = ["train", "configs/text-constituent.yaml"]
    assert main([*argv, *(item for o in sets for item in ("--set", o))]) == 0
    lines = ["the cat sat on the mat .", "dogs bark ."]
    saved, examples, data = _data(run / "best.pt", lines)
    for sentence in data["sentences"]:
        words = sentence["words"]
        # The tree read off the links is unlabelled: no arcs (a start token before it).
        assert words[0] == "<s>" and sentence["arcs"] is None
        induced = induce_trees(saved, [words[1:]])[0]
        expected = {(s + 1, e + 1) for _, s, e in induced.spans() if e - s > 1}
        assert {(s, e) for s, e in _spans(sentence["tree"]) if e - s > 1} == expected


@pytest.mark.slow
def test_a_translation_models_page_holds_its_translations_and_cross_attention(
    shared_data, tmp_path, monkeypatch
):
    from treeattn.data.multi30k import load_multi30k

    monkeypatch.setenv("TREEATTN_CACHE", str(tmp_path / "cache"))
    pairs = load_multi30k("train", root=shared_data)
    sets = ["task=translate", "data.trees=right-branching", "model.attention=hierarchical"]
    for split, (start, end) in {
        "train": (0, 60),
        "val": (60, 72),
        "test_2016_flickr": (72, 82),
    }.items():
        (tmp_path / f"{split}.en").write_text("".join(en + "\n" for en, _ in pairs[start:end]))
        (tmp_path / f"{split}.de").write_text("".join(de + "\n" for _, de in pairs[start:end]))
        sets.append(f"data.paths.{split}={tmp_path / split}")
    sets += ["data.source_vocab_size=300", "data.target_vocab_size=300", "model.d_model=32"]
    sets += ["model.n_heads=2", "model.n_layers=1", "model.d_ff=64", "model.max_length=128"]
    sets += ["train.epochs=2", "train.max_tokens=300", "train.progress=false", "data.beam_size=1"]
    sets += [f"out_dir={tmp_path / 'run'}"]
    assert main(["train", *(item for o in sets for item in ("--set", o))]) == 0
    lines = ["A dog runs on the beach.", "Two men sit on a bench."]
    saved, examples, data = _data(tmp_path / "run" / "best.pt", lines)
    assert data["task"] == "translate"
    translations = saved.predict(lines, "<test>")
    for sentence, example, translation in zip(
        data["sentences"], examples, translations, strict=True
    ):
        assert sentence["translation"] == translation  # what `treeattn translate` writes
        words, nodes = sentence["words"], sentence["nodes"]  # the encoder's pieces
        assert "".join(words).replace("\u2581", " ").split() == example.words
        cross, shares = sentence["panels"][-2:]
        assert cross["cols"] == nodes + words and cross["rows"][-1] == "</s>"
        rows = torch.tensor(cross["values"][0]).view(len(cross["rows"]), -1) / SCALE
        bound = len(cross["cols"]) * 0.5 / SCALE
        assert torch.allclose(rows.sum(-1), torch.ones(len(rows)), atol=bound)
        on_nodes = rows[:, : len(nodes)].sum(-1).mean()
        assert shares["values"][0][0] / SCALE == pytest.approx(float(on_nodes), abs=bound)


def test_a_parsers_page_shows_its_trees_and_label_heads(tmp_path, browser):
    from tests.test_parser import SMALL, TOY
    from treeattn.analysis.label_heads import label_head_contributions
    from treeattn.parsing import Parser

    trees = tmp_path / "toy.txt"
    trees.write_text("".join(line + "\n" for line in TOY * 3), encoding="utf-8")
    sets = ["task=parse", "data.name=files", *SMALL, "train.epochs=20"]
    sets += [f"data.paths.{split}={trees}" for split in ("train", "dev", "test")]
    sets += ["model.lal_feed_forward=false", "train.progress=false", f"out_dir={tmp_path}"]
    assert main(["train", *(item for o in sets for item in ("--set", o))]) == 0
    lines = ["a dog ran .", "the cat sat on the mat ."]
    page = view_page(tmp_path / "best.pt", lines)
    data = json.loads(re.search(r'id="view-data">(.*?)</script>', page, re.S).group(1))
    parser = Parser.load(tmp_path / "best.pt", "cpu")
    for sentence, line, parse in zip(data["sentences"], lines, parser.parse(lines), strict=True):
        assert sentence["words"] == line.split() and sentence["arcs"] == parse.dependencies.heads
        over, spans = sentence["panels"]
        assert over["cols"] == ["<s>", *line.split(), "</s>"]
        weights = torch.tensor(over["values"][0]).view(len(over["rows"]), -1) / SCALE
        assert torch.allclose(weights.sum(-1), torch.ones(len(weights)), atol=0.01)
        expected = label_head_contributions(parser, line.split())
        assert len(spans["rows"]) == len(expected)
        shares = torch.tensor(spans["values"][0]).view(len(expected), -1) / SCALE
        contributions = torch.tensor([span.contributions for span in expected])
        assert (shares - contributions).abs().max() <= 0.5 / SCALE + 1e-6
    assert _open(browser, page, tmp_path / "page.html") == []
    assert len(browser.find_elements("css selector", "svg.tree")) == len(lines)


def test_view_takes_a_shipped_parsers_name_and_names_its_heads_by_label(tmp_path):
    from treeattn.parsing import Parser

    text = tmp_path / "sentences.txt"
    text.write_text("Dogs don't bark.\nThe cat sat.\n", encoding="utf-8")
    page = tmp_path / "page.html"
    assert main(["view", "fast", str(text), "-o", str(page), "--max-heads", "3"]) == 0
    payload = re.search(r'id="view-data">(.*?)</script>', page.read_text(encoding="utf-8"), re.S)
    data = json.loads(payload.group(1))
    labels = Parser.load("fast").vocab.labels.names[1:]  # one head per label, in order
    over = data["sentences"][0]["panels"][0]
    assert over["rows"] == [f"{h + 1} {label}" for h, label in enumerate(labels[:3])]
    assert any("named after its label" in note for note in data["notes"])
    assert [s["text"] for s in data["sentences"]] == ["Dogs don't bark.", "The cat sat."]
    assert data["sentences"][0]["words"] == ["Dogs", "do", "n't", "bark", "."]


def test_a_classifier_on_raw_text_is_headed_by_the_text_and_draws_no_arcs_without_labels(
    runs, tmp_path
):
    saved = load_trained(runs("vanilla"), "cpu")
    lines = ["[MAX 2 9 ]", "  [MIN 3 [MAX 4 5 ] ]"]
    page = view_page(runs("vanilla"), lines)
    data = json.loads(re.search(r'id="view-data">(.*?)</script>', page, re.S).group(1))
    assert [s["text"] for s in data["sentences"]] == [line.strip() for line in lines]
    examples = saved.task.read_inputs(lines, "<test>")
    assert all(s["arcs"] is None for s in data["sentences"])  # operators: no PTB labels
    assert all(ex.tree is not None for ex in examples)
    assert "1 layer," not in page and "2 layers, 2 heads shown" in page


def test_arcs_come_only_from_trees_with_labels_head_rules_know():
    from treeattn.analysis.page_data import head_rule_arcs, labelled
    from treeattn.trees import Tree, binarize

    parsed = Tree.parse("(S (NP (PRP It)) (VP (VBD was) (RB n't) (ADJP (JJ good))) (. .))")
    assert labelled(parsed) and head_rule_arcs(parsed).heads == [2, 0, 2, 2, 2]  # "was": root
    # As SST's trees and those made like them: binarized, every label hidden.
    hidden = binarize(parsed)
    for node in hidden.subtrees():
        node.label = "X"
    assert not labelled(hidden) and head_rule_arcs(hidden) is None


SST_LINES = [
    "(3 (2 It) (3 (2 was) (3 good)))",
    "(1 (2 The) (1 (2 film) (1 (2 was) (1 dull))))",
    "(4 (2 A) (4 (4 (2 fine) (2 ,) (3 funny)) (2 film)))",
]


def test_a_classifier_on_parser_trees_shows_the_tree_it_read_and_says_why_no_arcs(tmp_path):
    from treeattn.parsing import Parser
    from treeattn.trees import Tree

    (tmp_path / "sst").mkdir()
    for split in ("train", "dev", "test"):
        (tmp_path / "sst" / f"{split}.txt").write_text("\n".join(SST_LINES) + "\n")
    run = tmp_path / "run"
    sets = ["task=classify", "data.name=sst5", f"data.root={tmp_path}", "data.trees=parser"]
    sets += ["data.parser=fast", "model.attention=hierarchical", "model.d_model=16"]
    sets += ["model.n_heads=2", "model.d_ff=32", "model.n_layers=1", "train.epochs=1"]
    sets += ["train.progress=false", f"out_dir={run}"]
    assert main(["train", *(item for o in sets for item in ("--set", o))]) == 0
    line = "It wasn't good at all."
    data = json.loads(
        re.search(r'id="view-data">(.*?)</script>', view_page(run / "best.pt", [line]), re.S)[1]
    )
    (sentence,) = data["sentences"]
    assert sentence["text"] == line and sentence["arcs"] is None
    assert any(
        note.startswith("no dependency arcs for 1 tree without Penn") for note in data["notes"]
    )
    # The tree drawn is the parser's, as the model read it: binarized, its labels hidden.
    parsed = Parser.load("fast").parse([sentence["words"]])[0].tree
    saved = load_trained(run / "best.pt", "cpu")
    read = saved.task.training_tree(parsed)
    phrases = {(s, e) for s, e in _spans(sentence["tree"]) if e - s > 1}
    assert isinstance(read, Tree) and phrases == {(s, e) for _, s, e in read.spans() if e - s > 1}
    labels = []

    def walk(node):
        labels.append(node["label"])
        for child in node["children"]:
            if not isinstance(child, int):
                walk(child)

    walk(sentence["tree"])
    assert set(labels) == {"X"}


# -- what the page says it draws -------------------------------------------------------


def _page_data(page: str) -> dict:
    return json.loads(re.search(r'id="view-data">(.*?)</script>', page, re.S).group(1))


RELATIVE = "I saw the dog of the man that barked at me."


def test_a_ud_parsers_arcs_are_labelled_named_and_counted_where_they_leave_its_tree():
    from treeattn.parsing import Parser

    parser = Parser.load("accurate", "cpu")
    lines = [RELATIVE, "The dog chased the cat."]
    page = view_page("accurate", lines)
    data = _page_data(page)
    assert data["arcs_line"].startswith("arcs: the parser's UD dependencies (Universal Dep")
    assert html.escape(data["arcs_line"]) in page
    differ = []
    for sentence, parse in zip(data["sentences"], parser.parse(lines), strict=True):
        ud, own = parse.dependencies, parse.tree_dependencies
        assert sentence["arcs"] == ud.heads and sentence["relations"] == ud.relations
        count = sum(a != b for a, b in zip(ud.heads, own.heads, strict=True))
        word = "word" if count == 1 else "words"
        assert sentence["arcs_note"] == (
            "arcs: the parser's UD dependencies, which may attach a phrase elsewhere than the "
            f"tree does; {count} {word} of {len(ud.heads)} differ"
        )
        differ.append(count)
    assert differ[0] > 0  # the relative clause hangs from another word than in the tree
    # Asked for the tree's own arcs, the page draws them and says nothing more.
    data = _page_data(view_page("accurate", lines[:1], dependencies="tree"))
    (sentence,) = data["sentences"]
    own = parser.parse(lines[:1])[0].tree_dependencies
    assert sentence["arcs"] == own.heads and sentence["relations"] == own.relations
    assert sentence["arcs_note"] == "" and data["arcs_line"].startswith("arcs: the head-rule")


def test_view_help_says_which_arcs_a_parsers_page_draws(capsys):
    with pytest.raises(SystemExit):
        main(["view", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "its UD dependencies for a parser trained on them" in shown
    assert "--dependencies" in shown


def test_a_models_page_names_its_trees_and_their_head_rule_arcs(runs):
    from treeattn.trees import to_dependency

    data = _page_data(view_page(runs("vanilla"), LINES))
    assert data["trees_line"] == "trees: given in the input" and data["arcs_line"] == ""
    *_, data = _data(runs("vanilla"))
    assert data["trees_line"] == "trees: gold (the data's own)"
    assert {s["tree_origin"] for s in data["sentences"]} == {"gold"}
    saved = load_trained(runs("vanilla"), "cpu")
    data = view_data(saved, [LabeledSentence(["Dogs", "bark", "loudly", "."], -1)], "<t>", "t")
    (sentence,) = data["sentences"]
    assert data["trees_line"] == "trees: the parser's"
    assert data["arcs_line"].startswith("arcs: the head-rule dependencies of the constituency")
    from treeattn.parsing import Parser

    tree = Parser.load("accurate", "cpu").parse([["Dogs", "bark", "loudly", "."]])[0].tree
    expected = to_dependency(tree)
    assert sentence["arcs"] == expected.heads and sentence["relations"] == expected.relations
    assert sentence["arcs_note"] == ""


def test_the_notice_on_hidden_labels_is_only_on_pages_whose_trees_hide_them(runs):
    page = view_page(runs("vanilla"), LINES)
    (note,) = _page_data(page)["notes"]
    need = "without Penn Treebank labels, which head rules need"
    assert note == f"no dependency arcs for {len(LINES)} trees {need}"
    assert "SST" not in page and "hidden" not in page
    saved = load_trained(runs("vanilla"), "cpu")
    from treeattn.tasks.sentences import binary_unlabeled
    from treeattn.trees import Tree

    sst_like = binary_unlabeled(Tree.parse("(S (NP (DT The) (NN film)) (VP (VBD was) (JJ dull)))"))
    data = view_data(saved, [LabeledSentence(sst_like.leaves(), -1, sst_like)], "<t>", "t")
    (note,) = data["notes"]
    assert note.startswith("no dependency arcs for 1 tree without Penn Treebank labels")
    assert "SST's trees, and those made like them, are binarized with their labels hidden" in note


def test_a_tree_transformers_listops_page_draws_its_induced_tree_not_the_gold_one(runs):
    from treeattn.analysis.induction import induce_trees

    saved, examples, data = _data(runs("constituent"))
    assert data["trees_line"].startswith("trees: induced from the model's links")
    (note,) = data["notes"]
    assert "read off the model's links has no labels" in note and "SST" not in note
    unlike_gold = 0
    for sentence, example in zip(data["sentences"], examples, strict=True):
        assert sentence["tree_origin"] == "induced" and sentence["arcs"] is None
        induced = induce_trees(saved, [sentence["words"]])[0]
        drawn = {(s, e) for s, e in _spans(sentence["tree"]) if e - s > 1}
        assert drawn == {(s, e) for _, s, e in induced.spans() if e - s > 1}
        gold = {(s, e) for _, s, e in example.tree.spans() if e - s > 1}
        unlike_gold += drawn != gold
    assert unlike_gold  # the page is not drawing the tree the model never read
    page = view_page(runs("constituent"), LINES)
    assert "trees: induced from the model&#x27;s links" in page


def _controls(page: str) -> tuple[bool, bool]:
    """Whether the page's header has a layer slider, and a head menu."""
    header = page.split("</header>")[0]
    return 'id="layer"' in header, 'id="head"' in header


def test_the_page_shows_only_the_controls_with_something_to_choose(runs):
    assert _controls(view_page(runs("vanilla"), LINES)) == (True, True)  # 2 layers, 2 heads
    assert _controls(view_page(runs("vanilla"), LINES, max_heads=1)) == (True, False)
    one_layer = runs("vanilla").parent.parent / "one-layer"
    sets = [*TINY, "train.epochs=1", "model.n_layers=1", f"out_dir={one_layer}"]
    assert main(["train", *(item for o in sets for item in ("--set", o))]) == 0
    page = view_page(one_layer / "best.pt", LINES)
    assert _controls(page) == (False, True) and "click a word" in page.split("</header>")[0]
    parser_page = view_page("fast", ["The cat sat."])
    assert _controls(parser_page) == (False, False)  # label attention heads, no layers
    assert "click a word" not in parser_page.split("</header>")[0]


def test_the_model_page_module_names_no_mechanism():
    """The model's page asks each mechanism what to draw (``MechanismView``); a parser's
    label attention and a translation's cross-attention are drawn in modules of their own."""
    from treeattn.models.registry import encoder_names

    source = (Path(__file__).parents[1] / "src/treeattn/analysis/view.py").read_text()
    names = [*encoder_names(), "label attention", "LabelAttention", "Tree Transformer"]
    named = [name for name in names if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", source)]
    assert named == []
