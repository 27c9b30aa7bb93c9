"""Scraping an engine's ``/metrics`` around a scenario without touching its measurement.

:class:`MetricsSampler` scrapes once before the scenario, every ``interval_s`` during it in a
daemon thread, optionally once more as the counters' baseline after the warmups
(:meth:`~MetricsSampler.mark`), and once after it. The thread has its own ``http.client``
connection and never touches the measuring event loop; while the load runs it does as little
as it can with the GIL: one GET and one regular-expression pass (C code) that keeps only the
lines of the metrics this engine's table names. Parsing — by ``prometheus_client``'s
parser, never by hand — waits for :meth:`~MetricsSampler.stop`, after the measurement. (A
vLLM 0.32 scrape is 57 kB, mostly histograms: here the filter takes 0.4 ms and keeps 2.4 kB,
where parsing the whole text would hold the GIL for 16 ms, every half second.)

A failed scrape (refused, timed out, HTTP 501 from a llama-server started without
``--metrics``, a body that does not parse) is a recorded fault in the result, never an
exception in the measurement.

:func:`summarize_scrapes` turns the scrapes into a
:class:`~benchlib.measure.ServerMetrics`: counters from the baseline scrape (the ``mark``,
else ``before``) to the ``after`` one, gauges over the samples between them, and every
successful sample as the series. A counter that went down (the engine restarted) has no
known increase: null, with a fault.
"""

from __future__ import annotations

import http.client
import math
import re
import ssl
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType

from prometheus_client.parser import text_string_to_metric_families

from benchlib._exceptions import BadScrapeStatus
from benchlib.measure.server._server_metrics import (
    SERVER_METRICS,
    GaugeStats,
    MetricNames,
    MetricSource,
    ScrapeFault,
    ScrapePhase,
    ServerCounters,
    ServerGauges,
    ServerMetrics,
)
from benchlib.measure.wire._endpoint import Endpoint

__all__ = ["MetricsSampler", "Scrape", "line_filter", "metrics_url", "read_scrape",
           "summarize_scrapes"]

_SUFFIXES = ("_total", "_count", "_sum", "_bucket")


@dataclass(frozen=True, slots=True)
class Scrape:
    """One scrape as taken: when, in which phase, the (filtered) text or what went wrong."""

    t_s: float
    phase: ScrapePhase
    text: str | None
    error: str | None = None


Values = dict[str, float | dict[str, float]]
_MAX_FAULTS = 20


def read_scrape(text: str, table: Mapping[str, MetricSource]) -> Values:
    """Our metrics in one ``/metrics`` text, parsed by ``prometheus_client`` (a malformed
    text raises its ``ValueError``). A metric absent, or NaN in every label set, is left
    out."""
    by_name: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not math.isnan(s.value):
                by_name.setdefault(s.name, []).append((s.labels, float(s.value)))
    out: Values = {}
    for word, src in table.items():
        found = next((by_name[n] for n in src.names if n in by_name), None)
        if found is None:
            continue
        if src.by_label is not None:
            split: dict[str, float] = {}
            for labels, value in found:
                key = labels.get(src.by_label, "")
                split[key] = split.get(key, 0.0) + value
            out[word] = split
        else:
            values = [v for _, v in found]
            out[word] = sum(values) if src.combine == "sum" else max(values)
    return out


def _delta(word: str, first: Values, last: Values, src: MetricSource,
           resets: list[str]) -> float | list[float] | None:
    """``word``'s increase from ``first`` to ``last``; ``None`` when either lacks it or it
    went down (the engine restarted: the increase is unknown, named in ``resets``)."""
    end, start = last.get(word), first.get(word)
    if start is None and src.zero_when_absent:
        start = {} if src.by_label is not None else 0.0
    if isinstance(end, dict) and isinstance(start, dict):
        keys = sorted(end, key=lambda k: (not k.isdigit(), int(k) if k.isdigit() else 0, k))
        deltas = [end[k] - start.get(k, 0.0) for k in keys]
        if all(d >= 0 for d in deltas):
            return deltas
    elif isinstance(end, float) and isinstance(start, float):
        if end >= start:
            return end - start
    else:
        return None
    resets.append(f"{word} went down: the engine restarted or reset its counters")
    return None


