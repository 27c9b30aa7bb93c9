"""A recipe's scenario: one workload (:class:`~benchlib.measure.Workload`'s settings, with
a recipe's defaults and its seeding), measured at each concurrency in turn; how it becomes
one measurement's :class:`~benchlib.measure.MeasureConfig`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import ConfigDict, Field, model_validator

from benchlib.measure import (
    EndpointSetting,
    MeasureConfig,
    OutputLen,
    RequestTimeout,
    Warmups,
    Workload,
)
from benchlib.recipe._seeding import SeededWorkload

__all__ = ["Scenario"]


class Scenario(SeededWorkload):
    """One workload, measured at each concurrency in turn.

    Its settings are :class:`~benchlib.measure.Workload`'s (the same fields, descriptions
    and checks as ``benchlib measure``'s flags; ``concurrency_seeds``: :mod:`._seeding`),
    with a recipe's defaults (chat, one warmup) and its YAML key ``request_timeout_s``;
    :meth:`measure_config` turns it into a run's :class:`~benchlib.measure.MeasureConfig`.
    """

    # the snapshot (recipe.json) keeps the YAML's keys, so it loads back as a recipe
    model_config = ConfigDict(serialize_by_alias=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="unique within the recipe: "
                      "names the scenario's results and files")
    endpoint: EndpointSetting = "chat"
    output_len: OutputLen = 128
    num_warmups: Warmups = 1
    request_timeout: Annotated[RequestTimeout, Field(alias="request_timeout_s")] = 600.0
    concurrencies: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1], min_length=1,
        description="max_concurrency of each measurement, in order")
    num_prompts: int | list[Annotated[int, Field(ge=1)]] = Field(
        8, description="per concurrency: one number for all, or one per concurrency")
    ramp_input_lens: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=list,
        description="long-context ramp: one request per input length, in order, at "
                    "concurrency 1, stopping at the first failure (seed 003's test)")
    sdk_view: bool = Field(
        False, description="after each concurrency, send the same shape of requests (next "
                           "seed) through the openai SDK's streaming client and report what "
                           "an application sees beside the wire figures (results' sdk block)")
    max_failed_fraction: float = Field(
        0.0, ge=0.0, le=1.0,
        description="failed requests a concurrency may have, as a fraction of those sent, "
                    "and still count as done (a resumed run measures it again otherwise; "
                    "the step fails); 0: any failure is measured again")

    @model_validator(mode="after")
    def _shape(self) -> Scenario:
        if isinstance(self.num_prompts, int):
            if self.num_prompts < 1:
                raise ValueError("num_prompts must be ≥ 1")
        elif len(self.num_prompts) != len(self.concurrencies):
            raise ValueError(f"num_prompts lists {len(self.num_prompts)} counts for "
                             f"{len(self.concurrencies)} concurrencies")
        if self.ramp_input_lens and self.dataset not in ("random", "text"):  # exact lengths
            raise ValueError("ramp_input_lens needs the random or text dataset")
        if self.ramp_input_lens != sorted(self.ramp_input_lens):
            raise ValueError("ramp_input_lens must go up")
        prompts = [self.num_prompts] if isinstance(self.num_prompts, int) else self.num_prompts
        least = min(*self.concurrencies, *prompts, *([1] if self.ramp_input_lens else []))
        if self.workers is not None and self.workers > least:
            raise ValueError(f"workers {self.workers}: a measurement here has only {least} "
                             "requests or slots, and each worker needs one")
        return self

    @property
    def request_timeout_s(self) -> float:
        """The YAML key's spelling of :attr:`request_timeout`."""
        return self.request_timeout

    def measure_config(self, *, base_url: str, model: str, tokenizer: Path | None,
                       result_json: Path | None, max_concurrency: int | None,
                       num_prompts: int, input_len: int | None = None,
                       num_warmups: int | None = None, disable_tqdm: bool = True,
                       ca_bundle: Path | None = None, insecure: bool = False,
                       seed: int | None = None) -> MeasureConfig:
        """The run of this scenario at one concurrency (or one ramp length): every workload
        setting as the recipe gives it; ``input_len``, ``num_warmups`` and ``seed`` override
        the scenario's (a ramp step: its length, no warmup; a concurrency: :meth:`seed_at`)."""
        workload = {name: getattr(self, name) for name in Workload.model_fields}
        if input_len is not None:
            workload["input_len"] = input_len
        if num_warmups is not None:
            workload["num_warmups"] = num_warmups
        if seed is not None:
            workload["seed"] = seed
        return MeasureConfig(**workload, base_url=base_url, model=model, tokenizer=tokenizer,
                             result_json=result_json, max_concurrency=max_concurrency,
                             num_prompts=num_prompts, disable_tqdm=disable_tqdm,
                             ca_bundle=ca_bundle, insecure=insecure)

    def prompts_at(self, index: int) -> int:
        """The number of prompts to send at ``concurrencies[index]``."""
        n = self.num_prompts
        return n if isinstance(n, int) else n[index]
