"""``python -m benchlib`` = the ``benchlib`` command."""

import sys

from benchlib._cli import main

sys.exit(main())
