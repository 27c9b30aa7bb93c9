"""``benchlib run --check`` builds every request a run will send: every recipe under params/
passes it, and each kind of defect that would only raise at 03_measure fails it here, with
exit code 2 and the recipe field named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchlib.cli import main

REPO = Path(__file__).resolve().parents[3]
SEED000_H200 = REPO / "params/seeds/000-glm-kimi-8xh200.yaml"


def _recipes() -> list[Path]:
    """Every recipe under params/ (a YAML file with an engine), references and the rest left
    out."""
    out = []
    for path in sorted((REPO / "params").rglob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "engine" in data:
            out.append(path)
    return out


def test_the_recipes_are_found() -> None:
    names = {p.name for p in _recipes()}
    assert {"000-glm-kimi-8xh200.yaml", "000-glm-kimi-8xh200-dense-mla.yaml",
            "001-glm47-flash-sglang-b200.yaml", "003-qwen38-27b-h200.yaml",
            "003-qwen38-27b-cmp170hx.yaml", "demo.yaml"} <= names


@pytest.mark.parametrize("recipe", _recipes(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_recipe_passes_check(recipe: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO)
    code = main(["run", str(recipe.relative_to(REPO)), "--check"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert ": ok (" in out


def _planted(tmp_path: Path, edit: Any, source: Path = SEED000_H200) -> Path:
    """``source`` with ``edit`` applied to its YAML, written under ``tmp_path`` with every
    relative path made absolute against the repo (so it checks from anywhere)."""
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / source.name
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def _seed001_b200(tmp_path: Path, edit: Any) -> Path:
    """Seed 001's B200 recipe (GLM-4.7-Flash from the hub: no tokenizer here) with ``edit``
    applied, its accuracy data at the repo's and no write-up or references to resolve."""
    def whole(d: dict[str, Any]) -> None:
        d["accuracy"]["data_dir"] = str(REPO / "params/data/gsm8k")
        d.pop("writeup", None)
        d["compare"].pop("references", None)
        edit(d)
    return _planted(tmp_path, whole, REPO / "params/seeds/001-glm47-flash-sglang-b200.yaml")


