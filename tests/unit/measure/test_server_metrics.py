"""Server metrics: each engine's names read from real (or source-shaped) ``/metrics`` texts,
counters as deltas, gauges as peak and mean, missing metrics null, faults recorded, and the
sampler thread against a local HTTP server."""

from __future__ import annotations

import http.server
import re
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from benchlib.adapters import ADAPTERS, adapter
from benchlib.measure import (
    SERVER_METRICS,
    MetricNames,
    MetricsSampler,
    ServerMetrics,
    metrics_url,
)
from benchlib.measure.server._sampler import Scrape, line_filter, read_scrape, summarize_scrapes
from benchlib.measure.wire._endpoint import Endpoint
from tests._tls_files import TlsFiles

DATA = Path(__file__).resolve().parents[2] / "data" / "metrics"
VLLM = (DATA / "vllm-0.32-ngram.txt").read_text()


def _bump(text: str, name: str, by: float) -> str:
    """``text`` with every sample of ``name`` (any labels) increased by ``by``."""
    def add(m: re.Match[str]) -> str:
        return f"{m.group(1)} {float(m.group(2)) + by}"
    return re.sub(rf"^({re.escape(name)}(?:\{{[^\n]*\}})?) (\S+)$", add, text, flags=re.M)


def _set(text: str, name: str, value: float) -> str:
    return re.sub(rf"^({re.escape(name)}(?:\{{[^\n]*\}})?) \S+$", rf"\g<1> {value}", text,
                  flags=re.M)


def _names(engine: str) -> MetricNames:
    """``engine``'s metric names, as its adapter holds them."""
    names = adapter(engine).metrics
    assert names is not None, f"{engine} has no metric names"
    return names


ENGINE_METRICS = {k: a.metrics.sources for k, a in ADAPTERS.items() if a.metrics is not None}


def _summary(*scrapes: Scrape, engine: str = "vllm") -> ServerMetrics:
    return summarize_scrapes(list(scrapes), _names(engine), metrics_url="http://x/metrics",
                             interval_s=0.5, t0_perf_counter_s=0.0)


def test_every_vllm_name_is_in_a_real_0_32_scrape() -> None:
    """The vLLM table against a real /metrics of 0.32 with n-gram speculation: every word it
    maps is found (the first name of each; the alias is the pre-0.10 spelling)."""
    values = read_scrape(VLLM, ENGINE_METRICS["vllm"])
    assert set(values) == set(ENGINE_METRICS["vllm"])
    per_pos = values["spec_accepted_per_position"]
    assert isinstance(per_pos, dict) and sorted(per_pos) == ["0", "1", "2", "3"]
    assert sum(per_pos.values()) == values["spec_accepted_tokens"]
    assert 0 <= values["kv_cache_usage"] <= 1  # type: ignore[operator]


def test_every_llamacpp_name_is_in_a_real_build_11312_scrape() -> None:
    """llama-server build 11312 with a draft model (k=4), after 5 requests: every word
    but the KV gauge (2024 builds only) is there, and the draft counters add up."""
    text = (DATA / "llamacpp-b11312-draft.txt").read_text()
    values = read_scrape(text, ENGINE_METRICS["llamacpp"])
    assert set(ENGINE_METRICS["llamacpp"]) - set(values) == {"kv_cache_usage"}
    assert values["spec_accepted_per_position"] == {"0": 135, "1": 123, "2": 112, "3": 105}
    assert (values["spec_drafts"], values["spec_draft_tokens"],
            values["spec_accepted_tokens"]) == (158, 625, 475)


def test_the_line_filter_keeps_everything_the_table_needs() -> None:
    table = ENGINE_METRICS["vllm"]
    kept = b"\n".join(m.group(0) for m in line_filter(table).finditer(VLLM.encode())).decode()
    assert len(kept) < len(VLLM) / 5  # histograms and other families dropped
    assert read_scrape(kept, table) == read_scrape(VLLM, table)


def test_counters_are_deltas_and_gauges_peak_and_mean() -> None:
    before = VLLM
    during = _set(_bump(VLLM, "vllm:generation_tokens_total", 50), "vllm:num_requests_running",
                  3)
    after = _set(_bump(_bump(VLLM, "vllm:generation_tokens_total", 128),
                       "vllm:spec_decode_num_accepted_tokens_per_pos_total", 2),
                 "vllm:num_requests_running", 1)
    m = _summary(Scrape(0.0, "before", before), Scrape(0.5, "during", during),
                 Scrape(1.0, "after", after))
    assert m.counters.generation_tokens == 128
    assert m.counters.spec_accepted_per_position == [2, 2, 2, 2]
    assert m.counters.prompt_tokens == 0
    running, idle = m.gauges.requests_running, read_scrape(VLLM, ENGINE_METRICS["vllm"])
    assert running is not None and running.peak == 3 and running.samples == 3
    assert running.mean == pytest.approx((idle["requests_running"] + 3 + 1) / 3)  # type: ignore[operator]
    assert m.series["generation_tokens"] == [0, 50, 128]
    assert m.series_t_s == [0.0, 0.5, 1.0] and m.window_s == (0.0, 1.0)
    assert m.verified and m.missing == [] and m.faults == []


