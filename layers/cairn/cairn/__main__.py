"""``python -m cairn``: the ``cairn`` command."""

import sys

from .cli import main

sys.exit(main())
