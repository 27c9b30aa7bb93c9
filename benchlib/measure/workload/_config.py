"""The measure run's settings: the workload, plus where to send it and where to write.

One validated object behind the CLI (whose flags are generated from these fields:
:mod:`benchlib.cli.measure`), recipes (``Scenario.measure_config``) and notebooks. Field
names are the CLI flags' (``_`` → ``-``) except where the flag keeps vLLM's spelling
(``--metric-percentiles``) or negates a default (``--no-ignore-eos``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationInfo, field_validator, model_validator

from benchlib.measure.workload._prefix_share import ASSUMED_BLOCK, PREFIX_BLOCK_TOKENS
from benchlib.measure.workload._workload import Workload

__all__ = ["TOKENIZER_REQUIRED", "MeasureConfig"]

#: datasets whose configuration needs the prompts' tokenizer (token counts or ids)
TOKENIZER_REQUIRED = ("random", "text", "trace")


def _https(info: ValidationInfo) -> bool:
    """Whether the (valid) base URL validated before this field is ``https://`` (an invalid
    one has its own error: no second one here)."""
    url = info.data.get("base_url")
    return url is None or str(url).startswith("https://")


class MeasureConfig(Workload):
    """Everything ``benchlib measure`` needs: a :class:`Workload` and its run's particulars."""

    base_url: str = Field(
        description="the server: http://HOST:PORT or https://HOST[:PORT] (a hosted API, a TLS "
                    "proxy), optionally with a path prefix (a trailing /v1 is understood)")
    model: str = Field(description="model name the server serves (the body's model field)")
    tokenizer: Path | None = Field(
        None, validate_default=True,
        description="local tokenizer folder (never downloaded): builds the random and text "
                    "prompts, "
                    "counts file prompts, and counts output tokens when the server sends no "
                    "usage")
    num_prompts: int = Field(
        100, ge=1, description="requests in the timed load (a file dataset: its first this "
                               "many lines)")
    max_concurrency: int | None = Field(
        None, ge=1, description="most requests in flight at once (none: no limit); a released "
                                "request waits for a slot, counted as client queue time")
    result_json: Path | None = Field(
        None, description="write the result JSON here (atomically, at the end) and each "
                          "request's record to <stem>.requests.jsonl beside it, as it ends")
    disable_tqdm: bool = Field(False, description="no progress bar on stderr")
    dataset_skip: int = Field(
        0, ge=0, description="file and conversations datasets: start after this many lines "
                             "(sessions); repeat r ≥ 1 of a measurement starts after the "
                             "lines the earlier repeats and their warmups sent")
    prefix_block: int | None = Field(
        None, ge=1, description="the engine's prefix-cache unit in tokens (vLLM's "
                                "--block-size, SGLang's --page-size, 1 for llama.cpp): a text "
                                "prompt counts as sharing a prefix from one whole unit "
                                "(benchlib.prompt_prefix_share); none: vLLM's GPU default 16, "
                                "said to be assumed")
    prefix_block_from: str = Field(
        "", description="where --prefix-block's number comes from (the engine's flag, its "
                        "/metrics, its default), kept beside it in the result")
    ca_bundle: Path | None = Field(
        None, description="https: trust the CA certificates in this PEM file instead of the "
                          "system's (a self-signed server: its own certificate)")
    insecure: bool = Field(
        False, description="https: do not check the server's certificate or host name (still "
                           "encrypted, not authenticated)")

    def prefix_unit(self) -> tuple[int, str]:
        """The prefix-cache unit the shared-prefix share is counted in, and where it comes
        from (:mod:`benchlib.measure.workload._prefix_share`)."""
        if self.prefix_block is None:
            return PREFIX_BLOCK_TOKENS, ASSUMED_BLOCK
        return self.prefix_block, self.prefix_block_from or "given: --prefix-block"

    def with_prefix_unit(self, block: int, source: str) -> MeasureConfig:
        """This configuration counting its prefix share in the engine's unit ``block``, from
        ``source`` (``EngineAdapter.prefix_block``)."""
        return self.model_copy(update={"prefix_block": block, "prefix_block_from": source})

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https:// (for example "
                             "http://127.0.0.1:8000)")
        from benchlib.measure.wire._endpoint import Endpoint

        Endpoint.parse(value)  # a host, a port that is a number
        return value.rstrip("/")

    @field_validator("ca_bundle")
    @classmethod
    def _pem_file(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is not None:
            if not _https(info):
                raise ValueError("only for an https:// base URL")
            if not value.is_file():
                raise ValueError(f"no such file: {value}")
        return value

    @field_validator("insecure")
    @classmethod
    def _insecure(cls, value: bool, info: ValidationInfo) -> bool:
        if value and not _https(info):
            raise ValueError("only for an https:// base URL")
        if value and info.data.get("ca_bundle") is not None:
            raise ValueError("give a CA bundle or insecure, not both (insecure checks no "
                             "certificate)")
        return value

    @field_validator("tokenizer")
    @classmethod
    def _random_needs_tokenizer(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is None and info.data.get("dataset") in TOKENIZER_REQUIRED:
            raise ValueError(f"required for the {info.data['dataset']} dataset")
        return value

    @model_validator(mode="after")
    def _workers_have_work(self) -> MeasureConfig:
        if self.workers is not None:
            share = min(self.num_prompts, self.max_concurrency or self.num_prompts)
            if self.workers > share:
                what = ("max_concurrency" if self.max_concurrency is not None
                        and self.max_concurrency < self.num_prompts else "num_prompts")
                raise ValueError(f"workers: {self.workers} workers for {what} {share}: each "
                                 "worker needs at least one request and one slot")
        return self