def test_missing_metrics_are_null_never_zero() -> None:
    """Without speculation vLLM prints no spec_decode family: those fields are null and
    named in ``missing``, while the rest is read."""
    plain = "\n".join(line for line in VLLM.splitlines() if "spec_decode" not in line) + "\n"
    m = _summary(Scrape(0.0, "before", plain), Scrape(1.0, "after", plain))
    assert m.counters.spec_accepted_tokens is None
    assert m.counters.spec_accepted_per_position is None
    assert m.counters.generation_tokens == 0
    assert m.gauges.spec_accept_length is None
    assert set(m.missing) == {"spec_drafts", "spec_draft_tokens",
                              "spec_accepted_tokens", "spec_accepted_per_position"}


def test_the_mark_is_the_baseline_after_warmups() -> None:
    warm = _bump(VLLM, "vllm:generation_tokens_total", 40)
    end = _bump(VLLM, "vllm:generation_tokens_total", 100)
    m = _summary(Scrape(0.0, "before", VLLM), Scrape(0.4, "mark", warm),
                 Scrape(2.0, "after", end))
    assert m.baseline == "mark" and m.counters.generation_tokens == 60
    assert m.window_s == (0.4, 2.0)


def test_faults_are_recorded_not_raised() -> None:
    """A failed scrape, an unparsable one and a counter that went down (a restarted engine)
    are faults; with no baseline, no counter is known (null), gauges still are."""
    reset = _bump(VLLM, "vllm:generation_tokens_total", -1)
    m = _summary(Scrape(0.0, "before", VLLM), Scrape(0.5, "during", None, "refused"),
                 Scrape(0.7, "during", "vllm:num_requests_running {\n"),
                 Scrape(1.0, "after", reset))
    assert m.counters.generation_tokens is None
    assert m.counters.prompt_tokens == 0
    assert m.scrapes == 2 and m.failed_scrapes == 2
    errors = [f.error for f in m.faults]
    assert errors[0] == "refused" and errors[1].startswith("unparsable /metrics")
    assert "generation_tokens went down" in errors[2]
    lost = _summary(Scrape(0.0, "before", None, "refused"), Scrape(1.0, "after", VLLM))
    assert lost.window_s is None and lost.counters.generation_tokens is None
    assert lost.gauges.requests_running is not None


