"""The workload: what is sent and how. One model behind the recipe's scenarios and the CLI.

:class:`Workload` holds every setting a recipe scenario and ``benchlib measure`` share
(endpoint, dataset, lengths, arrivals, warmups, seed, timeout, percentiles, goodput,
sampling). :class:`~benchlib.measure.MeasureConfig` adds where to send and where to write (the
CLI's flags are generated from its fields); the recipe's ``Scenario`` adds its name,
concurrencies and prompt counts. So a setting added here is at once a YAML key, a
``benchlib measure`` flag and a :func:`~benchlib.measure.measure` option, documented by its
description.

Where the two consumers want different defaults (a scenario streams ``chat`` and sends one
warmup; the CLI streams ``completions`` with none) or spellings (YAML's
``request_timeout_s``), the subclass restates the field with the ``Annotated`` type below,
which carries the description and the constraints: only the default or the alias differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationInfo,
    field_validator,
    model_validator,
)

from benchlib.measure.wire._request import EndpointKind
from benchlib.measure.workload._datasets import DatasetKind
from benchlib.measure.workload._sampling import ServerDefault, check_sampling

__all__ = ["EndpointSetting", "OutputLen", "RequestTimeout", "Warmups", "Workload"]

#: the API streamed from (restated by subclasses with their own default)
EndpointSetting = Annotated[EndpointKind, Field(
    description="API to stream from: completions (/v1/completions, a prompt string) or chat "
                "(/v1/chat/completions, messages)")]
#: requests sent before the timed load (restated by subclasses with their own default)
Warmups = Annotated[int, Field(
    ge=0, description="requests sent before the timed load (vllm bench serve's "
                      "--num-warmups), left out of every metric: prompts of the same "
                      "distribution that no measured request repeats (their own seed, "
                      "benchlib.measure.workload._seeds), unless warmups_like_vllm")]
#: seconds a request may take (restated by the recipe under its YAML key request_timeout_s)
RequestTimeout = Annotated[float, Field(
    gt=0, description="seconds a request may take, send → end of its response, before it "
                      "fails as timed out")]
_OUTPUT_LEN_DOC = ("tokens to generate per request, sent as max_tokens (completions) or "
                  "max_completion_tokens (chat); exactly this many with ignore_eos. Required "
                  "for the random and text datasets (the centre of the drawn range); for a file, a "
                  "line's own output_len wins and null sends no limit")
#: the output length where it cannot be null (a recipe scenario's: the random dataset)
OutputLen = Annotated[int, Field(ge=1, description=_OUTPUT_LEN_DOC)]

_SLOS = ("ttft", "tpot", "e2el")


class Workload(BaseModel):
    """The settings of one measured workload, shared by recipe scenarios and the CLI."""

    # inf (request_rate) round-trips through a JSON snapshot as "Infinity"
    model_config = ConfigDict(extra="forbid", frozen=True, ser_json_inf_nan="strings")

    endpoint: EndpointSetting = "completions"
    dataset: DatasetKind = Field(
        "random", description="random: prompts of random token ids with exact, verified "
                              "token counts (vllm bench serve's random dataset); text: real "
                              "prose from the kit's corpus (the Python Language Reference's "
                              "topics, PSF-2.0), an instruction then a passage, cut to the "
                              "same drawn lengths in exact tokens (as SGLang's random "
                              "dataset fills its lengths with real text); sglang-random: "
                              "SGLang's bench_serving random dataset as it builds it (its "
                              "length draw, numpy-seeded like SGLang's --seed; the corpus's "
                              "passages shuffled, each encoded, cut or repeated to the drawn "
                              "length and decoded), the corpus in place of ShareGPT; needs "
                              "range_ratio_mode sglang; file: prompts read from dataset_path; "
                              "trace: a request trace in Mooncake's JSONL format replayed at "
                              "its own times (benchlib.measure.workload._trace); conversations: "
                              "multi-turn chat sessions from dataset_path, each turn sent with "
                              "its history (benchlib.measure.load._conversations)")
    dataset_path: Path | None = Field(
        None, validate_default=True,
        description='the file dataset: JSONL, one {"prompt": …} or {"messages": […]} per '
                    'line, each with an optional "output_len"; the trace dataset: JSONL, '
                    'one {"timestamp": ms, "input_length": …, "output_length": …, '
                    '"hash_ids": […]} per line (Mooncake\'s format); the conversations '
                    'dataset: JSONL, one {"id": …, "turns": [user message, …]} per line')
    conversation_think_s: float = Field(
        0.5, ge=0, description="the conversations dataset: seconds a session waits after a "
                               "reply before its next turn (the user reading and typing)")
    trace_time_scale: float = Field(
        1.0, gt=0, description="the trace dataset: multiplies the trace's times (0.5 replays "
                               "it twice as fast, 2 half as fast)")
    input_len: int = Field(
        1024, ge=1, description="prompt tokens the server receives per request (random and "
                                "text datasets; the centre of the drawn range)")
    output_len: Annotated[int | None, Field(ge=1, validate_default=True,
                                            description=_OUTPUT_LEN_DOC)] = 128
    range_ratio_mode: Literal["vllm", "sglang"] = Field(
        "vllm", description="how random_range_ratio r spreads a length L: vllm draws from "
                            "[⌊L(1−r)⌋, ⌈L(1+r)⌉], sglang from [max(1, ⌊L·r⌋), L]")
    random_range_ratio: float = Field(
        0.0, ge=0.0, description="spread of the random and text datasets' input and output "
                                 "lengths "
                                 "(see range_ratio_mode): 0 sends exactly input_len and "
                                 "output_len; [0, 1) in vllm mode, [0, 1] in sglang mode")
    request_rate: float = Field(
        float("inf"), gt=0, description="mean requests released per second; inf releases all "
                                        "at once (vllm bench serve's default)")
    burstiness: float = Field(
        1.0, gt=0, description="gamma shape of the gaps between releases: 1 Poisson, < 1 "
                               "burstier, > 1 more even, inf fixed gaps (as vllm bench serve)")
    num_warmups: Warmups = 0
    repeats: int = Field(
        1, ge=1, description="times the measurement runs, each on fresh prompts of the same "
                             "distribution (repeat r ≥ 1 seeded derive(seed, 'repeat', r), "
                             "benchlib.measure.workload._seeds): its headline figures get "
                             "bootstrap 95 % intervals over the repeats; with 1 the intervals come "
                             "from the requests of the one run and say so")
    warmups_like_vllm: bool = Field(
        False, description="send the first measured prompt as every warmup, as vllm bench "
                           "serve does (like-for-like comparisons with it); an engine with a "
                           "prefix cache then answers the first measured request from cache")
    request_timeout: RequestTimeout = 600.0
    ignore_eos: bool = Field(
        True, description="send ignore_eos, so the engine generates exactly output_len "
                          "tokens; false lets the model stop at its end-of-sequence token")
    seed: int = Field(
        0, description="seeds the random and text datasets' prompts and lengths and the "
                       "arrival gaps "
                       "(the gaps are the ones vllm bench serve draws with the same seed)")
    percentiles: tuple[float, ...] = Field(
        (50.0, 90.0, 95.0, 99.0),
        description="percentiles reported for every latency metric, each in (0, 100]: keys "
                    "p{P}_{metric}_ms, e.g. p99_ttft_ms, p99.9_itl_ms")
    goodput: dict[str, float] = Field(
        default_factory=dict,
        description="service-level objectives in ms (ttft, tpot, e2el) for request_goodput: "
                    "a request is good when it meets every one given (vllm bench serve's "
                    "definitions)")
    workers: int | None = Field(
        None, ge=1, description="client processes sending the load, each with its own event "
                                "loop and connections, the one schedule dealt among them "
                                "(none: enough that none reads more streams than one process "
                                "reads accurately, measured; at most one per CPU but one)")
    ray_address: str | None = Field(
        None, description="send the load from a Ray cluster's nodes (HOST:PORT of its head, "
                          "or auto): workers become Ray actors spread over the nodes, each "
                          "host timing its own requests; needs benchlib[distributed] on "
                          "every node")
    sampling: dict[str, JsonValue] | ServerDefault = Field(
        default_factory=dict,
        description="extra request-body fields (temperature, top_p, stop, …), merged over "
                    "benchlib's own (temperature 0, ignore_eos, the token limit); or "
                    "server-default: no sampling key at all (temperature, top_p, top_k, "
                    "min_p, seed, penalties), the server's defaults decide, as a client that "
                    "sends none; the length keys (output_len, ignore_eos) are sent either way "
                    "and the result records every key sent (benchlib.sent_keys)")

    @field_validator("dataset_path")
    @classmethod
    def _file_needs_path(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is None and info.data.get("dataset") in ("file", "trace", "conversations"):
            raise ValueError(f"required for the {info.data['dataset']} dataset")
        return value

    @field_validator("output_len")
    @classmethod
    def _random_needs_output_len(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None and info.data.get("dataset") in ("random", "text", "sglang-random"):
            raise ValueError(f"required for the {info.data['dataset']} dataset")
        return value

    @field_validator("random_range_ratio")
    @classmethod
    def _ratio(cls, value: float, info: ValidationInfo) -> float:
        if info.data.get("range_ratio_mode") == "vllm" and value >= 1:
            raise ValueError("must be in [0, 1) in vllm mode")
        if value > 1:
            raise ValueError("must be in [0, 1]")
        return value

    @model_validator(mode="after")
    def _sglang_draw(self) -> Workload:
        if self.dataset == "sglang-random" and self.range_ratio_mode != "sglang":
            raise ValueError("range_ratio_mode: the sglang-random dataset draws its lengths as "
                             "SGLang does; set range_ratio_mode sglang")
        return self

    @field_validator("sampling")
    @classmethod
    def _sampling_keys(cls, value: dict[str, JsonValue] | ServerDefault
                       ) -> dict[str, JsonValue] | ServerDefault:
        return value if isinstance(value, str) else check_sampling(value)

    @field_validator("percentiles")
    @classmethod
    def _pct(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        for p in value:
            if not 0 < p <= 100:
                raise ValueError(f"{p} is not a percentile in (0, 100]")
        return value

    @field_validator("goodput")
    @classmethod
    def _slo(cls, value: dict[str, float]) -> dict[str, float]:
        for key, ms in value.items():
            if key not in _SLOS:
                raise ValueError(f"unknown SLO {key!r}: use ttft, tpot or e2el")
            if ms <= 0:
                raise ValueError(f"{key} SLO must be > 0 ms, got {ms}")
        return value
