"""``benchlib measure``'s flags are generated from MeasureConfig: one flag per field, today's
spellings and defaults, and a bad value names its flag."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from benchlib._exceptions import UsageError
from benchlib.cli import build_parser
from benchlib.cli.measure import config_from_args, flag_table
from benchlib.measure import MeasureConfig, Prompt, build_body, sent_keys

GOLDEN = json.loads((Path(__file__).parent / "golden" / "head.json").read_text())
#: the flags `benchlib measure` had before they were generated (--sampling is new)
FLAGS_BEFORE = {
    "--base-url", "--model", "--endpoint", "--dataset", "--dataset-path", "--input-len",
    "--output-len", "--random-range-ratio", "--range-ratio-mode", "--num-prompts",
    "--max-concurrency", "--request-rate", "--burstiness", "--num-warmups", "--request-timeout",
    "--no-ignore-eos", "--tokenizer", "--seed", "--metric-percentiles", "--goodput",
    "--result-json", "--api-key", "--disable-tqdm",
}
#: flags added since: the sampling fields, and TLS (--header is no field: its values are secrets)
FLAGS_ADDED = {"--sampling", "--ca-bundle", "--insecure", "--header", "--workers", "--ray-address",
               "--warmups-like-vllm", "--repeats", "--trace-time-scale",
               "--conversation-think-s", "--dataset-skip", "--prefix-block",
               "--prefix-block-from"}
#: the defaults of the fields added since the golden configs were taken
FIELDS_ADDED = {"ca_bundle": None, "insecure": False, "workers": None, "ray_address": None,
                "warmups_like_vllm": False, "repeats": 1, "trace_time_scale": 1.0,
                "conversation_think_s": 0.5, "dataset_skip": 0, "prefix_block": None,
                "prefix_block_from": ""}


def _measure_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = sub.choices["measure"]
    return parser


def _parse(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(["measure", *argv])


def _plain(cfg: MeasureConfig) -> Any:
    return json.loads(json.dumps(cfg.model_dump(), default=str))


def test_every_field_has_a_flag_and_every_flag_a_field() -> None:
    actions = [a for a in _measure_parser()._actions if a.option_strings != ["-h", "--help"]]
    flags = {s for a in actions for s in a.option_strings}
    assert flags == FLAGS_BEFORE | FLAGS_ADDED
    by_field = {a.dest for a in actions
                if a.option_strings not in (["--api-key"], ["--header"])}
    assert by_field == set(MeasureConfig.model_fields)
    assert len(flag_table()) == len(MeasureConfig.model_fields)
    for a in actions:  # the help is the field's description
        if a.dest in MeasureConfig.model_fields:
            assert (MeasureConfig.model_fields[a.dest].description or "?")[:30] in (a.help or "")


@pytest.mark.parametrize("name", ["minimal", "file", "every"])
def test_flags_give_the_config_they_gave_before(name: str) -> None:
    """Same argv, same MeasureConfig as the hand-written parser built (defaults included)."""
    case = GOLDEN["cli"][name]
    assert _plain(config_from_args(_parse(case["argv"]))) == {**case["config"], **FIELDS_ADDED}


def test_sampling_fields_are_json_values() -> None:
    cfg = config_from_args(_parse(["--base-url", "http://h:1", "--model", "m", "--tokenizer",
                                   "/t", "--sampling", "temperature=0.7", 'stop=["\\n"]',
                                   "reasoning_effort=low"]))
    assert cfg.sampling == {"temperature": 0.7, "stop": ["\n"], "reasoning_effort": "low"}


def test_sampling_server_default_sends_no_sampling_key() -> None:
    cfg = config_from_args(_parse(["--base-url", "http://h:1", "--model", "m", "--tokenizer",
                                   "/t", "--sampling", "server-default", "--output-len", "9"]))
    assert cfg.sampling == "server-default"
    body = json.loads(build_body(Prompt("hi", 1, 9), "completions", "m", ignore_eos=True,
                                 sampling=cfg.sampling))
    assert set(body) == {"model", "prompt", "stream", "stream_options", "max_tokens",
                         "ignore_eos"}
    sent = sent_keys([json.dumps(body).encode()], cfg.sampling)
    assert (sent.sampling, sent.sampling_keys, sent.length_keys) == (
        "server-default", [], ["ignore_eos", "max_tokens"])
    kit = build_body(Prompt("hi", 1, 9), "chat", "m", ignore_eos=False, sampling={"top_p": 1})
    assert sent_keys([kit], {"top_p": 1}).sampling_keys == ["temperature", "top_p"]


@pytest.mark.parametrize("argv,flag", [
    (["--metric-percentiles", "50,150"], "--metric-percentiles"),
    (["--goodput", "ttft:-1"], "--goodput"),
    (["--random-range-ratio", "1"], "--random-range-ratio"),
    (["--dataset", "file"], "--dataset-path"),
    (["--sampling", "=1"], "--sampling"),
])
def test_a_bad_value_names_its_flag_not_the_field(argv: list[str], flag: str) -> None:
    base = ["--base-url", "http://h:1", "--model", "m", "--tokenizer", "/t"]
    with pytest.raises(UsageError) as info:
        config_from_args(_parse(base + argv))
    assert f"{flag}:" in str(info.value), info.value


def test_tls_flags_set_the_tls_fields(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    base = ["--base-url", "https://api.example.com/v1", "--model", "m", "--tokenizer", "/t"]
    cfg = config_from_args(_parse([*base, "--ca-bundle", str(bundle)]))
    assert (cfg.ca_bundle, cfg.insecure) == (bundle, False)
    assert config_from_args(_parse([*base, "--insecure"])).insecure
    args = _parse([*base, "--header", "X-A: 1", "--header", "Authorization: Bearer s"])
    assert args.header == ["X-A: 1", "Authorization: Bearer s"]
    with pytest.raises(UsageError) as info:
        config_from_args(_parse([*base, "--insecure", "--ca-bundle", str(bundle)]))
    assert "--insecure:" in str(info.value)
