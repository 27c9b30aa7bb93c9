"""Where `make demo`'s time goes: the one-off builds (from the environments' own records) and
a run folder's parts (each variant's engine startup and steps, the comparison), side by side.

    .venv/bin/python benchmarks/demo_time.py outputs/2026-12-03/demo

The builds: `.engines/llamacpp/BUILD.json` (download, configure, compile seconds, as
tools/build_llamacpp.py measured them). The run: every sidecar's `duration_s` and each
variant's `startup_s` (start → ready). What neither records (pip installs, the GGUF
conversion, papermill's kernel starts between steps) is the difference to the wall time
you measure around `make demo` with `time`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]


def _sidecars(folder: Path) -> list[tuple[str, float]]:
    out = []
    for path in sorted(folder.glob("[0-9][0-9]_*.json")):
        if ".attempt-" in path.name:
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        out.append((path.stem, float(data.get("duration_s") or 0.0)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a demo run folder")
    args = parser.parse_args()
    rows: list[tuple[str, float]] = []
    build = KIT / ".engines" / "llamacpp" / "BUILD.json"
    if build.is_file():
        seconds = json.loads(build.read_text())["seconds"]
        rows += [(f"build llama.cpp: {k}", float(v)) for k, v in seconds.items()]
    run_total = 0.0
    for folder in sorted(p for p in args.run.iterdir() if p.is_dir() and not
                         p.name.startswith(".") and p.name != "measure"):
        launch = folder / ".results" / "02_launch.json"
        if launch.is_file():
            startup = json.loads(launch.read_text()).get("startup_s") or 0.0
            rows.append((f"{folder.name}: engine startup", float(startup)))
            run_total += float(startup)
        for step, seconds in _sidecars(folder):
            rows.append((f"{folder.name}: {step}", seconds))
            run_total += seconds
    for step, seconds in _sidecars(args.run):
        rows.append((step, seconds))
        run_total += seconds
    width = max(len(name) for name, _ in rows)
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds:8.1f} s")
    print(f"{'the run (startups + steps)':<{width}}  {run_total:8.1f} s")


if __name__ == "__main__":
    main()
