"""The SLO search against a live endpoint: each probe one :func:`~benchlib.measure.measure`.

A probe is a normal measurement (the same load generator, result JSON and per-request
``.requests.jsonl`` as ``benchlib measure``) of the base workload at one load: concurrency
``c`` (``max_concurrency=c``, ``prompts_per_slot × c`` requests released at once) or request
rate ``r`` (``request_rate=r``, ``probe_seconds × r`` requests). Its result is judged
against the SLOs (:mod:`benchlib.sweep._slo`) and the search (:mod:`benchlib.sweep._search`)
picks the next load.

Nothing measured is lost: every probe's files are written as it ends, named by its load
(``c8.json``, ``r12.5.json``), and the sweep's summary (``sweep.json``,
:class:`SweepSummary`) is rewritten atomically after each probe, so a sweep stopped halfway
still says what it found. The plot (``sweep.png``) is drawn at the end.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from benchlib._exceptions import MeasureError
from benchlib._secrets import scrub_text
from benchlib.measure import MeasureConfig, MeasureResult, measure
from benchlib.sweep._search import bisect_knee
from benchlib.sweep._slo import Check, Slo, evaluate

__all__ = ["PLOT_NAME", "RUN_SWEEPS", "SUMMARY_NAME", "Probe", "SweepConfig", "SweepSummary",
           "probe_name", "read_sweeps", "run_sweeps", "sweep", "sweep_row"]

#: the summary's file name inside a sweep's folder
SUMMARY_NAME = "sweep.json"
#: the plot's file name beside it
PLOT_NAME = "sweep.png"
#: a run folder's sweeps lie under this subfolder (``RUN/sweep/NAME/sweep.json``): 04_compare
#: and the report draw their curves
RUN_SWEEPS = "sweep"

Mode = Literal["concurrency", "rate"]


class SweepConfig(BaseModel):
    """One SLO search: the workload of every probe, what it must meet, where to look."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base: MeasureConfig = Field(
        description="every probe's workload and endpoint; the swept setting (max_concurrency "
                    "or request_rate), num_prompts (unless fixed) and result_json are set per "
                    "probe")
    mode: Mode = Field("concurrency", description="what is swept")
    slos: tuple[Slo, ...] = Field((), description="percentile SLOs every probe must meet")
    min_good_fraction: float = Field(
        0.9, gt=0, le=1, description="with goodput SLOs (base.goodput): the least fraction "
                                     "of requests that must be good")
    start: float = Field(gt=0, description="the first load probed")
    start_source: str = Field("given", description="where the start came from")
    floor: float = Field(gt=0, description="the lowest load probed")
    ceiling: float = Field(gt=0, description="the highest load probed")
    step: float | None = Field(
        None, gt=0, description="the knee's resolution (default: 1 concurrency; 5 % of the "
                                "last passing rate)")
    num_prompts: int | None = Field(
        None, ge=1, description="requests per probe, fixed; none: prompts_per_slot × "
                                "concurrency, or probe_seconds × rate")
    prompts_per_slot: int = Field(8, ge=1, description="concurrency mode: requests per probe "
                                                       "per concurrency slot")
    probe_seconds: float = Field(20.0, gt=0, description="rate mode: seconds of arrivals per "
                                                         "probe")
    output_dir: Path = Field(description="where the probes, sweep.json and sweep.png go")