def summarize_scrapes(scrapes: Sequence[Scrape], names: MetricNames, *, metrics_url: str,
                      interval_s: float, t0_perf_counter_s: float) -> ServerMetrics:
    """The summary of one scenario's scrapes (in the order taken). The baseline is the last
    ``mark`` scrape if there is one, else the ``before`` scrape; the end is the ``after``
    scrape. Never raises on what a server sent: unparsable scrapes become faults."""
    table = names.sources
    faults: list[ScrapeFault] = []
    parsed: list[tuple[Scrape, Values | None]] = []
    for s in scrapes:
        values: Values | None = None
        error = s.error
        if s.text is not None:
            try:
                values = read_scrape(s.text, table)
            # whatever the parser makes of a server's bytes is a fault, never a crash
            except Exception as exc:
                error = f"unparsable /metrics: {type(exc).__name__}: {exc}"
        if values is None:
            faults.append(ScrapeFault(t_s=s.t_s, phase=s.phase, error=error or "no text"))
        parsed.append((s, values))
    marks = [i for i, (s, _) in enumerate(parsed) if s.phase == "mark"]
    start_i = marks[-1] if marks else next(
        (i for i, (s, _) in enumerate(parsed) if s.phase == "before"), 0)
    end_i = len(parsed) - 1
    window = parsed[start_i:]
    first = parsed[start_i][1] if parsed else None
    last = parsed[end_i][1] if parsed else None
    resets: list[str] = []
    counters: dict[str, float | list[float] | None] = {}
    if first is not None and last is not None:
        for word, src in table.items():
            if SERVER_METRICS[word][0] == "counter":
                counters[word] = _delta(word, first, last, src, resets)
    faults += [ScrapeFault(t_s=parsed[end_i][0].t_s, phase=parsed[end_i][0].phase, error=r)
               for r in resets]
    gauges: dict[str, GaugeStats] = {}
    for word in table:
        if SERVER_METRICS[word][0] != "gauge":
            continue
        got = [v for _, vals in window if vals is not None
               for v in [vals.get(word)] if isinstance(v, float)]
        if got:
            gauges[word] = GaugeStats(peak=max(got), mean=sum(got) / len(got), samples=len(got))
    ok = [(s, v) for s, v in parsed if v is not None]
    seen = {w for _, v in ok for w in v}
    series: dict[str, list[float | None]] = {}
    base = ok[0][1] if ok else {}
    for word in table:
        if word not in seen or table[word].by_label is not None:
            continue
        kind = SERVER_METRICS[word][0]
        column: list[float | None] = []
        for _, v in ok:
            x, b = v.get(word), base.get(word)
            if not isinstance(x, float):
                column.append(None)
            elif kind == "counter":
                column.append(x - b if isinstance(b, float) else None)
            else:
                column.append(x)
        series[word] = column
    known = first is not None and last is not None
    return ServerMetrics(
        engine=names.engine, verified=names.verified, metrics_url=metrics_url,
        interval_s=interval_s, t0_perf_counter_s=t0_perf_counter_s,
        baseline="mark" if marks else "before",
        window_s=(parsed[start_i][0].t_s, parsed[end_i][0].t_s) if known else None,
        scrapes=len(ok), failed_scrapes=len(parsed) - len(ok), faults=faults[:_MAX_FAULTS],
        counters=ServerCounters.model_validate(counters),
        gauges=ServerGauges.model_validate(gauges),
        missing=sorted(w for w in table if ok and w not in seen),
        series_t_s=[s.t_s for s, _ in ok], series=series)


def metrics_url(base_url: str) -> str:
    """The ``/metrics`` beside an OpenAI base URL: ``http://h:p/v1`` → ``http://h:p/metrics``
    (a path prefix before ``/v1`` is kept; an ``https`` API has ``https`` metrics)."""
    ep = Endpoint.parse(base_url)
    prefix = ep.prefix[:-3] if ep.prefix.endswith("/v1") else ep.prefix
    return f"{ep.scheme}://{ep.host_header}{prefix}/metrics"


def line_filter(table: Mapping[str, MetricSource]) -> re.Pattern[bytes]:
    """A pattern matching the lines of a Prometheus text that ``table`` needs: its samples
    and their families' ``# TYPE`` lines (the parser needs the type)."""
    names = {n for src in table.values() for n in src.names}
    families = set(names)
    for n in names:
        families.update(n[:-len(s)] for s in _SUFFIXES if n.endswith(s))

    def alternatives(words: set[str]) -> bytes:
        return b"|".join(re.escape(w).encode() for w in sorted(words, key=len, reverse=True))

    return re.compile(rb"^(?:# TYPE (?:%s) [a-z]+|(?:%s)(?:\{[^\n]*\})?[ \t][^\n]*)$"
                      % (alternatives(families), alternatives(names)), re.MULTILINE)


