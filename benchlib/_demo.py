"""``benchlib demo``: the embedded engine (vLLM CPU + tiny model) launched and measured.

Until the notebook pipeline lands this is the main job: start vLLM on loopback, measure a
completions and a chat scenario at a few concurrencies, write the results under
``outputs/YYYY-MM-DD/demo/`` and print the reference-style block and a summary table.
"""

from __future__ import annotations

import datetime as dt
import socket
from pathlib import Path
from typing import Literal

from benchlib.engines import vllm_server
from benchlib.measure import MeasureConfig, format_result, measure

__all__ = ["run_demo"]

_SCENARIOS: tuple[tuple[Literal["completions", "chat"], int, int], ...] = (
    ("completions", 128, 64), ("chat", 128, 64))
_CONCURRENCIES = (1, 4)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unique(path: Path) -> Path:
    if not path.exists():
        return path
    n = 2
    while path.with_name(f"{path.name}-{n}").exists():
        n += 1
    return path.with_name(f"{path.name}-{n}")


def run_demo(engine_python: Path, model_dir: Path, outputs: Path = Path("outputs"),
             num_prompts: int = 8) -> Path:
    """Launch, measure, stop; return the run folder."""
    day = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    run_dir = _unique(outputs / day / "demo")
    run_dir.mkdir(parents=True)
    port = _free_port()
    rows = []
    server = vllm_server(engine_python, model_dir, served_model_name="tiny-llama", port=port,
                         log_path=run_dir / "engine.log")
    print(f"starting vLLM (CPU) on 127.0.0.1:{port}; log {run_dir / 'engine.log'}", flush=True)
    with server:
        print(f"engine ready after {server.startup_s:.1f} s", flush=True)
        for endpoint, n_in, n_out in _SCENARIOS:
            for conc in _CONCURRENCIES:
                cfg = MeasureConfig(
                    base_url=f"http://127.0.0.1:{port}", model="tiny-llama", endpoint=endpoint,
                    input_len=n_in, output_len=n_out, num_prompts=num_prompts,
                    max_concurrency=conc, num_warmups=1, tokenizer=model_dir,
                    result_json=run_dir / f"{endpoint}-{n_in}x{n_out}-c{conc}.json")
                print(f"\n{endpoint} {n_in}/{n_out} at concurrency {conc}", flush=True)
                result = measure(cfg)
                print(format_result(result, cfg.percentiles), flush=True)
                rows.append((endpoint, conc, result))
    print(f"\nresults in {run_dir}")
    print(f"{'scenario':<14}{'conc':>5}{'ok':>4}{'TTFT p50 ms':>13}{'TPOT p50 ms':>13}"
          f"{'out tok/s':>11}")
    for endpoint, conc, r in rows:
        print(f"{endpoint:<14}{conc:>5}{r['completed']:>4}{r['median_ttft_ms']:>13.2f}"
              f"{r['median_tpot_ms']:>13.2f}{r['output_throughput']:>11.1f}")
    return run_dir
