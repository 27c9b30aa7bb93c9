"""The GPU catalogue against the names NVML gives devices: an entry is the device when all
the words of its name or of an alias are the device's, and its memory is within 10 %."""

from __future__ import annotations

import pytest

from benchlib.memory import GPUS, device_mismatch, find_gpu

#: NVML names and totals as devices report them (nvidia-smi / pynvml), and the entry each is
SEEN = [("NVIDIA H100 80GB HBM3", 79.6, "H100-SXM"), ("NVIDIA H200", 140.4, "H200"),
        ("NVIDIA H100 PCIe", 79.6, "H100-PCIe"), ("NVIDIA A100-SXM4-80GB", 79.3, "A100-80GB"),
        ("NVIDIA GeForce RTX 4090", 23.5, "RTX-4090"), ("NVIDIA L40S", 44.4, "L40S"),
        ("NVIDIA L4", 22.0, "L4"), ("NVIDIA B200", 178.4, "B200")]


@pytest.mark.parametrize(("device", "gib", "entry"), SEEN)
def test_each_device_is_its_entry_and_no_other_of_its_size(device: str, gib: float,
                                                            entry: str) -> None:
    assert device_mismatch(find_gpu(entry), device, gib) is None
    # no other entry takes this device for itself (H100-SXM's alias h100 takes a PCIe board
    # by name: the same memory, so a plan for it is not flagged; every other pair is)
    others = [g.name for g in GPUS if g.name != entry
              and device_mismatch(g, device, gib) is None]
    assert others in ([], ["H100-SXM"]) and (not others or entry == "H100-PCIe"), others


def test_a_word_is_not_a_prefix_and_memory_counts() -> None:
    assert device_mismatch(find_gpu("L4"), "NVIDIA L40S", 44.4) == (
        "'NVIDIA L40S' is not a L4; 44.4 GiB against the L4's 22.0")
    assert device_mismatch(find_gpu("A100-80GB"), "NVIDIA A100-SXM4-40GB", 39.4) == (
        "39.4 GiB against the A100-80GB's 79.2")
