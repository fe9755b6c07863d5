"""The vendor check every diagnosis in the suite goes through (issue 39): no NVIDIA or Intel log advised like AMD's,
no AMD log advised like NVIDIA's.

Whose log it is comes from the diagnosis itself (its ``vendors``: the devices and backends the log names, decided
by ``gfxgate/diagnose/vendor.py`` and ``analyse._log_vendors``), and each finding's own ``vendor``. A finding of
an NVIDIA or Intel GPU, or of no known vendor in a log that names no AMD GPU, gets no HSA override, no ROCm route,
no AMD-only workaround and no remedy with AMD's words; a finding of an AMD GPU, or of no known vendor in a log that
names only AMD GPUs, gets no CUDA runner folder, NVIDIA driver or CUDA architecture advice. A log written on Windows
(its ``os`` fact) gets no HSA override, ROCr variable, systemd step or Linux path (issue 44; ollama/ollama#3107). A log whose vendor is not
known (a CPU-only run, an excerpt without a device line) is checked for what its findings say of themselves.
"""

from __future__ import annotations

from gfxgate.diagnose.platform import LINUX_ONLY, LINUX_WORDS
from gfxgate.diagnose.vendor import AMD, AMD_ONLY, AMD_WORDS, INTEL, NVIDIA, NVIDIA_ONLY, NVIDIA_WORDS

# a conclusion whose remedy names another vendor's variable on purpose: unset ROCR_VISIBLE_DEVICES on an NVIDIA node
CROSS_VENDOR_ON_PURPOSE = {"hidden-by-environment"}


def whose(vendor: str | None, vendors: set[str]) -> str | None:
    """The advice a finding may get: its own vendor's, else the log's only vendor family (AMD, or not AMD)."""
    if vendor:
        return vendor
    if vendors and AMD not in vendors:
        return NVIDIA if NVIDIA in vendors else INTEL
    if vendors == {AMD}:
        return AMD
    return None


def problems(d: dict) -> list[str]:
    """What in one diagnosis (its JSON, as ``gfxgate diagnose --format json`` writes it) is the wrong vendor's advice."""
    vendors = set(d.get("vendors") or ())
    out: list[str] = []
    for f in d["findings"]:
        advice = whose(f.get("vendor"), vendors)
        where = f"{d['log']}: {f['message']} (vendor {f.get('vendor')}, log {sorted(vendors)})"
        if advice in (NVIDIA, INTEL):
            if AMD_WORDS.search(f["remedy"] or ""):
                out.append(f"{where}: AMD remedy {f['remedy']!r}")
            if set(f["workarounds"]) & AMD_ONLY:
                out.append(f"{where}: AMD workarounds {sorted(set(f['workarounds']) & AMD_ONLY)}")
            if any("HSA_OVERRIDE" in line for line in f["context"]):
                out.append(f"{where}: HSA override in its context")
        elif advice == AMD:
            if NVIDIA_WORDS.search(f["remedy"] or ""):
                out.append(f"{where}: NVIDIA remedy {f['remedy']!r}")
            if set(f["workarounds"]) & NVIDIA_ONLY:
                out.append(f"{where}: NVIDIA workarounds {sorted(set(f['workarounds']) & NVIDIA_ONLY)}")
    if any(f["name"] == "os" and f["value"] == "windows" for f in d["facts"]):  # issue 44: no Linux step on Windows
        for f in d["findings"]:
            where = f"{d['log']}: {f['message']} (a Windows log)"
            if LINUX_WORDS.search((f["remedy"] or "").replace("HSA_OVERRIDE_GFX_VERSION has no effect", "")):
                out.append(f"{where}: Linux remedy {f['remedy']!r}")
            if set(f["workarounds"]) & LINUX_ONLY:
                out.append(f"{where}: Linux workarounds {sorted(set(f['workarounds']) & LINUX_ONLY)}")
            if any("systemd" in line or "in effect: the ROCm runtime reports" in line for line in f["context"]):
                out.append(f"{where}: a Linux note in its context {f['context']}")
        for c in d["conclusions"]:
            if LINUX_WORDS.search(c.get("remedy") or ""):
                out.append(f"{d['log']}: conclusion {c['kind']} gives a Windows log Linux advice: {c.get('remedy')!r}")
    log_advice = whose(None, vendors)
    for c in d["conclusions"]:
        if c["kind"] in CROSS_VENDOR_ON_PURPOSE:
            continue
        said = f"{c['text']} {c.get('remedy') or ''}"
        # the text may quote an AMD line of the log (an AMD iGPU skipped beside an NVIDIA card); its advice may not
        if log_advice in (NVIDIA, INTEL) and (AMD_WORDS.search(c.get("remedy") or "") or "HSA_OVERRIDE" in c["text"]):
            out.append(f"{d['log']}: conclusion {c['kind']} advises AMD's stack: {said!r}")
        if log_advice == AMD and NVIDIA_WORDS.search(c.get("remedy") or ""):
            out.append(f"{d['log']}: conclusion {c['kind']} advises NVIDIA's stack: {said!r}")
    return out


def assert_vendor_correct(d: dict) -> dict:
    found = problems(d)
    assert not found, "\n".join(found)
    return d
