"""``01_download``: the pinned snapshot fetched from the hub (disk space checked first), or
the recipe's local folder verified; the resolved commit and a content hash recorded. The
runner launches and measures from the folder this step names (:attr:`DownloadResult.model_path`)
and records it in every later step's provenance.

A GGUF model (``model.format: gguf``) is one file: ``model.local_path`` names it (or a folder
holding it), or the hub repo's files are narrowed by ``model.include`` (``["*Q8_0.gguf"]``);
the step names that file (the first shard of a split model, as llama.cpp's ``-m`` wants it),
hashes it with its shards, and hashes a speculative draft model file too."""

from __future__ import annotations

import fnmatch
import shutil
from pathlib import Path
from typing import Literal

from benchlib._exceptions import BenchlibError, UsageError
from benchlib._secrets import env_secret
from benchlib.pipeline._declare import RunFacts, Step
from benchlib.pipeline._standalone import results_file, step_folder
from benchlib.provenance import (
    ModelFiles,
    gguf_shards,
    hash_model_folder,
    read_model_origin,
)
from benchlib.recipe import Recipe
from benchlib.runs import STEP_DOWNLOAD, DownloadResult, save_results

__all__ = ["STEP", "download_model"]



_GGUF_MAGIC = b"GGUF"


def _gguf_file(path: Path, include: list[str]) -> Path:
    """The one GGUF file ``path`` names (a file, or a folder narrowed by ``include``)."""
    if path.is_file():
        found = [path]
    else:
        found = sorted(p for p in path.rglob("*.gguf") if not include or any(
            fnmatch.fnmatch(p.relative_to(path).as_posix(), pat) for pat in include))
        found = [p for p in found if gguf_shards(p)[0] == p]  # a split model: its first shard
    if len(found) != 1:
        names = ", ".join(p.name for p in found[:6]) or "none"
        raise UsageError("model.include", f"{path} holds {len(found)} GGUF models ({names}): "
                         "name one file in model.local_path, or narrow model.include "
                         "(e.g. [\"*Q8_0.gguf\"])")
    with found[0].open("rb") as fh:
        if fh.read(4) != _GGUF_MAGIC:
            raise UsageError("model.local_path", f"{found[0]} is not a GGUF file (no GGUF "
                             "magic at its start)")
    return found[0]


def _fetch(recipe: Recipe) -> tuple[Path, str]:
    """Download the pinned snapshot (after checking the disk has room); its folder and
    the commit the pin resolved to."""
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.constants import HF_HUB_CACHE
    from huggingface_hub.utils._paths import filter_repo_objects

    spec = recipe.model
    token = env_secret(spec.hf_token_env)
    info = HfApi().model_info(spec.id, revision=spec.revision, files_metadata=True,
                              token=token)
    wanted = list(filter_repo_objects(info.siblings or [], key=lambda f: f.rfilename,
                                      allow_patterns=spec.include or None,
                                      ignore_patterns=spec.exclude or None))
    need = sum((f.size or 0) for f in wanted)
    cache = Path(HF_HUB_CACHE)
    while not cache.exists():
        cache = cache.parent
    free = shutil.disk_usage(cache).free
    print(f"{spec.id}@{info.sha}: {len(wanted)} files, {need / 2**30:.2f} GiB; "
          f"{free / 2**30:.1f} GiB free in {cache}", flush=True)
    if need > free:
        raise BenchlibError(f"{spec.id}@{info.sha} needs {need / 2**30:.1f} GiB, only "
                            f"{free / 2**30:.1f} GiB free in {cache}: narrow "
                            "model.include / model.exclude or free disk space")
    path = Path(snapshot_download(spec.id, revision=info.sha, token=token,
                                  allow_patterns=spec.include or None,
                                  ignore_patterns=spec.exclude or None))
    return path, str(info.sha)


def download_model(recipe: Recipe, results_path: str | Path = "", *,
                   run_dir: str | Path = "") -> DownloadResult:
    """Fetch or verify the model; saved to ``results_path`` (else ``run_dir``'s results
    file)."""
    spec = recipe.model
    if spec.local_path is not None:
        path = spec.local_path
        if not path.exists():
            raise UsageError("model.local_path", f"{path} does not exist")
        if spec.format != "gguf" and not (path / "config.json").is_file():
            raise UsageError("model.local_path", f"{path} holds no config.json (a GGUF model "
                             "needs model.format: gguf)")
        source: Literal["local", "hub"] = "local"
        resolved: str | None = None
    else:
        path, resolved = _fetch(recipe)
        source = "hub"
    if spec.format == "gguf":
        path = _gguf_file(path, spec.include if spec.local_path is None else [])
    draft = recipe.engine.speculative.draft_model
    if draft is not None and not draft.exists():
        raise UsageError("speculative.draft_model", f"{draft} does not exist")
    result = DownloadResult(source=source, model_path=str(path), revision=spec.revision,
                            resolved_revision=resolved, files_hash=hash_model_folder(path),
                            draft_model=str(draft) if draft else None,
                            draft_files_hash=hash_model_folder(draft) if draft else None,
                            origin=read_model_origin(path) if source == "local" else None)
    folder = step_folder(run_dir, recipe, scratch=False)
    save_results(results_file(results_path, folder, STEP.name), result)
    return result


def _apply(result: DownloadResult, facts: RunFacts) -> RunFacts:
    """Later steps launch and measure from this folder; provenance names its files."""
    return facts.model_copy(update={"model": ModelFiles(
        path=Path(result.model_path), resolved_revision=result.resolved_revision,
        files_hash=result.files_hash, origin=result.origin)})


STEP = Step[DownloadResult](
    name=STEP_DOWNLOAD.name, title="01 · Download",
    about="The pinned snapshot from the hub (disk space checked first), or the local "
          "folder verified; the resolved commit and a content hash are recorded.",
    result=DownloadResult,
    cells=("download = bp.download_model(recipe, results_path, run_dir=run_dir)\ndownload",),
    apply=_apply)
