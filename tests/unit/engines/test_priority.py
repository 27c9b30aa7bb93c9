"""``engine.nice``: the named processes of an engine's group, every thread, and nothing else."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from benchlib.engines import EngineProcess, lower_priority

# a leader that spawns a two-threaded child named like vLLM's engine core, then waits
_ENGINE = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", '''
import threading, time
open("/proc/self/comm", "w").write("VLLM::EngineCore")
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print("child ready", flush=True)
time.sleep(60)
'''])
time.sleep(60)
"""


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _nice_of(tid: int) -> int:
    stat = Path(f"/proc/{tid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[16])  # field 19: nice


def test_every_thread_of_the_named_process_is_reniced_and_no_other(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    engine = EngineProcess([sys.executable, "-c", _ENGINE], log_path=log,
                           ready_url="http://127.0.0.1:9/never")
    engine.start()
    try:
        deadline = time.monotonic() + 20
        while b"child ready" not in (log.read_bytes() if log.exists() else b""):
            assert time.monotonic() < deadline, "the child never started"
            time.sleep(0.05)
        assert engine.pgid is not None
        done = lower_priority(engine.pgid, {"VLLM::EngineCore": 10, "VLLM::Worker": 5})
        assert done == {"VLLM::EngineCore": 2, "VLLM::Worker": 0}  # main thread + one more
        core = [int(p) for p in os.listdir("/proc") if p.isdigit()  # of this group only:
                and Path(f"/proc/{p}/comm").exists()  # another engine may run on the host
                and Path(f"/proc/{p}/comm").read_text().strip() == "VLLM::EngineCor"
                and _group_of(int(p)) == engine.pgid]
        assert len(core) == 1
        tids = [int(t) for t in os.listdir(f"/proc/{core[0]}/task")]
        assert [_nice_of(t) for t in tids] == [10, 10]
        assert engine.proc is not None and _nice_of(engine.proc.pid) == 0  # the leader: as is
        assert _nice_of(os.getpid()) == 0  # and not this process, outside the group
    finally:
        engine.stop()
