"""A step's setting: computed once, shown by every command (scan, workarounds, diagnose, doctor, timeline)."""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

SETTING_FIELDS = (
    "target",
    "processor",
    "number",
)  # the placeholders a workaround's setting may hold ({number}: 61 of sm_61)


def fill_setting(template: str, target: str | None) -> str:
    """A setting for one target: ``{target}`` is the target id as a build list takes it (``gfx906:xnack+``),
    ``{processor}`` its processor (rocBLAS file names: ``*gfx906*``). Without a target they read ``<target>`` /
    ``<processor>``, the way the other placeholders of a setting (``<ollama>``) are written."""
    processor = target.split(":", 1)[0] if target else None
    number = re.sub(r"^[^0-9]+", "", processor) if processor else None  # sm_61 -> 61 (CMAKE_CUDA_ARCHITECTURES)
    return (
        template.replace("{target}", target or "<target>")
        .replace("{processor}", processor or "<processor>")
        .replace("{number}", number or "<number>")
    )


def step_setting(workaround: Any, target: str | None, *, rule: Any = None, cells: Iterable[Any] = ()) -> str:
    """The setting of ``workaround`` as a step for ``target``: the command of the scanned version where a covered
    cell carries one (``setting_from``: the cmake-filter remedy, ``-DOLLAMA_LLAMA_BACKENDS=…`` from v0.30), else the
    route's value (``setting``: OLLAMA_VULKAN=1 where the workaround's own is =0), else the workaround's own at the
    scanned era — filled from the target. scan, workarounds, diagnose and timeline all take a step's setting from
    here (``decide`` calls it for every step)."""
    versioned = next((c.remedy for c in cells if rule is not None and c.layer == rule.setting_from and c.remedy), None)
    return fill_setting(versioned or (rule.setting if rule is not None else None) or workaround.setting, target)


def build_recipe(
    build: Mapping[str, Any],
    setting: str,
    version: str | None,
    *,
    distro: Sequence[str] = (),
    exec_start: str | None = None,
) -> tuple[str, ...]:
    """The build route as commands at ``version`` (``0.32.15`` or ``v0.32.15``), from rules/installs.yaml's ``build``
    (passed in: this layer reads no file): the HIP SDK of the release's ROCm (for ``distro``'s family where a machine
    says it, else the generic line), the clone at the tag, the route's configure line (``setting``), the build, the
    install under /usr/local, the service pointed at it (a unit whose ``exec_start`` is elsewhere) and its restart.
    scan prints it under the build step; doctor with this machine's distribution and unit."""
    v = (version or "").removeprefix("v") or "<version>"
    rocm = build["rocm"].get(v)
    family = next((d for d in distro if d in build["sdk"]), "other")
    out = [build["sdk"][family].replace("{rocm}", rocm or f"of v{v}'s Dockerfile")]
    if rocm is None:
        out.append(
            "# the ROCm version v" + v + " builds with: " + build["lookup"].replace("{version}", v) + " (in the clone)"
        )
    out.append(build["clone"].replace("{version}", v))
    out.append(setting if "cmake --build" in setting else f"{setting} && {build['build']}")
    out += [build["go"], build["install"]]
    if exec_start and not exec_start.startswith("/usr/local/bin/ollama"):
        out += [
            "sudo systemctl edit ollama",
            "# add, in the editor (saved as /etc/systemd/system/ollama.service.d/override.conf):",
            build["service"],
        ]
    out.append("sudo systemctl daemon-reload && sudo systemctl restart ollama")
    return tuple(out)


def recipe_for(build: Mapping[str, Any] | None, workaround: str, setting: str, version: str | None) -> tuple[str, ...]:
    """The recipe of a route step, or none: only the build steps rules/installs.yaml's ``build.workarounds`` names
    (the Linux ROCm runner's build; an NVIDIA or Windows build has its own configure line and no recipe here)."""
    if not build or workaround not in build.get("workarounds", ()) or not setting.startswith("cmake "):
        return ()
    return build_recipe(build, setting, version)
