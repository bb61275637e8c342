"""Text files read strictly as UTF-8: a byte that is not UTF-8 is a ``FormatError`` naming
the file, line and column; line breaks and a byte-order mark are read as Python's text
mode and the ``utf-8-sig`` codec read them."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

from treeattn.errors import FormatError


def read_utf8(path: str | os.PathLike[str]) -> str:
    """The text of a UTF-8 file, with line breaks read as Python's text mode reads them.

    ``\\r\\n`` and a lone ``\\r`` become ``\\n``, as with ``open(path, encoding="utf-8")``. A
    byte-order mark at the start is dropped, as the ``utf-8-sig`` codec does, so it does not
    become part of the first token. Bytes that are not UTF-8 raise ``FormatError`` naming
    the file, line and column (in characters, after the mark) of the first bad byte,
    instead of a bare ``UnicodeDecodeError``.
    """
    return decode_utf8(Path(path).read_bytes(), str(path))


def decode_utf8(data: bytes, source: str) -> str:
    """``read_utf8`` for bytes read elsewhere (standard input); ``source`` names them."""
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        before = _universal_newlines(data[: error.start].decode("utf-8"))  # valid up to here
        line = before.count("\n") + 1
        column = len(before) - before.rfind("\n")
        raise FormatError(
            f"not valid UTF-8: {error.reason} (byte 0x{data[error.start]:02x})",
            source,
            line,
            column,
        ) from error
    return _universal_newlines(text)


def _universal_newlines(text: str) -> str:
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def text_lines(text: str) -> list[str]:
    """The lines of a one-item-per-line text. Blank lines at the end are allowed and left
    out; one between items stays, for the reader to report."""
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return lines
