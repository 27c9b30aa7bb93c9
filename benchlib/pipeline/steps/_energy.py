"""The energy side of each measurement: the devices the recipe's engine runs on, sampled
(:class:`~benchlib.energy.EnergySampler`) from an idle window just before the scenario's
requests to its end, summarised over the scenario's own window (its ``duration``) into the
step's results under ``energy`` (:class:`~benchlib.energy.EnergyResult`), with the samples
kept beside the result JSON (``<result>.energy.jsonl``) for plots.

Which devices: the GPUs of an engine on this host — ``CUDA_VISIBLE_DEVICES`` from
``engine.env`` (else the kit's own environment, which the engine inherits), the first tp × pp
of them (or ``hardware.gpu_count``) — through NVML; the CPU packages through RAPL for a
recipe that says it uses no GPU (``hardware.gpu_count: 0``). An endpoint that is not on this
host, or an engine spread over several nodes, gets no figures and the reason: only this
host's devices can be read, and a sum over some of an engine's GPUs would look like all.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from benchlib.adapters import adapter
from benchlib.energy import (
    POWERCAP,
    EnergyResult,
    EnergySampler,
    Want,
    Window,
    choose_gpus,
    open_reader,
)
from benchlib.measure import Endpoint, RunMetrics
from benchlib.recipe import Recipe

__all__ = ["IDLE_S", "INTERVAL_S", "EnergyRun", "energy_jsonl", "is_local_host",
           "scenario_window", "start_energy"]

#: seconds of the idle window before each measurement, and between samples
IDLE_S = 1.5
INTERVAL_S = 0.1


def energy_jsonl(result_json: Path) -> Path:
    """``chat-c1.json`` → ``chat-c1.energy.jsonl``."""
    return result_json.with_name(result_json.stem + ".energy.jsonl")


def is_local_host(host: str) -> bool:
    """Whether ``host`` is this machine: a loopback address, or one a socket can bind to
    (only a local interface's address can be bound; nothing is sent)."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    for family, _, _, _, addr in infos:
        if ipaddress.ip_address(str(addr[0]).split("%")[0]).is_loopback:
            return True
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.bind((addr[0], 0))
            return True
        except OSError:
            continue
    return False


def scenario_window(result: RunMetrics) -> Window | None:
    """The scenario's own window on the ``perf_counter`` clock of its ``start_times``: its
    ``duration`` (the span ``output_throughput`` divides by), ending where its last request
    ended (first send + ``duration_first_send_ms``); None when no request was sent."""
    sent = [t for t in result.start_times if t > 0]
    span_ms, duration = result.duration_first_send_ms, result.duration
    if not sent or span_ms is None or not duration:
        return None
    end = min(sent) + span_ms / 1000.0
    return Window(end - duration, end)


@dataclass
class EnergyRun:
    """One measurement's energy: a started sampler, or the reason there is none; and what
    the choice of devices assumed (flags for the result)."""

    sampler: EnergySampler | None
    reason: str | None = None
    flags: list[str] = field(default_factory=list)

    def abandon(self) -> None:
        """The measurement failed: stop reading, keep nothing."""
        if self.sampler is not None:
            self.sampler.stop(None)

    def finish(self, result: RunMetrics, result_json: Path) -> EnergyResult:
        """Stop reading; the ``energy`` block of the step's results for the measurement
        ``result`` (samples written beside ``result_json``)."""
        if self.sampler is None:
            return EnergyResult(source=None, reason=self.reason)
        window = scenario_window(result)
        got = self.sampler.stop(window, output_tokens=result.total_output_tokens,
                                requests=result.completed)
        flags = list(self.flags)
        by_tokenizer = result.output_tokens_source.tokenizer
        if by_tokenizer and got.energy_j_per_output_token is not None:
            flags.append(f"{by_tokenizer} of {result.completed} requests' output tokens "
                         "were counted with the tokenizer (the server sent no usage)")
        failed = result.failed
        if failed and got.energy_j is not None:
            flags.append(f"{failed} request(s) failed: their energy is in energy_j, their "
                         "tokens are not in the per-token figure, nor they in the per-request "
                         "one")
        path = energy_jsonl(result_json)
        written: str | None = path.name
        try:
            self.sampler.write_samples(path, window)
        except OSError as exc:  # the samples are for plots: their loss is no failed run
            flags.append(f"the samples were not written: {exc}")
            written = None
        return got.model_copy(update={"flags": [*got.flags, *flags],
                                      "samples_file": written})


def _want(recipe: Recipe) -> Want:
    gpus = recipe.hardware.gpu_count
    if gpus == 0:
        return "cpu"
    return "gpu" if gpus or recipe.engine.parallel is not None else "any"


def start_energy(recipe: Recipe, base_url: str, *, idle_s: float = IDLE_S,
                 interval_s: float = INTERVAL_S, powercap: Path = POWERCAP) -> EnergyRun:
    """Start reading the devices of the engine at ``base_url`` (returns after the idle
    window), or say why they cannot be read. ``powercap``: where RAPL's zones are."""
    host = Endpoint.parse(base_url).host
    if not is_local_host(host):
        return EnergyRun(None, f"the endpoint's host {host} is not this machine: its devices "
                               "cannot be read from here")
    nodes = recipe.hardware.nodes
    if nodes > 1:
        return EnergyRun(None, f"the engine spans {nodes} nodes: only this host's devices "
                               "can be read, and their sum would look like the engine's")
    want = _want(recipe)
    flags: list[str] = []
    gpus = None
    if want != "cpu":
        parallel = recipe.engine.parallel
        count = parallel.world_size if parallel is not None else recipe.hardware.gpu_count
        env = dict(recipe.engine.env) if not adapter(recipe.engine.kind).starts_process else {
            **os.environ, **recipe.engine.env}
        choice = choose_gpus(env, count)
        gpus, flags = choice.gpus, list(choice.flags)
        if not adapter(recipe.engine.kind).starts_process and gpus is not None and \
                "CUDA_VISIBLE_DEVICES" not in env:
            flags.append(f"an endpoint on this host: GPUs {gpus} are taken to be its own")
    reader = open_reader(want, gpus, powercap=powercap)
    if isinstance(reader, str):
        return EnergyRun(None, reader)
    if reader.source == "rapl":  # what the choice of GPUs assumed is not what was read
        flags = ["RAPL counts whole CPU packages: the client's own work, and anything else "
                 "running on them, is in the figures too"]
    sampler = EnergySampler(reader, interval_s=interval_s, idle_s=idle_s)
    sampler.start()
    return EnergyRun(sampler, None, flags)
