"""Entry point of ``python -m simulator``."""

from __future__ import annotations

import sys

from simulator.cli import main

sys.exit(main())