LLAMACPP = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total {prompt}
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total {predicted}
# TYPE llamacpp:n_decode_total counter
llamacpp:n_decode_total {decode}
# TYPE llamacpp:spec_decode_num_draft_tokens_total counter
llamacpp:spec_decode_num_draft_tokens_total {draft}
# TYPE llamacpp:spec_decode_num_accepted_tokens_total counter
llamacpp:spec_decode_num_accepted_tokens_total {accepted}
# TYPE llamacpp:spec_decode_num_drafts_total counter
llamacpp:spec_decode_num_drafts_total {drafts}
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing {processing}
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 0
# TYPE llamacpp:n_busy_slots_per_decode {busy_type}
llamacpp:n_busy_slots_per_decode {busy}
"""
PER_POS = """\
# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 7
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 3
"""


def _llamacpp(busy_type: str = "gauge", per_pos: bool = False, **values: float) -> str:
    fields = {"prompt": 0, "predicted": 0, "decode": 0, "draft": 0, "accepted": 0, "drafts": 0,
              "processing": 0, "busy": 0.0} | values
    return LLAMACPP.format(busy_type=busy_type, **fields) + (PER_POS if per_pos else "")


@pytest.mark.parametrize("busy_type", ["gauge", "counter"])
def test_llamacpp_names_as_its_server_prints_them(busy_type: str) -> None:
    """llama-server's text, laid out as its ``to_metrics`` writes it: n_busy_slots_per_decode is
    read as a gauge whether typed gauge (newer) or counter (2025 builds); the per-position
    counter, printed only once a draft was verified, counts from 0; no KV gauge in newer
    builds (null)."""
    m = _summary(Scrape(0.0, "before", _llamacpp(busy_type, prompt=5, predicted=9)),
                 Scrape(0.5, "during", _llamacpp(busy_type, processing=1, busy=1.0)),
                 Scrape(1.0, "after", _llamacpp(busy_type, True, prompt=37, predicted=73,
                                                decode=30, draft=40, accepted=10, drafts=12)),
                 engine="llamacpp")
    c = m.counters
    assert (c.prompt_tokens, c.generation_tokens, c.engine_steps) == (32, 64, 30)
    assert (c.spec_draft_tokens, c.spec_accepted_tokens, c.spec_drafts) == (40, 10, 12)
    assert c.spec_accepted_per_position == [7, 3]
    busy, running = m.gauges.busy_slots_per_decode, m.gauges.requests_running
    assert busy is not None and busy.peak == 1.0
    assert running is not None and running.peak == 1
    assert m.gauges.kv_cache_usage is None and "kv_cache_usage" in m.missing


def test_every_table_speaks_the_vocabulary() -> None:
    for table in ENGINE_METRICS.values():
        assert set(table) <= set(SERVER_METRICS)
    assert {w for w, (kind, _) in SERVER_METRICS.items() if kind == "counter"} >= {
        "generation_tokens", "spec_accepted_tokens", "spec_drafts", "spec_draft_tokens"}


def test_metrics_url_sits_beside_the_api() -> None:
    assert metrics_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/metrics"
    assert metrics_url("http://h:1/v1") == "http://h:1/metrics"
    assert metrics_url("http://h:1/proxy/v1") == "http://h:1/proxy/metrics"
    assert metrics_url("https://api.example.com/v1") == "https://api.example.com/metrics"


class _Metrics:
    """A local /metrics (plain or TLS) whose generation counter grows by 10 per scrape;
    ``status`` makes it answer otherwise; the scrape times are recorded."""

    def __init__(self, tls: TlsFiles | None = None) -> None:
        self.status, self.n = 200, 0
        self.times: list[float] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.times.append(time.monotonic())
                outer.n += 1
                body = _bump(VLLM, "vllm:generation_tokens_total", 10 * outer.n).encode()
                if self.path != "/metrics" or outer.status != 200:
                    body = b"not here"
                self.send_response(outer.status if self.path == "/metrics" else 404)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(tls.cert, tls.key)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def metrics_server() -> Iterator[tuple[str, Callable[[int], None], list[float]]]:
    """A plain-HTTP :class:`_Metrics`: its URL, a status setter and the scrape times."""
    served = _Metrics()

    def set_status(status: int) -> None:
        served.status = status

    yield served.url, set_status, served.times
    served.close()


def test_the_sampler_scrapes_before_during_and_after(
        metrics_server: tuple[str, Callable[[int], None], list[float]]) -> None:
    url, _, times = metrics_server
    with MetricsSampler(url, _names("vllm"), interval_s=0.05) as sampler:
        time.sleep(0.4)
    m = sampler.result
    assert m is not None and m.metrics_url == url[:-3] + "/metrics"
    assert m.scrapes == len(times) >= 6 and m.failed_scrapes == 0
    assert m.counters.generation_tokens == 10 * (len(times) - 1)
    assert m.series["generation_tokens"] == [10.0 * k for k in range(len(times))]
    assert all(b > a for a, b in zip(m.series_t_s, m.series_t_s[1:], strict=False))


def test_a_failing_server_is_a_fault_not_an_exception(
        metrics_server: tuple[str, Callable[[int], None], list[float]]) -> None:
    url, set_status, _ = metrics_server
    sampler = MetricsSampler(url, _names("vllm"), interval_s=0.05)
    sampler.start()
    set_status(501)  # llama-server without --metrics answers 501
    time.sleep(0.15)
    m = sampler.stop()
    assert m.scrapes == 1 and m.failed_scrapes >= 2 and m.window_s is None
    assert m.faults[-1].phase == "after" and m.faults[-1].error.startswith("HTTP 501")
    assert m.counters.generation_tokens is None
    nobody = MetricsSampler("http://127.0.0.1:9", _names("llamacpp"), interval_s=0.05, timeout_s=0.5)
    nobody.start()
    gone = nobody.stop()
    assert gone.scrapes == 0 and "Connection refused" in gone.faults[0].error


def test_an_https_engine_is_scraped_over_tls_with_the_given_trust(tls_files: TlsFiles) -> None:
    """An engine behind TLS: the sampler trusts the recipe's CA bundle; without it every
    scrape is a recorded fault naming the certificate, never an exception."""
    served = _Metrics(tls_files)
    try:
        trust = Endpoint.parse(served.url, ca_bundle=tls_files.cert).tls_context()
        with MetricsSampler(served.url, _names("vllm"), interval_s=0.05, ssl_context=trust) as sampler:
            time.sleep(0.2)
        m = sampler.result
        assert m is not None and m.metrics_url.startswith("https://")
        assert m.failed_scrapes == 0 and m.scrapes == len(served.times) >= 3
        assert m.counters.generation_tokens == 10 * (len(served.times) - 1)
        untrusted = MetricsSampler(served.url, _names("vllm"), interval_s=0.05)
        untrusted.start()
        gone = untrusted.stop()
        assert gone.scrapes == 0 and "CERTIFICATE_VERIFY_FAILED" in gone.faults[0].error
    finally:
        served.close()
