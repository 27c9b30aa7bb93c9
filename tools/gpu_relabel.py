"""A GPU recipe relabelled for the card the device tool lent (docs/gpu-run.md).

The device tool may lend an H100 when a visit asks for an H200 (visits 7 and 8 ran on one).
A recipe that names the H200 would then stop at its hardware check, or, where its pattern
admits the H100, plan the H200's KV budget and decode floor beside the H100's measurements.
Visit 7 relabelled its recipe by hand before the first call; this does it there, at the
run's start, from the GPU the run finds (NVML, as the run's provenance reads it):

- the recipe's ``plan.gpu`` names a catalogue GPU, and the GPU found is another catalogue
  entry: the copy written beside the recipe sets ``plan.gpu`` to that entry, the hardware
  pattern to its name and ``min_gpu_memory_gib`` to 95 % of its memory, and says so in
  ``hardware.notes`` and the description (the report's title) (recorded in the run's
  ``recipe.json``; the committed recipe unchanged);
- the GPU is the plan's, or the catalogue lacks it or the plan's, or the plan describes its
  card by hand (``gpu_memory_gib``, ``gpu_bandwidth_gbs``), or no GPU is found: the recipe as
  it is (the run's own checks then say what is wrong).

The plan then sizes this card, so the run's 00_plan verdict says whether the recipe fits it.

``python tools/gpu_relabel.py RECIPE`` prints the path to run (the copy or the recipe).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import yaml

__all__ = ["relabel", "relabelled_path"]

#: plan keys that describe a card by hand (not a catalogue entry): such a plan is left alone
_OWN_CARD = {"gpu_memory_gib", "gpu_bandwidth_gbs"}

#: the share of the lent card's memory its relabelled ``min_gpu_memory_gib`` asks for (NVML
#: reports a little less than the catalogue's total on some drivers)
MEMORY_SHARE = 0.95


def relabel(doc: dict[str, Any], device_name: str, memory_gib: float) -> dict[str, Any] | None:
    """``doc`` (a recipe's YAML) relabelled for a device (its NVML name and total memory),
    or None when it needs none (the plan's GPU, a card the catalogue lacks, no plan.gpu)."""
    from benchlib import UsageError
    from benchlib.memory import entry_for_device, find_gpu

    plan = doc.get("plan")
    if not isinstance(plan, dict) or plan.keys() & _OWN_CARD:
        return None  # no plan, or a card described by hand: the run's checks say
    planned = plan.get("gpu")
    if not isinstance(planned, str) or not planned:
        return None
    try:
        planned_entry = find_gpu(planned)
    except UsageError:  # a GPU the catalogue lacks: the recipe's own check names it
        return None
    entry = entry_for_device(device_name, memory_gib)
    if entry is None or entry.name == planned_entry.name:
        return None
    out = dict(doc)
    out["plan"] = {**plan, "gpu": entry.name}
    hardware = dict(doc.get("hardware") or {})
    was = hardware.get("gpu_name_pattern")
    hardware["gpu_name_pattern"] = re.escape(device_name)
    hardware["min_gpu_memory_gib"] = round(MEMORY_SHARE * entry.memory_gib, 1)
    # the card's name and catalogue entry only: the note is hashed with the recipe, and both
    # halves of a run in parts must write the same copy (NVML's memory varies by driver)
    said = (f"relabelled for the lent {device_name} by "
            f"tools/gpu_relabel.py: plan.gpu {planned} -> {entry.name}, gpu_name_pattern "
            f"{was!r} -> the lent card's name; the committed recipe names {planned}")
    hardware["notes"] = f"{hardware['notes']}; {said}" if hardware.get("notes") else said
    out["hardware"] = hardware
    # the report's title is the description: it must not name a card the run did not use
    out["description"] = (f"{doc.get('description') or doc.get('name', '')} [run on a lent "
                          f"{entry.name}, planned for it; the recipe names {planned}]")
    return out


def relabelled_path(recipe: Path) -> Path:
    """The copy's path: beside the recipe (its relative paths keep their base)."""
    return recipe.with_name(f"{recipe.stem}.lent.yaml")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recipe", type=Path)
    args = parser.parse_args(argv)
    from benchlib.provenance import collect_hardware

    gpus = collect_hardware().gpus
    doc = yaml.safe_load(args.recipe.read_text())
    new = relabel(doc, gpus[0].name, gpus[0].memory_total_gib) if gpus else None
    if new is None:
        print(args.recipe)
        return 0
    dest = relabelled_path(args.recipe)
    dest.write_text(yaml.safe_dump(new, sort_keys=False, allow_unicode=True))
    print(new["hardware"]["notes"], file=sys.stderr)
    print(dest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