class Probe(BaseModel):
    """One probe's load, its verdict, and the figures the curve is drawn from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    load: int | float = Field(description="the concurrency (a whole number) or request rate "
                                          "probed")
    result_json: str = Field(description="the probe's result file, relative to the summary")
    passed: bool = Field(description="every criterion met")
    checks: list[Check] = Field(description="each criterion's value and bound")
    failed_by: list[str] = Field(description="the criteria missed, as the console said them")
    num_prompts: int = Field(description="requests sent")
    completed: int = Field(description="successful requests")
    request_throughput: float | None = Field(description="completed / duration (req/s)")
    request_goodput: float | None = Field(
        description="vllm bench serve's request_goodput: requests meeting every --goodput "
                    "SLO / duration (req/s); null without goodput SLOs")
    output_throughput: float | None = Field(description="output tokens / duration")
    seconds: float = Field(description="wall time of the probe, setup included")


class SweepSummary(BaseModel):
    """``sweep.json``: the search's settings, every probe, and the knee it found."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["benchlib.sweep"] = "benchlib.sweep"
    mode: Mode
    base_url: str
    model: str
    slos: dict[str, float] = Field(description="percentile SLOs: name → limit in ms")
    goodput: dict[str, float] = Field(description="per-request SLOs in ms (vLLM's --goodput)")
    min_good_fraction: float | None = Field(description="the good-fraction bound (null: no "
                                                        "goodput SLOs)")
    start: int | float
    start_source: str
    floor: int | float
    ceiling: int | float
    step: int | float | None
    probes: list[Probe] = Field(default_factory=list, description="in the order they ran")
    knee: int | float | None = Field(None, description="the highest load that met every SLO "
                                                 "(null: none did)")
    first_fail: int | float | None = Field(None, description="the lowest load that missed one")
    ceiling_reached: bool = Field(False, description="the ceiling passed: the knee is at or "
                                                     "above it")
    finished: bool = Field(False, description="the search ran to its end")
    seconds: float = Field(0.0, description="wall time so far")

    def probe_at(self, load: float | None) -> Probe | None:
        """The probe of ``load``, if one ran."""
        return next((p for p in self.probes if p.load == load), None)

    def unit(self) -> str:
        """``concurrency`` or ``req/s``: what the loads are."""
        return "concurrency" if self.mode == "concurrency" else "req/s"


def _as_load(mode: Mode, load: float) -> int | float:
    """A concurrency as the whole number it is; a rate as it is."""
    return int(load) if mode == "concurrency" else load


def probe_name(mode: Mode, load: float) -> str:
    """``c8`` or ``r12.5``: a probe's file stem."""
    return f"c{int(load)}" if mode == "concurrency" else f"r{load:g}"


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _probe_config(cfg: SweepConfig, load: float, result_json: Path) -> MeasureConfig:
    base = cfg.base
    update: dict[str, float | int]
    if cfg.mode == "concurrency":
        n = cfg.num_prompts or cfg.prompts_per_slot * int(load)
        update = {"max_concurrency": int(load), "num_prompts": n}
    else:
        n = cfg.num_prompts or max(1, math.ceil(cfg.probe_seconds * load))
        update = {"request_rate": load, "num_prompts": n}
    percentiles = tuple(sorted({*base.percentiles,
                                *(p for s in cfg.slos if (p := s.percentile) is not None)}))
    return MeasureConfig.model_validate({**base.model_dump(), **update,
                                         "percentiles": percentiles,
                                         "result_json": result_json, "disable_tqdm": True})


def _probe_record(cfg: SweepConfig, load: float, result: MeasureResult, name: str,
                  seconds: float) -> Probe:
    checks = evaluate(result, cfg.slos, cfg.base.goodput, cfg.min_good_fraction)
    return Probe(load=_as_load(cfg.mode, load), result_json=name, passed=all(c.ok for c in checks),
                 checks=checks, failed_by=[c.describe() for c in checks if not c.ok],
                 num_prompts=result.num_prompts, completed=result.completed,
                 request_throughput=result.request_throughput,
                 request_goodput=result.request_goodput,
                 output_throughput=result.output_throughput, seconds=seconds)


def _line(n: int, summary: SweepSummary, probe: Probe) -> str:
    """The console's line for one probe."""
    what = f"concurrency {int(probe.load)}" if summary.mode == "concurrency" \
        else f"rate {probe.load:g} req/s"
    shown = [c.describe() for c in probe.checks if c.name != "failed_requests" or not c.ok]
    goodput = f"; goodput {probe.request_goodput:.3g} req/s" \
        if probe.request_goodput is not None else ""
    return (f"probe {n}: {what}: {'pass' if probe.passed else 'FAIL'}  " + ", ".join(shown)
            + f"{goodput}; {probe.completed}/{probe.num_prompts} ok; {probe.seconds:.1f} s")


