"""``benchlib sweep``'s flags: measure's vocabulary, bad input named with exit code 2 before
any request, and the start taken from the memory plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.cli import build_parser, main
from benchlib.cli.sweep import _config

BASE = ["sweep", "--base-url", "http://127.0.0.1:9", "--model", "m", "--input-len", "32",
        "--output-len", "16"]


def _args(tmp_path: Path, *extra: str) -> list[str]:
    return [*BASE, "--tokenizer", str(tmp_path), "--output-dir", str(tmp_path / "out"),
            *extra]


@pytest.mark.parametrize("extra,flag,says", [
    (["--slo", "ttft_p99=5", "--start", "4"], "--slo", "expected METRIC_STAT_ms=MS"),
    (["--slo", "speed_p99_ms=5", "--start", "4"], "--slo", "unknown metric 'speed'"),
    (["--start", "4"], "--slo", "give at least one SLO"),
    (["--slo", "ttft_p99_ms=5", "--start", "4", "--max-concurrency", "8"],
     "--max-concurrency", "the sweep sets it for each probe"),
    (["--slo", "ttft_p99_ms=5", "--rate"], "--start", "first request rate"),
    (["--slo", "ttft_p99_ms=5", "--rate", "--start", "2", "--request-rate", "3"],
     "--request-rate", "the sweep sets it"),
    (["--slo", "ttft_p99_ms=5", "--start", "2.5"], "--start", "a whole number"),
    (["--slo", "ttft_p99_ms=5", "--start", "0"], "--start", "> 0"),
    (["--slo", "ttft_p99_ms=5", "--start", "500", "--max", "100"], "--start", "outside"),
    (["--slo", "ttft_p99_ms=5", "--start", "4", "--min-good-fraction", "0.5"],
     "--min-good-fraction", "only with --goodput"),
    (["--goodput", "ttft:5", "--start", "4", "--min-good-fraction", "1.5"],
     "--min-good-fraction", "less than or equal to 1"),
    (["--goodput", "ttfb:5", "--start", "4"], "--goodput", "expected ttft:MS"),
    (["--slo", "ttft_p99_ms=5"], "--start", "--model-config"),
    (["--slo", "ttft_p99_ms=5", "--start", "4", "--input-len", "0"], "--input-len",
     "greater than or equal to 1"),
])
def test_bad_input_names_the_flag_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              extra: list[str], flag: str, says: str) -> None:
    assert main(_args(tmp_path, *extra)) == 2
    err = capsys.readouterr().err
    assert err.startswith("benchlib sweep: error: ") and flag in err and says in err, err
    assert not (tmp_path / "out").exists()  # nothing probed, nothing written


def test_the_output_dir_is_required(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main([*BASE, "--slo", "ttft_p99_ms=5", "--start", "4"])
    assert info.value.code == 2


def test_the_start_is_the_plans_max_concurrency(tiny_model: Path, tmp_path: Path) -> None:
    # 0.001 GiB of KV at 2 KiB a token: 512 tokens, 10 requests of 32 + 16 tokens, per replica
    args = build_parser().parse_args(_args(
        tmp_path, "--slo", "ttft_p99_ms=5", "--model-config", str(tiny_model),
        "--kv-budget-gib", "0.001", "--num-gpus", "2", "--tp", "1"))
    cfg = _config(args)
    assert cfg.start == 20 and cfg.floor == 1 and cfg.ceiling == 64 * 20
    assert cfg.start_source.startswith("the plan: 10.7 requests of 48 tokens")
    assert "2 replica(s)" in cfg.start_source


def test_the_plan_needs_a_gpu(tiny_model: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args(tmp_path, "--slo", "ttft_p99_ms=5", "--model-config",
                      str(tiny_model))) == 2
    assert "--gpu: the plan needs a GPU" in capsys.readouterr().err


def test_the_slo_percentiles_are_computed_by_every_probe(tmp_path: Path) -> None:
    from benchlib.sweep._sweep import _probe_config

    cfg = _config(build_parser().parse_args(_args(
        tmp_path, "--slo", "ttft_p99.9_ms=5", "tpot_mean_ms=3", "--start", "4",
        "--metric-percentiles", "50", "--goodput", "ttft:5")))
    probe = _probe_config(cfg, 6, tmp_path / "c6.json")
    assert probe.percentiles == (50.0, 99.9) and probe.max_concurrency == 6
    assert probe.num_prompts == 8 * 6 and probe.goodput == {"ttft": 5.0}
    assert probe.result_json == tmp_path / "c6.json" and probe.disable_tqdm
    assert cfg.min_good_fraction == 0.9