def _fails(path: Path, field: str, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.chdir(REPO)
    code = main(["run", str(path), "--check"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"error: {field}: " in err, err
    assert "Traceback" not in err
    return err


def _scenario(data: dict[str, Any]) -> dict[str, Any]:
    s: dict[str, Any] = data["scenarios"][0]
    return s


def test_warmups_the_prompt_file_cannot_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # seed 000's H200 recipe as it was: five lines, one warmup, no warmups_like_vllm
    path = _planted(tmp_path, lambda d: _scenario(d).pop("warmups_like_vllm"))
    err = _fails(path, "scenarios.single-stream.num_warmups", monkeypatch, capsys)
    assert "variant glm-5.2-fp8-mtp3, concurrency 1" in err


def test_a_prompt_file_that_is_not_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = _planted(tmp_path, lambda d: _scenario(d).update(
        dataset_path=str(REPO / "params/seeds/data/no-such.jsonl")))
    _fails(path, "scenarios.single-stream.dataset_path", monkeypatch, capsys)


def test_repeats_the_file_cannot_deal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = _planted(tmp_path, lambda d: _scenario(d).update(repeats=2))
    _fails(path, "scenarios.single-stream.repeats", monkeypatch, capsys)


def test_a_trace_with_a_request_rate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    def edit(d: dict[str, Any]) -> None:
        for s in d["scenarios"]:
            if s.get("dataset") == "trace":
                s["request_rate"] = 4.0
            if s.get("dataset_path"):
                s["dataset_path"] = str(REPO / s["dataset_path"])
    path = _planted(tmp_path, edit, REPO / "params/traffic.yaml")
    _fails(path, "scenarios.trace.request_rate", monkeypatch, capsys)


@pytest.mark.parametrize("rate", [None, 4.0])
def test_a_trace_without_its_tokenizer_is_still_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        rate: float | None) -> None:
    """Where the trace's tokenizer is not on this machine, its prompts are built with a
    byte-level tokenizer standing in, and the line says so (never a traceback); a rate
    planted beside the trace still fails, by its field."""
    def edit(d: dict[str, Any]) -> None:
        d["model"]["tokenizer"] = str(tmp_path / "no-tokenizer-here")
        for s in d["scenarios"]:
            if s.get("dataset_path"):
                s["dataset_path"] = str(REPO / s["dataset_path"])
            if s.get("dataset") == "trace" and rate is not None:
                s["request_rate"] = rate
    path = _planted(tmp_path, edit, REPO / "params/traffic.yaml")
    if rate is not None:
        _fails(path, "scenarios.trace.request_rate", monkeypatch, capsys)
        return
    monkeypatch.chdir(REPO)
    code = main(["run", str(path), "--check"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if "scenario trace, concurrency" in x]
    assert "requests (1 repeat)" in line and "stand-in tokens" in line
    assert f"a byte-level tokenizer stood in for the model's, {tmp_path / 'no-tokenizer-here'}" \
        in line and "no prefix share" in line and "share a prefix" not in line


def test_a_prompt_file_without_its_tokenizer_says_what_was_not_counted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 000's prompt file is sent as written, so it builds without the tokenizer; but then
    nothing was counted against the engine's context (a planted 100-token context passes),
    and the line says so instead of looking like a counted check."""
    gone = tmp_path / "no-tokenizer-here"

    def edit(d: dict[str, Any]) -> None:
        for where in (d, *d["variants"]):
            if "tokenizer" in where.get("model", {}):
                where["model"]["tokenizer"] = str(gone)
        d["engine"]["max_model_len"] = 100
    path = _planted(tmp_path, edit)
    monkeypatch.chdir(REPO)
    code = main(["run", str(path), "--check"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = [x for x in out.splitlines() if ", scenario single-stream, " in x]
    assert len(lines) == 3 and all(
        f"(the model's tokenizer, {gone}, is not on this machine: the prompts' lengths, their "
        "fit in the context and their shared prefixes are not counted)" in x
        and "tokens;" not in x for x in lines), lines


@pytest.mark.parametrize(("context", "field", "said"), [
    (1500, "scenarios.chat.output_len", "to generate pass the engine's max_model_len 1500"),
    (900, "scenarios.chat.input_len", "passes the engine's max_model_len 900 by itself")])
def test_a_hub_models_prompts_longer_than_the_context_without_its_tokenizer(
        context: int, field: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 001's B200 recipe names GLM-4.7-Flash on the hub, whose tokenizer is not here: its
    SGLang-random prompts (up to 1,000 tokens in, 1,000 out) are built with the stand-in at
    the requested lengths, so a planted context their prompt and output pass, or their prompt
    alone, fails --check by its field, as the engine would refuse them after its start."""
    path = _seed001_b200(tmp_path, lambda d: d["engine"].update(max_model_len=context))
    err = _fails(path, field, monkeypatch, capsys)
    assert said in err and "variant sglang, concurrency " in err


def test_a_misspelt_flag_for_an_engine_on_another_machine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The H200 recipe's engine.python is the GPU host's: its flags are held to the pinned
    release's committed parser here, so a typo fails before the eight GPUs are asked for."""
    path = _planted(tmp_path, lambda d: d["engine"]["args"].extend(
        ["--kv-cache-dtpye", "fp8"]))
    err = _fails(path, "engine.args", monkeypatch, capsys)
    assert "--kv-cache-dtpye is not a flag of vllm 0.26.0" in err
    assert "did you mean --kv-cache-dtype" in err


def test_a_request_longer_than_the_engines_context(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A prompt and its output (1,024 tokens, the prompt file's own) past
    engine.max_model_len would be refused by the engine, request after request: --check says
    so by the field."""
    path = _planted(tmp_path, lambda d: d["engine"].update(max_model_len=1000))
    err = _fails(path, "scenarios.single-stream.output_len", monkeypatch, capsys)
    assert "1024 to generate pass the engine's max_model_len 1000" in err


def test_shots_that_leave_no_question(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = _seed001_b200(tmp_path, lambda d: d["accuracy"].update(num_fewshot=10_000))
    _fails(path, "accuracy.num_fewshot", monkeypatch, capsys)


def test_the_command_line_says_it_without_a_traceback(tmp_path: Path) -> None:
    path = _planted(tmp_path, lambda d: _scenario(d).pop("warmups_like_vllm"))
    done = subprocess.run([sys.executable, "-m", "benchlib", "run", str(path), "--check"],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2
    assert "scenarios.single-stream.num_warmups" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("sampling,said", [({"temprature": 0.7}, "unknown key 'temprature'"),
                                           ({"max_tokens": 64}, "'max_tokens' is set by the kit"),
                                           ({"top_p": "0.9"}, "top_p: '0.9' is not a number")])
def test_a_bad_sampling_key(sampling: dict[str, Any], said: str, tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    """An engine ignores a key it does not know: a typo would decode otherwise, unseen."""
    def edit(d: dict[str, Any]) -> None:
        d["scenarios"][1]["sampling"] = {"temperature": 0, **sampling}
        d.pop("writeup", None)
        d["compare"].pop("references", None)
    path = _planted(tmp_path, edit, REPO / "params/seeds/003-qwen38-27b-cmp170hx.yaml")
    monkeypatch.chdir(REPO)
    assert main(["run", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert f"scenarios[1].sampling: {said}" in err, err
    assert "Traceback" not in err


def _fit_recipe(tmp_path: Path, tiny_model: Path, context: int, scenario: str) -> Path:
    path = tmp_path / "fit.yaml"
    path.write_text(f"""\
name: fit
model: {{id: tiny, local_path: "{tiny_model}"}}
engine: {{kind: endpoint, base_url: "http://127.0.0.1:9", max_model_len: {context}}}
scenarios:
  - {scenario}
""", encoding="utf-8")
    return path


@pytest.mark.parametrize(("endpoint", "adds"), [("chat", 13), ("completions", 1)])
def test_the_prompt_is_counted_as_the_engine_counts_it(
        endpoint: str, adds: int, tiny_model: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The tiny model's 63-token prompts and 16 to generate fit a context of 79 by their own
    tokens; the engine also counts what the chat template (13 tokens) or the BOS (1) adds,
    and would refuse each request: --check fails one token short of that, naming the field,
    and passes at it."""
    scenario = (f"{{name: s, endpoint: {endpoint}, dataset: text, input_len: 64, "
                "output_len: 16, concurrencies: [1], num_prompts: 2}")
    err = _fails(_fit_recipe(tmp_path, tiny_model, 63 + adds + 16 - 1, scenario),
                 "scenarios.s.output_len", monkeypatch, capsys)
    assert f"a prompt of {63 + adds} tokens as the engine counts it (63 of its own, {adds} " \
           "its chat template or BOS adds) and 16 to generate" in err
    monkeypatch.chdir(REPO)
    assert main(["run", str(_fit_recipe(tmp_path, tiny_model, 63 + adds + 16, scenario)),
                 "--check"]) == 0


def test_a_warmup_longer_than_the_context(tiny_model: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A prompt file's warmups are its lines after the measured ones: a long one past the
    context would be refused at the run's first request, so --check names num_warmups."""
    lines = ["alpha bravo charlie"] * 2 + [" ".join(["delta"] * 300)]
    (tmp_path / "p.jsonl").write_text("".join(f'{{"prompt": "{x}"}}\n' for x in lines),
                                      encoding="utf-8")
    scenario = (f"{{name: s, endpoint: completions, dataset: file, dataset_path: "
                f"'{tmp_path / 'p.jsonl'}', output_len: 16, concurrencies: [1], "
                "num_prompts: 2, num_warmups: 1}")
    err = _fails(_fit_recipe(tmp_path, tiny_model, 200, scenario), "scenarios.s.num_warmups",
                 monkeypatch, capsys)
    assert ("a warmup's prompt of 301 tokens as the engine counts it (300 of its own"
            in err and "passes the engine's max_model_len 200 by itself" in err)


def test_the_shared_prefix_share_is_counted_in_each_engines_unit(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 001 on the H200 runs SGLang, whose radix cache serves a prefix token by token:
    its text prompts' share is counted at a unit of 1, named; the demo's vLLM at its block."""
    monkeypatch.chdir(REPO)
    assert main(["run", "params/seeds/001-glm47-flash-sglang-h200.yaml", "--check"]) == 0
    out = capsys.readouterr().out
    assert "share a prefix of ≥ 1 token with another (SGLang's default --page-size 1" in out
    assert "share a prefix of ≥ 16 tokens" not in out
    assert main(["run", "params/demo.yaml", "--check"]) == 0
    out = capsys.readouterr().out
    assert "share a prefix of ≥ 16 tokens with another (vLLM's GPU default --block-size" in out
    assert "share a prefix of ≥ 1 token with another (llama.cpp" in out


def test_the_engines_own_chat_template_is_the_one_counted(
        tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A vLLM recipe that passes --chat-template: the engine applies that template, not the
    tokenizer's, so its long preamble counts; the prompts that fit with the tokenizer's 13
    template tokens no longer do."""
    template = tmp_path / "preamble.jinja"
    template.write_text("{{ 'Answer briefly and carefully, citing the passage. ' * 8 }}"
                        "{% for m in messages %}{{ m['content'] }}{% endfor %}",
                        encoding="utf-8")
    scenario = ("{name: s, endpoint: chat, dataset: text, input_len: 64, output_len: 16, "
                "concurrencies: [1], num_prompts: 2}")

    def recipe(args: list[str]) -> Path:
        path = tmp_path / "fit.yaml"
        path.write_text(f"""\
name: fit
model: {{id: tiny, local_path: "{tiny_model}"}}
engine: {{kind: vllm, version: "0.26.0", max_model_len: {63 + 13 + 16}, args: {args}}}
scenarios:
  - {scenario}
""", encoding="utf-8")
        return path

    monkeypatch.chdir(REPO)
    assert main(["run", str(recipe([])), "--check"]) == 0, capsys.readouterr().err
    err = _fails(recipe(["--chat-template", str(template)]), "scenarios.s.input_len",
                 monkeypatch, capsys)
    assert "a prompt of 241 tokens as the engine counts it (63 of its own, 178 its chat " \
        "template or BOS adds) passes the engine's max_model_len 92 by itself" in err
