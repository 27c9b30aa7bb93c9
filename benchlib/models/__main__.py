"""``python -m benchlib.models``: prepare the real model (``benchlib real-model``'s flags) in
an interpreter that has numpy, tokenizers, torch and transformers but not the kit's own
dependencies, such as a GPU machine's python3 (see :mod:`benchlib.models._real_model`)."""

import sys

from benchlib.models._real_model import main

sys.exit(main())
