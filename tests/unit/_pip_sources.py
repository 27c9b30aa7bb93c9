"""pip with sources the test controls: a local folder of tiny fake wheels and an empty
local index, nothing from the machine's pip configuration, no network."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence
from pathlib import Path

FALLBACK = "--extra-index-url https://download.pytorch.org/whl/cpu"


def fake_wheel(folder: Path, name: str, version: str, requires: Sequence[str] = ()) -> Path:
    """A minimal installable wheel: enough metadata for pip to resolve it (``py3-none-any``,
    so it fits every machine), named like the real one (``torch-2.13.0+cpu-….whl``)."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    metadata = "".join([f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                        *(f"Requires-Dist: {r}\n" for r in requires)])
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr(f"{info}/METADATA", metadata)
        whl.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                                      "Root-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr(f"{info}/RECORD", f"{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n")
    return path


def pip_env(tmp_path: Path, wheels: Path) -> dict[str, str]:
    """pip's sources are exactly: an empty local index and the ``wheels`` folder."""
    empty = tmp_path / "empty-index"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=empty.as_uri(),
               PIP_FIND_LINKS=str(wheels), PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_INPUT="1", PIP_RETRIES="0")
    return env
