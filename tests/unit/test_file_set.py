"""Putting a set of files into a folder all at once (cairn.bundle.file_set): a failure part way puts back all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cairn.bundle import file_set


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {
        path.relative_to(folder).as_posix(): None if path.is_dir() else path.read_bytes()
        for path in sorted(folder.rglob("*"))
    }


def test_a_failure_part_way_puts_back_every_file_replaced_and_removes_every_one_added(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "a.txt").write_text("mine\n")
    (folder / "old.whl").write_text("an older wheel\n")
    before = snapshot(folder)
    real_replace = os.replace
    moves: list[str] = []

    def failing_replace(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        moves.append(str(target))
        if len(moves) == 4:
            raise PermissionError("denied")
        real_replace(source, target)

    with file_set.staging_folder(folder) as staging:
        for relative, text in {"a.txt": "new\n", "b/c.txt": "c\n", "d.txt": "d\n"}.items():
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            (staging / relative).write_text(text)
        staged = file_set.staged_files(staging)
        file_set.check_targets(folder, staged)
        monkeypatch.setattr(os, "replace", failing_replace)
        with pytest.raises(PermissionError):
            file_set.place(folder, staging, staged, remove=["old.whl"])
        monkeypatch.setattr(os, "replace", real_replace)

    assert len(moves) > 4  # three moved in, the removal failed, then the three put back
    assert snapshot(folder) == before


def test_files_move_in_and_each_one_replaced_or_removed_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "same.txt").write_text("same\n")
    (folder / "a.txt").write_text("mine\n")
    (folder / "old.whl").write_text("an older wheel\n")

    with file_set.staging_folder(folder) as staging:
        for relative, text in {"a.txt": "new\n", "b/c.txt": "c\n", "same.txt": "same\n"}.items():
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            (staging / relative).write_text(text)
        (staging / "b" / "__pycache__").mkdir()
        (staging / "b" / "__pycache__" / "c.cpython-312.pyc").write_bytes(b"")
        placed = file_set.place(folder, staging, file_set.staged_files(staging), remove=["old.whl"])

    assert (placed.written, placed.replaced, placed.removed) == (["b/c.txt"], ["a.txt"], ["old.whl"])
    assert snapshot(folder) == {"a.txt": b"new\n", "b": None, "b/c.txt": b"c\n", "same.txt": b"same\n"}
