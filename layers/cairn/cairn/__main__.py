"""``python -m cairn``: the ``cairn`` command."""

import sys

from .cli.main import main

sys.exit(main())
