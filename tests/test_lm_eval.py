"""The language-model evaluator: scores of a model whose probabilities are a known table
(BLiMP accuracy, SyntaxGym region surprisals and formulas, pseudo-log-likelihoods, both
variants, computed by hand), the formula parser on every shipped suite, bad input named
by file and line, and tiny random ``transformers`` models (GPT-2, BERT with a masked-LM
head, tokenizers trained here) scored through the same call as the project's own."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from treeattn.cli import main
from treeattn.errors import FormatError
from treeattn.evaluation import evaluate_language_model
from treeattn.evaluation.agreement import read_agreement, score_agreement
from treeattn.evaluation.blimp import read_pairs, score_blimp
from treeattn.evaluation.formulas import parse_formula
from treeattn.evaluation.scoring import (
    LN2,
    MASKED,
    PLL_WORD_L2R,
    Scorer,
    TableModel,
)
from treeattn.evaluation.syntaxgym import CIRCUITS, read_suite, score_suites, suite_files

FIXTURES = Path(__file__).parent / "fixtures"
LOG = math.log

# p(piece | previous piece): "the dog barks" is likelier than "the dog bark".
BIGRAMS = {
    ("<s>", "the"): 0.5,
    ("the", "dog"): 0.4,
    ("the", "dogs"): 0.2,
    ("dog", "barks"): 0.6,
    ("dog", "bark"): 0.1,
    ("dogs", "bark"): 0.5,
    ("dogs", "barks"): 0.05,
}


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _pair(good: str, bad: str, term: str, uid: str = "agr") -> dict:
    return {
        "sentence_good": good,
        "sentence_bad": bad,
        "linguistics_term": term,
        "UID": uid,
        "field": "morphology",
    }


def test_blimp_accuracy_of_a_table_model_is_the_hand_count(tmp_path):
    path = _jsonl(
        tmp_path / "agr.jsonl",
        [
            _pair("the dog barks", "the dog bark", "agreement"),  # 0.6 > 0.1: right
            _pair("the dogs bark", "the dogs barks", "agreement"),  # 0.5 > 0.05: right
            _pair("the dogs barks", "the dog barks", "other"),  # .2*.05 < .4*.6: wrong
        ],
    )
    scorer = Scorer(TableModel(BIGRAMS))
    result = score_blimp(scorer, read_pairs(path))
    assert result.good[0] == pytest.approx(LOG(0.5) + LOG(0.4) + LOG(0.6))
    assert result.bad[0] == pytest.approx(LOG(0.5) + LOG(0.4) + LOG(0.1))
    assert result.right == [True, True, False]
    assert result.overall == pytest.approx(200 / 3)
    assert result.by("phenomenon") == {
        "agreement": {"accuracy": 100.0, "count": 2},
        "other": {"accuracy": 0.0, "count": 1},
    }
    assert result.by("field")["morphology"]["count"] == 3
    path = _jsonl(tmp_path / "x.jsonl", [{**_pair("a", "b", "x"), "field": "syntax/semantics"}])
    assert read_pairs(path)[0].field == "syntax_semantics"  # as BLiMP's other files write it


def test_a_blimp_line_without_a_sentence_is_an_error_naming_file_and_line(tmp_path):
    path = _jsonl(tmp_path / "bad.jsonl", [_pair("a", "b", "x"), {"sentence_good": "a b"}])
    with pytest.raises(FormatError, match=rf"{path}:2: no sentence_bad"):
        read_pairs(path)
    path.write_text('{"sentence_good": "a", "sentence_bad": "b"}\nnot json\n', encoding="utf-8")
    with pytest.raises(FormatError, match=rf"{path}:2:1: not JSON"):
        read_pairs(path)


def _suite(path: Path, formula: str, conditions: dict[str, list[str]]) -> Path:
    items = [
        {
            "item_number": 1,
            "conditions": [
                {
                    "condition_name": name,
                    "regions": [
                        {"region_number": k, "content": c} for k, c in enumerate(regions, 1)
                    ],
                }
                for name, regions in conditions.items()
            ],
        }
    ]
    raw = {
        "meta": {"name": path.stem, "metric": "sum"},
        "region_meta": {},
        "predictions": [{"type": "formula", "formula": formula}],
        "items": items,
    }
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def test_region_surprisals_and_a_formula_with_sums_and_a_conjunction(tmp_path):
    # Region 2 of "match" is empty: no text, no space, surprisal 0; region 3 has two words.
    formula = "[(2;%match%) + (3;%match%)] < [(2;%mismatch%) + (3;%mismatch%)] & (1;%match%) > 0"
    path = _suite(
        tmp_path / "number_toy.json",
        formula,
        {"match": ["the", "", "dog barks"], "mismatch": ["the", "dogs", "barks"]},
    )
    suite = read_suite(path)
    assert suite.items[0].conditions["match"].sentence == "the dog barks"
    result = score_suites(Scorer(TableModel(BIGRAMS)), [suite])
    bits = result.suites[0].surprisals[0]
    assert bits["match", 1] == pytest.approx(-LOG(0.5) / LN2)
    assert bits["match", 2] == 0.0
    assert bits["match", 3] == pytest.approx(-(LOG(0.4) + LOG(0.6)) / LN2)
    assert bits["mismatch", 3] == pytest.approx(-LOG(0.05) / LN2)
    # 2.06 bits against 2.32 + 4.32: the sums hold, and region 1 is above 0.
    assert result.suites[0].held == [[True]]
    assert result.overall == 100.0
    # The same prediction, reversed, fails; and one of two conjuncts failing fails it.
    for flipped in (formula.replace("] < [", "] > ["), formula.replace("> 0", "> 5")):
        suite = read_suite(
            _suite(
                path,
                flipped,
                {"match": ["the", "", "dog barks"], "mismatch": ["the", "dogs", "barks"]},
            )
        )
        assert score_suites(Scorer(TableModel(BIGRAMS)), [suite]).overall == 0.0


def test_formula_grammar():
    values = {("a", 1): 1.0, ("b", 1): 2.0, ("a", 2): 3.0}
    assert parse_formula("(1;%a%) - (1;%b%) + (2;%a%) = 2").holds(values)  # left to right
    assert parse_formula("[(1;%a%) > (1;%b%)] | [(2;%a%) > 2.5]").holds(values)
    assert not parse_formula("[(1;%a%) > (1;%b%)] & [(2;%a%) > 2.5]").holds(values)
    assert parse_formula("(1;%a%) = 1.0005").holds(values)  # SyntaxGym's tolerance
    for bad, column in (("(1;%a%) <", 10), ("[(1;%a%) < (1;%b%)", 19), ("(1;%a%) < 2 2", 13)):
        with pytest.raises(FormatError, match=rf"suite.json:4:{column}: "):
            parse_formula(bad, "suite.json", 4)


def test_every_shipped_suite_and_its_predictions_parse(shared_data):
    files = suite_files(shared_data / "syntaxgym")
    assert len(files) == 34
    suites = [read_suite(f) for f in files]
    assert sum(len(s.predictions) for s in suites) == 36
    named = {s for group in CIRCUITS.values() for s in group}
    assert {s.name for s in suites} - named == {"nn-nv-rpl"}


def test_pseudo_log_likelihood_by_token_and_by_word_left_to_right():
    # A masked table model: p(piece | the next piece as seen). "un_happy dog" is one word
    # of two pieces, then "dog".
    table = {
        ("happy", "un"): 0.3,
        ("<mask>", "un"): 0.2,
        ("dog", "happy"): 0.6,
        ("</s>", "dog"): 0.7,
    }
    model = TableModel(table, kind=MASKED)
    token = Scorer(model).score(["un_happy dog"])[0]
    assert token.log_probs == pytest.approx([LOG(0.3), LOG(0.6), LOG(0.7)])
    l2r = Scorer(model, pll=PLL_WORD_L2R).score(["un_happy dog"])[0]
    # "un" is scored with "happy" masked too, as the word's later piece.
    assert l2r.log_probs == pytest.approx([LOG(0.2), LOG(0.6), LOG(0.7)])
    assert l2r.total == pytest.approx(LOG(0.2) + LOG(0.6) + LOG(0.7))


def test_batches_and_repeats_change_no_score():
    texts = ["the dog barks", "the dogs bark", "the dog bark", "the dog barks"]
    model = TableModel(BIGRAMS)
    one_by_one = [Scorer(model, batch_tokens=1).score([t])[0].total for t in texts]
    together = [s.total for s in Scorer(model, batch_tokens=64).score(texts)]
    assert together == pytest.approx(one_by_one)


def _agreement_files(folder: Path) -> Path:
    base = folder / "linzen_testset"
    base.mkdir(parents=True)
    (base / "subj_agr_filtered.text").write_text(
        "the dog barks <eos>\nthe dogs bark loud <eos>\n", encoding="utf-8"
    )
    (base / "subj_agr_filtered.gold").write_text(
        "2\tbarks\tbark\t0\n2\tbark\tbarks\t1\n", encoding="utf-8"
    )
    return folder


def test_agreement_compares_the_two_forms_by_attractors(tmp_path):
    items = read_agreement("linzen", _agreement_files(tmp_path))
    assert items[1].text("barks", whole=False) == ("the dogs barks", (9, 14))
    result = score_agreement(Scorer(TableModel(BIGRAMS)), "linzen", items)
    assert result.correct[0] == pytest.approx(LOG(0.6))
    assert result.wrong[1] == pytest.approx(LOG(0.05))
    assert result.by_attractors() == {
        "0": {"accuracy": 100.0, "count": 1},
        "1": {"accuracy": 100.0, "count": 1},
    }


def test_the_shipped_agreement_sets_read(shared_data):
    linzen = read_agreement("linzen", shared_data / "sva")
    gulordava = read_agreement("gulordava", shared_data / "sva")
    assert len(linzen) == 7489 and len(gulordava) == 410
    assert {item.kind for item in gulordava} == {"original", "generated"}
    assert linzen[0].words[linzen[0].target] == linzen[0].correct == "is"


# -- transformers models, built from tiny configs ------------------------------------------

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

CORPUS = ["the dog barks .", "the dogs bark .", "a cat sleeps here", "the keys are lost"] * 10


def _gpt2():
    raw = tokenizers.ByteLevelBPETokenizer()
    raw.train_from_iterator(CORPUS, vocab_size=300, special_tokens=["<|endoftext|>"])
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw._tokenizer, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
    )
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_embd=16, n_layer=2, n_head=2, n_positions=64
    )
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config), tokenizer


def _bert():
    raw = tokenizers.BertWordPieceTokenizer(lowercase=True)
    raw.train_from_iterator(CORPUS, vocab_size=120, min_frequency=1)
    cls, sep = raw.token_to_id("[CLS]"), raw.token_to_id("[SEP]")
    raw._tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw._tokenizer,
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        unk_token="[UNK]",
        mask_token="[MASK]",
    )
    config = transformers.BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return transformers.BertForMaskedLM(config), tokenizer


def test_a_tiny_gpt2_scores_each_piece_given_the_ones_before(tmp_path):
    from treeattn.evaluation import TransformersLM

    model, tokenizer = _gpt2()
    lm = TransformersLM(model, tokenizer, "causal")
    text = "the dogs bark ."
    scores = Scorer(lm).score([text, "a cat"])[0]
    ids = [tokenizer.bos_token_id, *tokenizer(text)["input_ids"]]
    with torch.no_grad():
        log_probs = model(torch.tensor([ids])).logits[0].log_softmax(-1)
    expected = [log_probs[t, ids[t + 1]].item() for t in range(len(ids) - 1)]
    assert scores.log_probs == pytest.approx(expected, abs=1e-5)


def test_a_tiny_bert_pseudo_log_likelihood_masks_each_piece(tmp_path):
    from treeattn.evaluation import TransformersLM

    model, tokenizer = _bert()
    lm = TransformersLM(model, tokenizer, "masked")
    text = "the dogs bark here"
    scores = Scorer(lm).score([text, "a cat"])[0]
    ids = tokenizer(text)["input_ids"]  # [CLS] pieces [SEP]
    assert lm.prefix == ids[:1] and lm.suffix == ids[-1:] and len(ids) == 6
    expected = []
    with torch.no_grad():
        for i in range(1, len(ids) - 1):
            masked = list(ids)
            masked[i] = tokenizer.mask_token_id
            logits = model(torch.tensor([masked])).logits[0, i]
            expected.append(logits.log_softmax(-1)[ids[i]].item())
    assert scores.log_probs == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("build", [_gpt2, _bert])
def test_a_transformers_folder_is_scored_through_the_command(tmp_path, build, capsys):
    model, tokenizer = build()
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    pairs = _jsonl(tmp_path / "p.jsonl", [_pair("the dog barks .", "the dog bark .", "agr")])
    suite = _suite(
        tmp_path / "toy.json",
        "(2;%a%) < (2;%b%)",
        {"a": ["the dog", "barks"], "b": ["the dog", "bark"]},
    )
    out, plot = tmp_path / "scores.json", tmp_path / "phenomena.png"
    argv = [
        "lm-eval",
        str(folder),
        "--only",
        "blimp",
        "syntaxgym",
        "--blimp",
        str(pairs),
        "--syntaxgym",
        str(suite),
        "-o",
        str(out),
        "--plot",
        str(plot),
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "BLiMP by phenomenon" in printed and "SyntaxGym by circuit" in printed
    scores = json.loads(out.read_text())
    assert scores["kind"] == ("causal" if build is _gpt2 else "masked")
    assert scores["blimp"]["count"] == 1 and len(scores["blimp"]["pairs"]) == 1
    assert set(scores["syntaxgym"]["by_suite"]["toy"]["by_item"][0]["surprisals"]) == {"a", "b"}
    assert plot.stat().st_size > 0
    # The same model through the library call gives the same scores.
    again = evaluate_language_model(folder, blimp=pairs, syntaxgym=suite, agreement=None)
    assert again.to_dict()["blimp"]["pairs"] == scores["blimp"]["pairs"]


def test_a_bad_input_leaves_no_json(tmp_path, capsys):
    model, tokenizer = _gpt2()
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    bad = _jsonl(tmp_path / "p.jsonl", [{"sentence_good": "a"}])
    out = tmp_path / "scores.json"
    assert (
        main(["lm-eval", str(folder), "--only", "blimp", "--blimp", str(bad), "-o", str(out)]) == 2
    )
    assert f"{bad}:1: no sentence_bad" in capsys.readouterr().err
    assert not out.exists()


def test_a_project_masked_lm_checkpoint_is_scored_on_raw_text(tmp_path):
    # A Tree Transformer over lowercased words (punctuation kept, no start token).
    checkpoint = FIXTURES / "legacy-text-constituent.pt"
    pairs = _jsonl(tmp_path / "p.jsonl", [_pair("The dogs bark.", "The dogs barks.", "agr")])
    result = evaluate_language_model(
        checkpoint, blimp=pairs, syntaxgym=None, agreement=None, device="cpu"
    )
    assert result.kind == "masked" and len(result.results["blimp"].pairs) == 1
    from treeattn.evaluation import ProjectLM

    lm = ProjectLM.load(checkpoint, "cpu")
    pieces = lm.pieces("The dogs bark.")
    assert pieces.spans == [(0, 3), (4, 8), (9, 13), (13, 14)]
    assert pieces.ids == lm.task.vocab.encode(["the", "dogs", "bark", "."])
    assert lm.prefix == [] and lm.kind == "masked"


def test_the_command_names_the_code_s_variants():
    from treeattn.cli import lm_eval
    from treeattn.evaluation.scoring import PLL_VARIANTS
    from treeattn.models.packaged_lm import PACKAGED_LMS

    assert lm_eval.PLL_VARIANTS == PLL_VARIANTS
    assert lm_eval.PACKAGED_LMS == tuple(PACKAGED_LMS)


def test_own_files_without_phenomena_print_a_table_by_file(tmp_path):
    bare = {"sentence_good": "the dog barks", "sentence_bad": "the dog bark"}
    wrong = {"sentence_good": "the dogs barks", "sentence_bad": "the dog barks"}
    first = _jsonl(tmp_path / "mine.jsonl", [bare, bare])
    second = _jsonl(tmp_path / "theirs.jsonl", [bare, wrong])
    result = evaluate_language_model(
        TableModel(BIGRAMS), blimp=[first, second], syntaxgym=None, agreement=None
    )
    printed = result.format().splitlines()
    at = printed.index("BLiMP by paradigm (file)  accuracy       n")
    assert printed[at + 1].split() == ["mine", "100.0", "2"]
    assert printed[at + 2].split() == ["theirs", "50.0", "2"]
    # No table of "unknown" alone: the overall score stands by itself.
    assert not any("unknown" in line for line in printed)
    assert ["overall", "75.0", "4"] in [line.split() for line in printed]


def test_limit_is_recorded_and_printed_as_a_subset(tmp_path):
    path = _jsonl(tmp_path / "agr.jsonl", [_pair("the dog barks", "the dog bark", "agr")] * 3)
    kept = evaluate_language_model(TableModel(BIGRAMS), blimp=path, syntaxgym=None, agreement=None)
    assert kept.to_dict()["limit"] is None and "subset" not in kept.format()
    cut = evaluate_language_model(
        TableModel(BIGRAMS), blimp=path, syntaxgym=None, agreement=None, limit=2
    )
    assert cut.to_dict()["limit"] == 2 and cut.to_dict()["blimp"]["count"] == 2
    assert "subset  the first 2 pairs or items of each file and set" in cut.format()


def test_a_masked_model_without_its_mlm_head_is_refused(tmp_path, capsys):
    model, tokenizer = _bert()
    folder = tmp_path / "encoder"
    model.bert.save_pretrained(folder)  # the bare encoder: no masked-LM head
    tokenizer.save_pretrained(folder)
    pairs = _jsonl(tmp_path / "p.jsonl", [_pair("the dog barks .", "the dog bark .", "agr")])
    out = tmp_path / "scores.json"
    argv = ["lm-eval", str(folder), "--kind", "masked", "--only", "blimp", "--blimp", str(pairs)]
    assert main([*argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no weights for cls.predictions." in err and "needs its masked-LM head" in err
    assert not out.exists()
    # The same folder with its head is scored.
    model.save_pretrained(folder)
    assert main([*argv, "-o", str(out)]) == 0 and out.is_file()


def test_perplexity_of_a_table_model_is_the_hand_count(tmp_path, capsys):
    from treeattn.evaluation import evaluate_language_model

    text = tmp_path / "held-out.txt"
    text.write_text("the dog barks\n\nthe dogs bark\n", encoding="utf-8")
    result = evaluate_language_model(
        TableModel(BIGRAMS), blimp=None, syntaxgym=None, agreement=None, perplexity=text
    )
    total = LOG(0.5) + LOG(0.4) + LOG(0.6) + LOG(0.5) + LOG(0.2) + LOG(0.5)
    x = result.results["perplexity"]
    assert (x.lines, x.words, x.pieces) == (2, 6, 6)  # the blank line is no text
    assert x.log_prob == pytest.approx(total)
    assert x.per_word == pytest.approx(math.exp(-total / 6))
    assert result.headline() == {"perplexity_per_word": x.per_word}
    assert "perplexity of" in result.format() and '"per_word"' in result.to_json()
    (tmp_path / "blank.txt").write_text("\n \n", encoding="utf-8")
    with pytest.raises(ValueError, match="blank.txt: no text to score"):
        evaluate_language_model(
            TableModel(BIGRAMS),
            blimp=None,
            syntaxgym=None,
            agreement=None,
            perplexity=tmp_path / "blank.txt",
        )


def test_perplexity_alone_needs_its_file(capsys):
    from treeattn.cli import main

    assert main(["lm-eval", "smollm2-135m", "--only", "perplexity"]) == 2
    assert "--only perplexity needs --perplexity FILE" in capsys.readouterr().err
