"""The vLLM-key comparison (tests/integration/_vllm_compare.py) fails on a wrong value: held
here without vLLM, on figures shaped like a real run's (test_vllm_keys runs it on vLLM's own)."""

from __future__ import annotations

from tests.integration._vllm_compare import disagreements

#: a run's figures as measured (test_vllm_keys, concurrency 4, chat): ours on our wire, vLLM
#: ~1.7 ms late on TTFT
WIRE = {"median_ttft_ms": 0.466, "median_tpot_ms": 4.93, "median_e2el_ms": 54.7}
OURS = {"median_ttft_ms": 0.47, "median_tpot_ms": 4.94, "median_e2el_ms": 54.73,
        "median_ttft_text_ms": 30.4}
REF = {"median_ttft_ms": 2.04, "median_tpot_ms": 4.92, "median_e2el_ms": 56.36}


def test_agreeing_figures_pass() -> None:
    assert disagreements(OURS, REF, WIRE, WIRE) == []


def test_a_wrong_definition_fails_against_vllm_even_on_our_wire() -> None:
    """A key measured to the first text, with the wire truth computed the same wrong way:
    ours sits on its wire, and only vLLM's own value can catch it."""
    mutated = {**OURS, "median_ttft_ms": OURS["median_ttft_text_ms"]}
    wrong_wire = {**WIRE, "median_ttft_ms": 30.4}
    found = disagreements(mutated, REF, wrong_wire, wrong_wire)
    assert found == ["median_ttft_ms: vLLM's 2.040 off its wire 30.400",
                     "median_ttft_ms: ours 30.400 against vLLM's 2.040 (wires 30.400 and "
                     "30.400)"]


def test_vllm_far_from_its_wire_fails() -> None:
    found = disagreements(OURS, {**REF, "median_tpot_ms": 4.92 * 3}, WIRE, WIRE)
    assert any("vLLM's 14.760 off its wire" in f for f in found), found


def test_two_wires_apart_compare_errors_not_values() -> None:
    """vLLM's server ran 10 ms slower (a busier CPU): the values differ, the errors do not."""
    slow = {k: v + 10.0 for k, v in WIRE.items()}
    ref = {k: REF[k] + 10.0 for k in REF}
    assert disagreements(OURS, ref, WIRE, slow) == []
    assert disagreements({**OURS, "median_e2el_ms": 54.73 + 20.0}, ref, WIRE, slow)


def test_a_difference_of_two_stamps_may_lie_under_its_wire_a_stamp_may_not() -> None:
    """CI's run (2026-12-06): vLLM's p90 ITL 29.396 ms against its wire's 29.922 (its first
    stamp read late, the second not); an ITL or TPOT errs either way, within its late bound.
    A TTFT is a stamp after the request's start: under its wire by 1 ms is a wrong figure."""
    wire = {"p90_itl_ms": 29.922, "median_ttft_ms": 1.257}
    ours = {"p90_itl_ms": 30.134, "median_ttft_ms": 1.26}
    assert disagreements(ours, {"p90_itl_ms": 29.396, "median_ttft_ms": 4.106}, wire, wire) == []
    early_ttft = disagreements(ours, {"p90_itl_ms": 29.9, "median_ttft_ms": 0.257}, wire, wire)
    assert early_ttft == ["median_ttft_ms: vLLM's 0.257 off its wire 1.257"]
    far_itl = disagreements(ours, {"p90_itl_ms": 29.922 - 6.0, "median_ttft_ms": 4.1}, wire,
                            wire)
    assert any(f.startswith("p90_itl_ms: vLLM's") for f in far_itl), far_itl
