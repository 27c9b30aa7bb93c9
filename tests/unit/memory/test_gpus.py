"""The GPU catalogue against the names NVML gives devices: a device is the entry whose name
or alias takes the most of its words, its memory within 10 %; any other entry is a mismatch."""

from __future__ import annotations

import pytest

from benchlib.memory import GPUS, device_mismatch, entry_for_device, find_gpu

#: NVML names and totals as devices report them (nvidia-smi / pynvml), and the entry each is
SEEN = [("NVIDIA H100 80GB HBM3", 79.6, "H100-SXM"), ("NVIDIA H200", 140.4, "H200"),
        ("NVIDIA H100 PCIe", 79.6, "H100-PCIe"), ("NVIDIA A100-SXM4-80GB", 79.3, "A100-80GB"),
        ("NVIDIA A100-SXM4-40GB", 39.4, "A100-40GB"),
        ("NVIDIA GeForce RTX 4090", 23.5, "RTX-4090"), ("NVIDIA L40S", 44.4, "L40S"),
        ("NVIDIA L4", 22.0, "L4"), ("NVIDIA B200", 178.4, "B200")]


@pytest.mark.parametrize(("device", "gib", "entry"), SEEN)
def test_each_device_is_its_entry_and_no_other(device: str, gib: float, entry: str) -> None:
    found = entry_for_device(device, gib)
    assert found is not None and found.name == entry
    assert device_mismatch(find_gpu(entry), device, gib) is None
    others = [g.name for g in GPUS if g.name != entry
              and device_mismatch(g, device, gib) is None]
    assert others == []


def test_the_most_words_win_a_word_is_not_a_prefix_and_memory_counts() -> None:
    # H100-SXM's alias h100 is among the PCIe board's words, but H100-PCIe takes two
    assert device_mismatch(find_gpu("H100"), "NVIDIA H100 PCIe", 79.6) == (
        "'NVIDIA H100 PCIe', 79.6 GiB, is the H100-PCIe")
    assert device_mismatch(find_gpu("L4"), "NVIDIA L40S", 44.4) == (
        "'NVIDIA L40S', 44.4 GiB, is the L40S")
    assert device_mismatch(find_gpu("A100-80GB"), "NVIDIA A100 80GB PCIe", 39.4) == (
        "'NVIDIA A100 80GB PCIe', 39.4 GiB, is not in the kit's GPU catalogue")
    assert entry_for_device("Tesla T4", 14.6) is None
    assert entry_for_device("NVIDIA H100 NVL", 93.6) is None  # 94 GB: not the 80 GB boards
