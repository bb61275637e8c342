"""Errors for bad input: each names the file, line and column of the problem."""

from __future__ import annotations


class FormatError(ValueError):
    """Input that cannot be read: malformed brackets, mismatched leaves, empty lines, ...

    ``source`` is a file name (or ``"<string>"``); ``line`` and ``column`` are 1-based and
    may be ``None`` when the problem has no single position.
    """

    def __init__(
        self,
        message: str,
        source: str = "<string>",
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.column = column
        where = source
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        super().__init__(f"{where}: {message}")
