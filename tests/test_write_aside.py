"""Files written whole or not at all."""

from __future__ import annotations

import pytest

from treeattn.write_aside import write_aside


def test_the_file_appears_whole_and_nothing_is_left_beside_it(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old", encoding="utf-8")
    with write_aside(path) as partial:
        partial.write_text("new", encoding="utf-8")
        assert path.read_text(encoding="utf-8") == "old"  # not yet replaced
        assert partial.parent == path.parent and partial.name.endswith(".partial")
    assert path.read_text(encoding="utf-8") == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_an_error_while_writing_keeps_the_old_file_and_removes_the_part(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError, match="stopped"):
        with write_aside(path) as partial:
            partial.write_text("half", encoding="utf-8")
            raise RuntimeError("stopped")
    assert path.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_block_that_writes_nothing_fails_without_touching_the_file(tmp_path):
    path = tmp_path / "out.txt"
    with pytest.raises(FileNotFoundError):
        with write_aside(path):
            pass
    assert not any(tmp_path.iterdir())
