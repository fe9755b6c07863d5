"""A step's setting: computed once, shown by every command (scan, workarounds, diagnose, doctor, timeline)."""

from __future__ import annotations

import re
from typing import Any, Iterable

SETTING_FIELDS = ("target", "processor", "number")  # the placeholders a workaround's setting may hold ({number}: 61 of sm_61)


def fill_setting(template: str, target: str | None) -> str:
    """A setting for one target: ``{target}`` is the target id as a build list takes it (``gfx906:xnack+``),
    ``{processor}`` its processor (rocBLAS file names: ``*gfx906*``). Without a target they read ``<target>`` /
    ``<processor>``, the way the other placeholders of a setting (``<ollama>``) are written."""
    processor = target.split(":", 1)[0] if target else None
    number = re.sub(r"^[^0-9]+", "", processor) if processor else None  # sm_61 -> 61 (CMAKE_CUDA_ARCHITECTURES)
    return (template.replace("{target}", target or "<target>").replace("{processor}", processor or "<processor>")
            .replace("{number}", number or "<number>"))


def step_setting(workaround: Any, target: str | None, *, rule: Any = None, cells: Iterable[Any] = ()) -> str:
    """The setting of ``workaround`` as a step for ``target``: the command of the scanned version where a covered
    cell carries one (``setting_from``: the cmake-filter remedy, ``-DOLLAMA_LLAMA_BACKENDS=…`` from v0.30), else the
    route's value (``setting``: OLLAMA_VULKAN=1 where the workaround's own is =0), else the workaround's own at the
    scanned era — filled from the target. scan, workarounds, diagnose and timeline all take a step's setting from
    here (``decide`` calls it for every step)."""
    versioned = next((c.remedy for c in cells if rule is not None and c.layer == rule.setting_from and c.remedy), None)
    return fill_setting(versioned or (rule.setting if rule is not None else None) or workaround.setting, target)