class MetricsSampler:
    """Scrapes ``/metrics`` before, during and after a scenario; :meth:`stop` returns the
    typed summary. Usable as a context manager (``result`` holds the summary afterwards).

    ``base_url``: the server's OpenAI base URL (``metrics_path`` overrides where the metrics
    are); ``names``: the engine's metric names (its adapter's); ``api_key``: sent as a
    bearer token, as the
    measurement sends it; ``ssl_context``: how to trust an ``https`` server (default: the
    system's CAs, as :meth:`~benchlib.measure.Endpoint.tls_context` builds them).
    """

    def __init__(self, base_url: str, names: MetricNames, *, interval_s: float = 0.5,
                 timeout_s: float = 2.0, metrics_path: str | None = None,
                 api_key: str | None = None, ssl_context: ssl.SSLContext | None = None
                 ) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        self.names = names
        self.interval_s = interval_s
        self.url = metrics_url(base_url)
        ep = Endpoint.parse(base_url)
        self._host, self._port = ep.host, ep.port
        self._path = metrics_path or self.url.split(ep.host_header, 1)[1]
        if metrics_path is not None:
            self.url = f"{ep.scheme}://{ep.host_header}{metrics_path}"
        self._context = (ssl_context or ep.tls_context()) if ep.tls else None
        self._timeout = timeout_s
        self._headers = {"accept": "text/plain", "user-agent": "benchlib"}
        if api_key:
            self._headers["authorization"] = f"Bearer {api_key}"
        self._filter = line_filter(names.sources)
        self._scrapes: list[Scrape] = []
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._t0_perf = 0.0
        self.result: ServerMetrics | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._context is not None:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout,
                                               context=self._context)
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)

    def _get(self, conn: http.client.HTTPConnection) -> str:
        """One GET of the metrics on ``conn``: the kept lines, or raises what went wrong."""
        conn.request("GET", self._path, headers=self._headers)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            text = body[:200].decode("utf-8", "replace").strip()
            raise BadScrapeStatus(f"HTTP {resp.status} from {self.url}: {text}")
        return b"\n".join(m.group(0) for m in self._filter.finditer(body)).decode() + "\n"

    def _scrape(self, phase: ScrapePhase, conn: http.client.HTTPConnection | None = None
                ) -> None:
        own = conn is None
        c = conn or self._connection()
        t = time.monotonic() - self._t0
        try:
            scrape = Scrape(t, phase, self._get(c))
        # everything a server or the network can do to one GET: a fault, never a raise
        except BadScrapeStatus as exc:
            scrape = Scrape(t, phase, None, str(exc))
        except (OSError, http.client.HTTPException, ValueError) as exc:
            scrape = Scrape(t, phase, None, f"cannot read {self.url}: "
                                            f"{type(exc).__name__}: {exc}".rstrip(": "))
            c.close()  # a broken keep-alive connection is reopened by the next request
        finally:
            if own:
                c.close()
        with self._lock:
            self._scrapes.append(scrape)

    def _run(self) -> None:
        conn = self._connection()
        try:
            tick = 1
            while True:
                due = self._t0 + tick * self.interval_s
                if self._stop_event.wait(max(0.0, due - time.monotonic())):
                    return
                self._scrape("during", conn)
                # a slow scrape skips the ticks it overran rather than bunching up
                tick = max(tick + 1, int((time.monotonic() - self._t0) / self.interval_s) + 1)
        finally:
            conn.close()

    def start(self) -> None:
        """Scrape once (``before``), then every ``interval_s`` in a daemon thread."""
        if self._thread is not None:
            raise RuntimeError("this sampler was already started")
        self._t0, self._t0_perf = time.monotonic(), time.perf_counter()
        self._scrape("before")
        self._thread = threading.Thread(target=self._run, name="benchlib-metrics",
                                        daemon=True)
        self._thread.start()

    def mark(self) -> None:
        """Scrape now as the counters' baseline: call it when the warmups have ended, so the
        counters cover the timed requests only. Thread-safe; takes one local GET."""
        self._scrape("mark")

    def stop(self) -> ServerMetrics:
        """Stop the thread, scrape once more (``after``) and summarize."""
        if self._thread is None:
            raise RuntimeError("start() the sampler first")
        if self.result is not None:
            return self.result
        self._stop_event.set()
        self._thread.join()
        self._scrape("after")
        with self._lock:
            scrapes = sorted(self._scrapes, key=lambda s: s.t_s)
        self.result = summarize_scrapes(scrapes, self.names, metrics_url=self.url,
                                        interval_s=self.interval_s,
                                        t0_perf_counter_s=self._t0_perf)
        return self.result

    def __enter__(self) -> MetricsSampler:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
