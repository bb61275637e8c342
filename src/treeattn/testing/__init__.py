"""What the tests and the benchmarks both use: literal reference implementations that the
fast code is checked and timed against (``hierarchical_reference``), and a headless
browser for the viewer's page (``browser``). Nothing in the library imports it."""
