"""How ``make test`` splits the suite over the CI's two cores: one table, applied at collection.

``make test`` runs two passes. The first runs everything not marked ``serial`` on both cores
(``-n 2 --dist loadgroup``); the second runs the ``serial`` tests one at a time on a machine
left quiet. A test is serial when what it asserts depends on having the CPU to itself: wall-clock
bounds against a server's truth, rates and ratios of timed runs, lateness, or a race a stalled
process loses (docs/test-tiers.md classifies every test and says why). Tests that start real
engines (pinned to CPU 0, minutes to start) share one group, so two never start side by side;
every other module is its own group, so a module's fixtures are built once.

:func:`apply` marks the collected items; an entry naming a test its collected module no longer
defines is an error (whichever of its tests were chosen), so a renamed test cannot slip into
the parallel pass unnoticed.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

__all__ = ["ENGINE_MODULES", "SERIAL_MODULES", "SERIAL_TESTS", "apply"]

#: every test of these modules runs alone
SERIAL_MODULES: dict[str, str] = {
    "tests/integration/test_load.py": "1,024 streams held to the wire within a millisecond",
    "tests/integration/test_significance.py": "the bootstrap's verdict on two timed runs",
    "tests/integration/test_vllm_keys.py": "vllm bench serve's figures against their wire",
    "tests/integration/test_report_glance.py": "a speedup of two timed runs",
    "tests/integration/test_engine_flags.py": "a 30 s bound; the rest share its cold parser",
    "tests/integration/test_pool.py": "a server's close raced against the client's reuse",
    "tests/integration/test_notebooks.py": "plain papermill: kernels on TCP ports picked, "
                                           "then bound (nteract/papermill#511)",
    "tests/gpu/test_energy.py": "power sampled against a counter",
    "tests/e2e/test_demo.py": "the demo's report states its run's own speedups",
    "tests/e2e/test_spec_decode.py": "a server's counters against the client's timings",
    "tests/e2e/test_vllm_cpu.py": "benchlib's figures banded around vLLM's",
}

#: these tests run alone (module path, function name)
SERIAL_TESTS: dict[tuple[str, str], str] = {
    ("tests/integration/test_energy.py",
     "test_a_cpu_run_reads_rapl_over_the_scenarios_window"): "RAPL over a timed window",
    **dict.fromkeys((("tests/integration/test_faults.py", name) for name in (
        "test_each_fault_is_named_and_the_run_goes_on",
        "test_huge_chunks_and_empty_choices_succeed",
        "test_mixed_faults_fail_named_and_the_rest_stay_exact",
        "test_idle_connections_closed_by_the_server_are_not_used",
        "test_cli_some_failed_exits_zero_and_reports_causes",
        "test_sigkill_keeps_every_finished_request")),
        "timings of the good requests held to the wire; 1 s timeouts"),
    **dict.fromkeys((("tests/integration/test_measure_scripted.py", name) for name in (
        "test_ttft_and_tpot_match_the_wire",
        "test_multi_token_chunks_are_not_tokens",
        "test_timing_self_check_at_concurrency_1",
        "test_reasoning_counts_in_ttft_and_tokens",
        "test_request_rate_and_result_files",
        "test_a_server_that_closes_after_each_stream_fails_no_request")),
        "timings held to the wire; a close raced against reuse"),
    ("tests/integration/test_ray.py", "test_load_from_two_ray_nodes"):
        "two Ray nodes' timings held to the wire",
    **dict.fromkeys((("tests/integration/test_schedule_ttft.py", name) for name in (
        "test_schedule_ttft_exceeds_send_ttft_by_the_wait_for_a_slot",
        "test_schedule_ttft_equals_send_ttft_when_nothing_waits")),
        "two TTFTs compared within milliseconds"),
    ("tests/integration/test_sdk_view.py", "test_the_sdk_sees_no_less_than_the_server_did"):
        "the SDK's TPOT bounded by the server's",
    **dict.fromkeys((("tests/integration/test_sweep.py", name) for name in (
        "test_the_knee_of_a_known_saturation_point_from_above",
        "test_the_knee_from_below_through_the_python_api")),
        "a p99's knee found within 100 ms margins"),
    **dict.fromkeys((("tests/integration/test_tls.py", name) for name in (
        "test_ttft_and_tpot_match_the_wire_over_tls",
        "test_timing_self_check_at_concurrency_1_over_tls",
        "test_faults_over_tls_are_named_and_the_rest_stay_exact",
        "test_a_tls_server_that_closes_after_each_stream_fails_no_request")),
        "timings held to the wire over TLS; a close raced against reuse"),
    ("tests/integration/test_trace.py", "test_arrivals_follow_the_trace_or_say_how_late"):
        "arrivals within 5 ms of a trace, or late by what their records say",
    ("tests/integration/test_variants.py", "test_two_variants_run_in_turn_and_are_compared"):
        "a comparison of two timed runs",
    ("tests/integration/test_workers.py", "test_two_workers_send_the_one_schedule"):
        "two processes' sends against one schedule",
    ("tests/unit/energy/test_rapl.py", "test_the_sampler_over_a_package_at_a_steady_power"):
        "a sampler racing its interval",
    ("tests/unit/pipeline/test_energy_side.py",
     "test_finish_flags_what_the_per_token_figure_leaves_out"): "a sampler racing its interval",
    **dict.fromkeys((("tests/unit/measure/test_server_metrics.py", name) for name in (
        "test_the_sampler_scrapes_before_during_and_after",
        "test_a_failing_server_is_a_fault_not_an_exception",
        "test_an_https_engine_is_scraped_over_tls_with_the_given_trust")),
        "scrapes counted within a timed window"),
    ("tests/unit/measure/test_connection.py",
     "test_1024_connections_open_at_once_through_a_tiny_backlog"): "a deadline on 1,024 opens",
}

#: modules that start real engines (vLLM CPU pinned to CPU 0, llama-server): one group
ENGINE_MODULES = (
    "tests/e2e/test_real_model.py",
    "tests/e2e/test_seed000_rehearsal.py",
    "tests/e2e/test_start_only.py",
    "tests/integration/test_llamacpp.py",
    "tests/integration/test_random_gguf_llamacpp.py",
    "tests/integration/test_real_model.py",
)


def apply(items: Sequence[pytest.Item]) -> None:
    """Mark ``serial`` what the tables name and give every test its ``xdist_group`` (its
    module's, or ``engines``); raise if a table names a test its collected module lacks."""
    modules: dict[str, object] = {}
    for item in items:
        module, _, rest = item.nodeid.partition("::")
        function = rest.split("[", 1)[0].split("::")[-1]
        if isinstance(item, pytest.Function):  # the module itself: one test may be chosen
            modules[module] = item.module
        if module in SERIAL_MODULES or (module, function) in SERIAL_TESTS:
            item.add_marker(pytest.mark.serial)
        if item.get_closest_marker("xdist_group") is None:
            group = "engines" if module in ENGINE_MODULES else module
            item.add_marker(pytest.mark.xdist_group(group))
    gone = [f"{m}::{f}" for m, f in SERIAL_TESTS if m in modules
            and not hasattr(modules[m], f)]
    if gone:
        raise pytest.UsageError(f"tests/_serial.py names tests that do not exist: {gone}")
