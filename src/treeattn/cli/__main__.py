"""``python -m treeattn.cli``, as torchrun starts it: ``torchrun ... -m treeattn.cli train``."""

import sys

from treeattn.cli import main

sys.exit(main())