def sweep(cfg: SweepConfig, api_key: str | None = None,
          headers: Sequence[tuple[str, str]] = (),
          log: Callable[[str], None] = print) -> SweepSummary:
    """Find the highest load of ``cfg.mode`` that meets every SLO; return (and keep
    rewriting ``output_dir/sweep.json``) the summary, and draw ``sweep.png`` at the end.

    ``log`` gets one line per probe. A probe in which no request succeeded stops the search
    with :class:`~benchlib.MeasureError` (a server that is down, a wrong model name: not a
    load to bisect); its files and the summary so far are kept.
    """
    secrets = [v for v in (api_key, *(value for _, value in headers)) if v]
    out_dir = cfg.output_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = SweepSummary(
        mode=cfg.mode, base_url=cfg.base.base_url, model=cfg.base.model,
        slos={s.name: s.limit_ms for s in cfg.slos}, goodput=dict(cfg.base.goodput),
        min_good_fraction=cfg.min_good_fraction if cfg.base.goodput else None,
        start=_as_load(cfg.mode, cfg.start), start_source=cfg.start_source,
        floor=_as_load(cfg.mode, cfg.floor), ceiling=_as_load(cfg.mode, cfg.ceiling),
        step=cfg.step)
    began = time.perf_counter()

    def save() -> None:
        summary.seconds = time.perf_counter() - began
        text = json.dumps(summary.model_dump(mode="json"), indent=2, allow_nan=False) + "\n"
        _write_atomic(out_dir / SUMMARY_NAME, scrub_text(text, secrets))

    def probe(load: float) -> bool:
        name = probe_name(cfg.mode, load)
        result_json = out_dir / f"{name}.json"
        t0 = time.perf_counter()
        result = measure(_probe_config(cfg, load, result_json), api_key=api_key,
                         headers=headers)
        record = _probe_record(cfg, load, result, result_json.name, time.perf_counter() - t0)
        summary.probes.append(record)
        save()
        log(scrub_text(_line(len(summary.probes), summary, record), secrets))
        if result.completed == 0:
            first = next((e for e in result.errors if e), "unknown error")
            raise MeasureError(scrub_text(
                f"{cfg.mode} {load:g}: all {result.failed} requests failed (first error: "
                f"{first}); the sweep stops here, its probes are in {out_dir}", secrets))
        return record.passed

    save()
    bracket = bisect_knee(probe, start=cfg.start, floor=cfg.floor, ceiling=cfg.ceiling,
                          integer=cfg.mode == "concurrency", step=cfg.step)
    summary.knee, summary.first_fail = (None if x is None else _as_load(cfg.mode, x)
                                        for x in (bracket.passed, bracket.failed))
    summary.ceiling_reached, summary.finished = bracket.ceiling_reached, True
    save()
    from benchlib.sweep._plot import sweep_figure  # matplotlib: only once there is a curve

    sweep_figure([("", summary)]).savefig(out_dir / PLOT_NAME, dpi=110)
    return summary


def read_sweeps(folder: Path) -> list[tuple[str, SweepSummary]]:
    """Every sweep summary under ``folder`` (its own ``sweep.json`` and its subfolders'),
    named by its folder relative to ``folder``, in name order; unreadable ones skipped."""
    found: list[tuple[str, SweepSummary]] = []
    if not folder.is_dir():
        return found
    for path in sorted(folder.rglob(SUMMARY_NAME)):
        try:
            summary = SweepSummary.model_validate_json(path.read_bytes())
        except (OSError, ValueError):
            continue
        name = path.parent.relative_to(folder).as_posix()
        found.append(("" if name == "." else name, summary))
    return found


def run_sweeps(run_dir: str | Path) -> list[tuple[str, SweepSummary]]:
    """The sweeps kept in a run folder (``RUN/sweep/…``): none for most runs."""
    return read_sweeps(Path(run_dir) / RUN_SWEEPS)


def sweep_row(name: str, summary: SweepSummary) -> dict[str, object]:
    """One sweep in a line of a table: the knee, what failed just past it, the SLOs."""
    fail = summary.probe_at(summary.first_fail)
    return {"sweep": name or ".", "mode": summary.mode, "knee": summary.knee,
            "first_fail": summary.first_fail,
            "failed_by": "; ".join(fail.failed_by) if fail is not None else None,
            "ceiling_reached": summary.ceiling_reached, "finished": summary.finished,
            "probes": len(summary.probes),
            "slos": ", ".join(f"{k}={v:g}" for k, v in summary.slos.items()),
            "goodput": ", ".join(f"{k}:{v:g}" for k, v in summary.goodput.items()),
            "start": summary.start, "start_source": summary.start_source}
