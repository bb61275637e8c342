"""The page of ``treeattn view``: its size, the time to build it, and the time it takes to
open in headless Chromium.

Run from the repository root, with trained checkpoints::

    python -m benchmarks.view_page runs/a/best.pt runs/b/best.pt --sentences 20

For each checkpoint: the page for the first ``--sentences`` sentences of ``--split`` (with
every head up to ``--max-heads``), its size in bytes, the seconds ``view_page`` took (model
loading, one forward pass per sentence, rendering), and the time to open it from disk in
headless Chromium (``chromium`` and ``chromedriver`` on PATH, selenium installed): from the
start of navigation until the load event has ended (the script has drawn every tree) and the
heat maps and panels of the sentences on the first screen are drawn (the others are drawn as
they are scrolled to), the median of ``--repeats`` fresh loads. The page's console errors
are counted.

Results go to ``--out`` as ``view_page.json`` and ``view_page.md``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.common import (
    add_run_arguments,
    finish_run_arguments,
    fmt,
    machine_info,
    machine_line,
    markdown_table,
    start_device,
    write_results,
)
from treeattn.analysis.view import view_page
from treeattn.testing.browser import headless_chromium


def open_ms(browser, path: Path) -> tuple[float, int]:
    """Milliseconds from navigation start until the page has loaded and drawn what the
    first screen shows (its heat maps are drawn as they come into view), and the number of
    console errors, for one fresh load of ``path``."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get("about:blank")
    browser.get(path.as_uri())
    if browser.execute_script("return document.body.dataset.ready") != "true":
        raise RuntimeError(f"{path}: the page's script did not finish")
    drawn = WebDriverWait(browser, 30, poll_frequency=0.01).until(
        lambda b: b.execute_script("return document.body.dataset.drawnAt")
    )
    loaded = browser.execute_script(
        "const t = performance.timing; return t.loadEventEnd - t.navigationStart;"
    )
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    return max(float(loaded), float(drawn)), len(errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoints", nargs="+", metavar="MODEL", help="trained checkpoints")
    parser.add_argument("--split", default="test", help="split shown (default test)")
    parser.add_argument("--sentences", type=int, default=20, help="sentences shown (20)")
    parser.add_argument("--max-heads", type=int, default=8, help="heads shown per layer (8)")
    add_run_arguments(parser, "view_page.json/.md", 0.0, "3 sentences", repeats=5)
    args = finish_run_arguments(parser.parse_args())
    if args.quick:
        args.sentences = 3
    device = start_device(args)
    if device is None:
        return
    info = machine_info(device)
    started = time.perf_counter()
    browser, reason = headless_chromium()
    if browser is None:
        print(f"no browser timings: {reason}")
    rows, table = [], []
    try:
        with tempfile.TemporaryDirectory() as folder:
            for checkpoint in args.checkpoints:
                begin = time.perf_counter()
                page = view_page(
                    checkpoint,
                    None,
                    split=args.split,
                    max_sentences=args.sentences,
                    max_heads=args.max_heads,
                    device=str(device),
                )
                build = time.perf_counter() - begin
                path = Path(folder) / "page.html"
                path.write_text(page, encoding="utf-8")
                loads = [open_ms(browser, path) for _ in range(args.repeats)] if browser else []
                row = {
                    "checkpoint": checkpoint,
                    "bytes": len(page.encode("utf-8")),
                    "build_seconds": build,
                    "open_ms": [ms for ms, _ in loads],
                    "open_ms_median": statistics.median(ms for ms, _ in loads) if loads else None,
                    "console_errors": sum(e for _, e in loads),
                }
                rows.append(row)
                table.append(
                    [
                        checkpoint,
                        fmt(row["bytes"] / 1e6, 2),
                        fmt(build, 1),
                        fmt(row["open_ms_median"], 0),
                        row["console_errors"],
                    ]
                )
    finally:
        if browser is not None:
            browser.quit()
    headers = ["model", "page (MB)", "build (s)", "open (ms, median)", "console errors"]
    markdown = f"{machine_line(info)}, torch threads {torch.get_num_threads()}\n\n"
    markdown += markdown_table(headers, table)
    print(markdown)
    write_results(args, "view_page", info, time.perf_counter() - started, markdown, rows=rows)


if __name__ == "__main__":
    main()
