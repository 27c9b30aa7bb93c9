"""GSM8K for lm-eval: its own task with the data read from local files, the command that runs
it (the API key never on it), and what is refused before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.accuracy import gsm8k_task, run_gsm8k
from benchlib.accuracy._gsm8k import _command, caveat_for
from benchlib.recipe import AccuracySpec

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "params" / "data" / "gsm8k-sample"


def test_the_task_is_lm_evals_gsm8k_on_local_files() -> None:
    task = gsm8k_task(AccuracySpec(data_dir=SAMPLE, num_fewshot=4, max_gen_toks=128))
    files = task["dataset_kwargs"]["data_files"]
    assert task["dataset_path"] == "json" and Path(files["test"]).is_absolute()
    assert Path(files["test"]).read_text().count("\n") == 7
    assert Path(files["train"]).read_text().count("\n") == 5
    assert task["num_fewshot"] == 4 and task["fewshot_split"] == "train"
    assert task["doc_to_text"] == "Question: {{question}}\nAnswer:"
    assert task["generation_kwargs"]["max_gen_toks"] == 128
    assert [f["name"] for f in task["filter_list"]] == ["strict-match", "flexible-extract"]


def test_missing_data_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no test\.jsonl") as info:
        gsm8k_task(AccuracySpec(data_dir=tmp_path))
    assert info.value.field == "accuracy.data_dir"


def test_the_command_for_each_endpoint() -> None:
    spec = AccuracySpec(data_dir=SAMPLE, limit=3, concurrency=2)
    argv = _command(spec, "http://127.0.0.1:8000", "tiny", Path("/t"), Path("/o"))
    assert argv[1:5] == ["-m", "lm_eval", "--model", "local-completions"]
    args = argv[argv.index("--model_args") + 1]
    assert "base_url=http://127.0.0.1:8000/v1/completions" in args
    assert "num_concurrent=2" in args and "tokenizer_backend=None" in args
    assert argv[argv.index("--limit") + 1] == "3" and "--apply_chat_template" not in argv
    chat = _command(spec.model_copy(update={"endpoint": "chat"}), "http://h:1", "m",
                    Path("/t"), Path("/o"))
    assert "local-chat-completions" in chat and "--apply_chat_template" in chat
    assert not any("key" in a.lower() for a in argv + chat)


def test_without_lm_eval_it_says_how_to_get_it(tmp_path: Path) -> None:
    spec = AccuracySpec(data_dir=SAMPLE, python=tmp_path / "nope" / "python")
    with pytest.raises(UsageError, match="make lm-eval") as info:
        run_gsm8k(spec, "http://127.0.0.1:1", "m", tmp_path)
    assert info.value.field == "accuracy.python"


def test_a_score_says_when_it_is_a_smoke_test_or_its_shots_are_not_lm_evals() -> None:
    """Fewer than 100 items, or shots drawn from fewer than GSM8K's 7,473 training items (the
    kit ships five): each is said; neither, nothing."""
    both = caveat_for(7, 0.1234, 5, 5)
    assert both is not None and "7 items: a smoke test" in both and "0.12" in both
    assert "drawn from 5 training items, not GSM8K's 7,473" in both
    assert caveat_for(1319, 0.01, 7473, 5) is None
    assert caveat_for(1319, 0.01, 5, 0) is None  # zero-shot: no shots to differ
    alone = caveat_for(3, None, 7473, 5)
    assert alone is not None and "nan" in alone and "training" not in alone
