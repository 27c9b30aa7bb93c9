"""A recipe's speculative setting (:class:`~benchlib.recipe.Speculative`) as each engine's
own flags: the engine's adapter says them (:meth:`benchlib.adapters.EngineAdapter.
speculative_args`: vLLM's ``--speculative-config``, SGLang's ``--speculative-algorithm``,
llama.cpp's ``--spec-type``, open-jet's ``-d``). A method an engine does not have is refused
by name (exit 2) before anything starts.
"""

from __future__ import annotations

from benchlib.adapters import adapter
from benchlib.recipe import EngineSpec

__all__ = ["speculative_args"]


def speculative_args(engine: EngineSpec) -> list[str]:
    """The flags that give ``engine`` its speculative setting; ``[]`` when it is off."""
    return adapter(engine.kind).speculative_args(engine.speculative)
