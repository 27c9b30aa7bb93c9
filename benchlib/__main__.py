"""``python -m benchlib`` = the ``benchlib`` command."""

import sys

from benchlib.cli import main

sys.exit(main())
