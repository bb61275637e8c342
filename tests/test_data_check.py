"""``treeattn data``: what a data folder holds, on small folders made here."""

from __future__ import annotations

from pathlib import Path

import pytest

from treeattn.cli import main
from treeattn.data.check import DATA_SETS

SST_TREE = "(3 (2 Dogs) (3 bark))\n"
PTB_TREE = "( (S (NP-SBJ (NNS Dogs)) (VP (VBP bark)) (. .)) )\n"
CONLLU = (
    "1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n\n"
)
COLA = "gj04\t1\t\tDogs bark.\n"
CONTENT = {
    "sst": SST_TREE,
    "cola": COLA,
    "ptb-sample": PTB_TREE,
    "ud-en-ewt": CONLLU,
    "multi30k": "A dog.\n",
    "mccoy2020": "my yak does giggle . quest\tdoes my yak giggle ?\n",
}
MCCOY_BRACKETS = "[ [ [ my yak ] [ does giggle ] ] . ] quest\t[ does [ [ my yak ] giggle ] ] ?\n"


@pytest.fixture
def folder(tmp_path) -> Path:
    """Every file of the layout, each holding one sentence."""
    for data_set in DATA_SETS:
        (tmp_path / data_set.folder).mkdir()
        for names in data_set.files.values():
            for name in names:
                content = MCCOY_BRACKETS if "_bracket." in name else CONTENT[data_set.folder]
                (tmp_path / data_set.folder / name).write_text(content)
    (tmp_path / "blimp").mkdir()
    return tmp_path


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["data", *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_a_complete_folder_is_counted_by_split(capsys, folder):
    status, out, _ = run(capsys, str(folder))
    assert status == 0
    assert out.startswith(f"data folder: {folder}\n")
    assert out.count(": ok\n") == 6
    assert "  train  1 trees (the release has 8,544)" in out  # sst
    assert "  out_of_domain_dev  1 sentences (the release has 516)" in out  # cola
    assert "  dev    30 files, 30 trees (the release has 433)" in out  # ptb-sample
    assert "  test   1 sentences (the release has 2,077)" in out  # ud-en-ewt
    assert "  val               3 files, 1 lines each (the release has 1,014)" in out
    assert "  tense.gen      2 files, 1 pairs (the release has 10,000)" in out  # mccoy2020
    assert "also in the folder, read by `treeattn lm-eval`: blimp" in out
    assert "read by no config" not in out
    assert out.endswith("all 6 data sets present and readable\n")


def test_missing_and_unreadable_files_are_named(capsys, folder):
    (folder / "ptb-sample" / "wsj_0005.mrg").unlink()
    (folder / "sst" / "dev.txt").write_text("(3 (2 Dogs) (3 bark)\n")  # unbalanced
    (folder / "multi30k" / "val.fr").write_text("Un chien.\nDeux.\n")
    (folder / "cola" / "in_domain_dev.tsv").write_text("gj04\t2\t\tDogs bark.\n")
    for name in ("train", "dev", "test"):
        (folder / "ud-en-ewt" / f"en_ewt-ud-{name}.conllu").unlink()
    (folder / "mccoy2020" / "tense_bracket.dev").write_text(MCCOY_BRACKETS * 2)
    status, out, _ = run(capsys, str(folder))
    assert status == 2
    assert "ptb-sample: broken\n" in out
    assert "  train  missing 1 of 139 files: wsj_0005.mrg\n" in out
    assert "sst: broken\n" in out
    assert f"  dev    unreadable: {folder / 'sst' / 'dev.txt'}:1" in out
    assert "val.en 1, val.de 1, val.fr 2 lines" in out
    assert "ud-en-ewt: missing\n" in out
    cola_dev = folder / "cola" / "in_domain_dev.tsv"
    assert f"  in_domain_dev      unreadable: {cola_dev}:1:6: label '2' is not 0 or 1" in out
    assert "  tense.dev      unreadable: tense.dev: 1 pairs, but 2 with brackets" in out
    assert " ".join(out.split()).endswith(
        "6 of 6 data sets missing or broken: sst (broken), cola (broken), ptb-sample "
        "(broken), ud-en-ewt (missing), multi30k (broken), mccoy2020 (broken); the configs "
        "that read them cannot run"
    )
    assert max(len(line) for line in out.splitlines() if "unreadable" not in line) <= 80


def test_the_folder_defaults_to_treeattn_data(capsys, folder, monkeypatch):
    monkeypatch.setenv("TREEATTN_DATA", str(folder))
    status, out, _ = run(capsys)
    assert status == 0 and out.startswith(f"data folder: {folder} ($TREEATTN_DATA)\n")


def test_no_folder_is_bad_input(capsys, tmp_path):
    status, out, err = run(capsys, str(tmp_path / "absent"))
    assert status == 2 and not out
    assert err == f"treeattn: error: {tmp_path / 'absent'} is not a folder\n"
