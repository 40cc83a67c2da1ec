"""``python -m idemflow.cli``: the console script."""

import sys

from idemflow.cli import console

sys.exit(console())
