"""Write notebooks/*.ipynb: thin, one tagged ``parameters`` cell of literals each, no outputs.

The notebooks are generated so their cells stay uniform and stripped; edit this file, then
run ``python tools/make_notebooks.py``. A test checks the committed notebooks match it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

OUT = Path(__file__).resolve().parents[1] / "notebooks"
COMMON = 'recipe_path = ""\nrun_dir = ""\nresults_path = ""'
LOAD = "from benchlib import pipeline as bp\n\nrecipe = bp.load(recipe_path)"

NOTEBOOKS: dict[str, tuple[str, str, list[str]]] = {
    "00_plan": (
        "# 00 · Plan\nWill it fit, before anything is downloaded: weights, KV bytes per token, "
        "KV capacity, max concurrency and the decode floor (`benchlib plan`), then the "
        "scenarios this recipe will run.",
        COMMON,
        [LOAD, "plan, scenarios = bp.plan_step(recipe, results_path)\nbp.plan_table(plan)",
         "display(*bp.plan_charts(plan))", "scenarios"],
    ),
    "01_download": (
        "# 01 · Download\nThe pinned snapshot from the hub (disk space checked first), or the "
        "local folder verified; the resolved commit and a content hash are recorded.",
        COMMON,
        [LOAD, "download = bp.download_model(recipe, results_path)\ndownload"],
    ),
    "02_launch": (
        "# 02 · Launch\nThe runner started the engine (its own process group, log in the run "
        "folder) and waited for it; here: the command, the startup time, what the log says, "
        "and one real token.",
        COMMON + '\nbase_url = ""\nengine_log = ""\ncommand = ""\nstartup_s = None\n'
        'launch_error = ""',
        [LOAD,
         "launch = bp.launch_summary(recipe, base_url=base_url, engine_log=engine_log,\n"
         "                           command=command, startup_s=startup_s,\n"
         "                           launch_error=launch_error, results_path=results_path)\n"
         'print(launch["command"])\nprint(f"ready after {launch[\'startup_s\']} s")',
         'launch["log_facts"]'],
    ),
    "03_measure": (
        "# 03 · Measure\nEvery scenario at every concurrency, with `vllm bench serve`'s "
        "definitions and the wire's accuracy; each result is saved as it finishes.",
        COMMON + '\nbase_url = ""\nmodel_path = ""',
        [LOAD,
         "table = bp.measure_scenarios(recipe, base_url=base_url, run_dir=run_dir,\n"
         "                             results_path=results_path, model_path=model_path)\ntable",
         'bp.measure_figure(table, save_to=f"{run_dir}/measure/summary.png")'],
    ),
    "04_compare": (
        "# 04 · Compare\nThis run beside the recipe's `compare.runs`, and every provenance "
        "difference flagged (`differs`).",
        COMMON + "\nother_runs = []",
        [LOAD,
         "table, provenance = bp.compare_runs([run_dir, *other_runs], results_path)\ntable",
         "provenance"],
    ),
}


def build(name: str) -> nbformat.NotebookNode:
    title, params, cells = NOTEBOOKS[name]
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "benchlib", "display_name": "Python (benchlib)",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [new_markdown_cell(title),
                new_code_cell(params, metadata={"tags": ["parameters"]}),
                *[new_code_cell(c) for c in cells]]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{name}-{i}"
    return nb


def main() -> int:
    OUT.mkdir(exist_ok=True)
    for name in NOTEBOOKS:
        nbformat.write(build(name), str(OUT / f"{name}.ipynb"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
