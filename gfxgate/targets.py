"""GPU targets: processors, target ids with features, macros, HSA overrides and compatibility.

The data is ``rules/targets.yaml``; this module turns it into named tuples once (immutable values that no
report serialises; on CPython 3.11 a named tuple costs a fifth of a frozen dataclass to define) and answers
questions about it. Target id syntax follows LLVM: ``gfx90a:sramecc+:xnack-`` (processor, then
``feature+``/``feature-`` settings; a missing feature means "any").
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import NamedTuple, Protocol, Sequence
import os

from gfxgate.errors import RuleError, TargetError
from gfxgate.lazyre import lazy_compile
from gfxgate.resources import rules_dir
from gfxgate.datafiles import load_yaml  # here: the artifacts scanner imports this module for its patterns

AMD, NVIDIA = "amd", "nvidia"  # the vendors of the target model (a TargetId's vendor, rules/targets.yaml vendors:)
FEATURES = ("sramecc", "xnack")  # alphabetical, the order of a canonical target id

# -- AMD's grammar of target names (LLVM's AMDGPU processors), once: nothing outside this module spells a gfx name --
_PROCESSOR_RE = lazy_compile(r"^gfx(?P<major>[0-9]+)(?P<minor>[0-9a-f])(?P<stepping>[0-9a-f])$")
_OVERRIDE_RE = lazy_compile(r"^(?P<major>[0-9]+)\.(?P<minor>[0-9]+)\.(?P<stepping>[0-9]+)$")
_AMD_SPELLING = lazy_compile(r"^gfx[0-9]", re.I)  # a name AMD's parser answers for (else: a card name or a PCI id)
# the target id at the end of an offload bundle entry id (``hipv4-amdgcn-amd-amdhsa--gfx906:xnack-``)
AMD_BUNDLE_TARGET = lazy_compile(r"-(gfx[0-9a-z]+(?:-[0-9]+)*(?:-generic)?(?::[a-z]+[+-])*)$")
# a processor or generic target named in a binary's bytes (a library's strings, a file name inside it)
AMD_TARGET_BYTES = lazy_compile(rb"gfx[0-9]{1,2}(?:-[0-9])?-generic|gfx[0-9]{1,2}[0-9a-f]{2}(?![0-9a-z])")

# -- NVIDIA's: sm_90, sm90, compute_90, "9.0", "compute capability 9.0", "cc 9.0" ----------------------------------
_SM_RE = lazy_compile(r"^(?:sm_?|compute_)(?P<digits>[0-9]{2,3})$")
_CC_RE = lazy_compile(r"^(?:(?:compute capability|cc)\s*)?(?P<major>[0-9]{1,2})\.(?P<minor>[0-9])$")
# nvidia-smi's names carry the form factor and memory: "Tesla V100-SXM2-16GB", "NVIDIA H100 80GB HBM3", "A100-PCIE-40GB"
_NV_FORM_FACTOR = lazy_compile(r"(?:[- ](?:sxm[0-9]?|pcie|nvl|hbm[0-9]e?|[0-9]+ ?gb)\b)+$")
_NVIDIA_SPELLING = lazy_compile(r"^(?:sm_?|compute_)[0-9]|^(?:(?:compute capability|cc)\s*)?[0-9]{1,2}\.[0-9]$", re.I)


class Processor(NamedTuple):
    """One GPU processor of ``rules/targets.yaml``: its family, products, features and generic members."""

    name: str
    mach: int
    family: str
    codename: str = ""
    products: tuple[str, ...] = ()
    features: frozenset[str] = frozenset()
    members: tuple[str, ...] = ()  # non-empty for generic targets
    integrated: bool = False  # an APU's GPU (shares system memory; discovery treats it differently)
    names: tuple[tuple[str, str], ...] = ()  # (card name, source id) from the `names:` lists of rules/targets.yaml

    @property
    def is_generic(self) -> bool:
        return bool(self.members)

    @property
    def macros(self) -> dict[str, str]:
        """The device macros clang predefines for this processor (checked against clang-19 in tests)."""
        if self.is_generic:
            family = int(self.name[3:].split("-")[0])
            return {f"__{self.name.replace('-', '_')}__": "1", f"__GFX{family}__": "1"}
        match = _PROCESSOR_RE.match(self.name)
        own = {f"__{self.name}__": "1"}
        return {**own, f"__GFX{match.group('major')}__": "1"} if match else own

    @property
    def hsa_override(self) -> str | None:
        """The ``HSA_OVERRIDE_GFX_VERSION`` value that makes the runtime report this processor."""
        match = _PROCESSOR_RE.match(self.name)
        if self.is_generic or not match:
            return None
        return f"{int(match['major'])}.{int(match['minor'], 16)}.{int(match['stepping'], 16)}"


class NvidiaArch(NamedTuple):
    """One NVIDIA architecture of ``rules/targets.yaml`` (``nvidia:``): nvcc's ``sm_XX``, its compute capability."""

    name: str  # sm_90
    capability: str  # 9.0
    family: str
    products: tuple[str, ...] = ()
    jetson: bool = False  # a Tegra/Jetson integrated GPU (Ollama builds its jetpack runners for these)
    names: tuple[
        tuple[str, str], ...
    ] = ()  # (card name, source id) from the `nvidia_names:` lists of rules/targets.yaml

    @property
    def digits(self) -> str:
        """CMake's CMAKE_CUDA_ARCHITECTURES entry and ggml's printed arch number without its 0: ``61``."""
        return self.name.removeprefix("sm_")

    @property
    def cc_number(self) -> int:
        """The capability as one number, major*10+minor (6.1 -> 61, 12.0 -> 120): what CUDA_ARCHITECTURES lists."""
        major, minor = self.capability.split(".")
        return int(major) * 10 + int(minor)


class TargetId(NamedTuple):
    """A processor plus explicit feature settings; ``str()`` gives the canonical target id (LLVM's for AMD,
    ``gfx90a:sramecc+:xnack-``; nvcc's for NVIDIA, ``sm_90``, which has no features)."""

    processor: str
    settings: tuple[tuple[str, str], ...] = ()  # sorted (feature, "+"|"-")
    vendor: str = AMD  # AMD or NVIDIA: which vendor's model answers for the processor

    def __str__(self) -> str:
        return self.processor + "".join(f":{name}{sign}" for name, sign in self.settings)

    def feature(self, name: str) -> str | None:
        return dict(self.settings).get(name)


class Compatibility(NamedTuple):
    """Whether code built for one target id runs on a device target id, and why."""

    kind: str  # "exact", "any-feature", "generic", "conditional" or "none"
    detail: str

    @property
    def runs(self) -> bool:
        return self.kind != "none"


class TargetCatalog:
    """All known processors and generic targets, with the questions asked of them."""

    def __init__(
        self,
        processors: list[Processor],
        nvidia: Sequence[NvidiaArch] = (),
        *,
        probes: Sequence[str] = (),
        nvidia_probes: Sequence[str] = (),
    ) -> None:
        self.by_name = {p.name: p for p in processors}
        self.nvidia = {a.name: a for a in nvidia}  # not in by_name: the gate matrix models AMD processors only
        # the vendor seam: each vendor's names, parser and probes; a target of one vendor never reaches another's code
        self.vendors: dict[str, Vendor] = {AMD: AmdVendor(self, probes), NVIDIA: NvidiaVendor(self, nvidia_probes)}
        self._generic_of: dict[str, list[str]] = {}
        for proc in processors:
            for member in proc.members:
                if member not in self.by_name:
                    raise RuleError(f"targets.yaml: generic {proc.name} lists unknown member {member}")
                self._generic_of.setdefault(member, []).append(proc.name)
        self._vendor_of: dict[str, Vendor | None] = {}  # vendor_of's answers: the answer reads one per route

    # -- lookup -------------------------------------------------------------------------------
    def names(self) -> list[str]:
        return sorted(self.by_name)

    def processor(self, name: str) -> Processor:
        try:
            return self.by_name[name]
        except KeyError:
            raise TargetError(f"unknown GPU target {name!r}", hint=self._suggest(name)) from None

    def generics_of(self, name: str) -> list[Processor]:
        return [self.by_name[g] for g in self._generic_of.get(name, [])]

    def _suggest(self, text: str) -> str | None:
        from gfxgate.suggest import did_you_mean

        return did_you_mean(
            text.lower(),
            self.names(),
            n=4,
            cutoff=0.5,
            then="(`gfxgate targets` lists all)",
            otherwise="`gfxgate targets` lists the known targets",
        )

    def parse(self, text: str) -> TargetId:
        """Parse ``gfx906:xnack-`` (or a product name such as ``"RX Vega 56"``) into a TargetId."""
        raw = text.strip()
        if not raw:
            raise TargetError("empty GPU target")
        head, *features = raw.split(":")
        name = head.lower()
        pci = pci_id(raw) if name not in self.by_name else None
        if pci is not None:
            head, features = raw, []
        if name not in self.by_name:
            if features:
                raise TargetError(f"unknown GPU target {text!r}", hint=self._suggest(name))
            found = self.by_card(head)
            if len(found) > 1:
                raise TargetError(
                    f"{text!r} names several GPU targets: " + ", ".join(f"{p} ({n})" for p, n in found),
                    hint="name the card more precisely (e.g. the CPU model of an APU) or the gfx target",
                )
            if not found and pci is not None:
                names = marketing_names(*pci)
                raise TargetError(
                    f"PCI id {text!r}: "
                    + (
                        f"libdrm's amdgpu.ids names it {' / '.join(names)}, which gfxgate does not know"
                        if names
                        else "no entry in libdrm's amdgpu.ids ("
                        + (" or ".join("/" + p for p in AMDGPU_IDS) if not _installed_ids("/") else "installed")
                        + (")" if _installed_ids("/") else ": not installed)")
                    ),
                    hint="the kernel names the target: /sys/class/kfd/kfd/topology/nodes/*/properties gfx_target_version "
                    "(`gfxgate doctor` reads it)",
                )
            if not found:
                raise TargetError(f"unknown GPU target {text!r}", hint=self._suggest(name))
            name = found[0][0]
        proc = self.by_name[name]
        settings: dict[str, str] = {}
        for item in features:
            feat, sign = item[:-1], item[-1:]
            if sign not in "+-" or not sign or feat not in FEATURES:
                raise TargetError(
                    f"bad feature {item!r} in target {text!r}",
                    hint="features are xnack+/xnack-/sramecc+/sramecc-, e.g. gfx90a:sramecc+:xnack-",
                )
            if feat not in proc.features:
                raise TargetError(f"{proc.name} has no {feat} feature (target {text!r})")
            if feat in settings:
                raise TargetError(f"feature {feat} given twice in target {text!r}")
            settings[feat] = sign
        return TargetId(proc.name, tuple(sorted(settings.items())))

    def by_card(self, text: str) -> list[tuple[str, str]]:
        """(processor, the card name that matched) for a card name: "Radeon 780M", "6950 XT", "Ryzen 7 5700G", a
        PCI id ("0x687f", "1002:687f", "687f:c3", read from libdrm's amdgpu.ids) … One entry per processor; an
        exact name wins over a name that merely ends with the words given."""
        pci = pci_id(text)
        if pci is not None:
            out: list[tuple[str, str]] = []
            for marketing in marketing_names(*pci):
                for part in marketing.split(" / "):  # "AMD Instinct MI60 / MI50"
                    for name, card in self.by_card(part):
                        if name not in [p for p, _ in out]:
                            out.append((name, f"{card} (amdgpu.ids: {marketing})"))
            return out
        wanted = card_words(text)
        if not wanted:
            return []
        whole_only = len(wanted) == 1 and wanted[0].isalpha()  # "VII" is the Radeon VII, "pro" is no card
        exact: dict[str, str] = {}
        tail: dict[str, str] = {}
        cpu_tail: dict[str, str] = {}  # "7600" is the RX 7600 before the Ryzen 5 7600; "5700G" is still a Ryzen
        for proc in self.by_name.values():
            for card in (*proc.products, *(n for n, _ in proc.names)):
                words = card_words(card)
                if words == wanted:
                    exact.setdefault(proc.name, card)
                elif not whole_only and len(words) > len(wanted) and words[-len(wanted) :] == wanted:
                    (cpu_tail if words[0] == "ryzen" else tail).setdefault(proc.name, card)
        order = list(self.by_name)
        return sorted((exact or tail or cpu_tail).items(), key=lambda item: order.index(item[0]))

    def card_sources(self, processor: str) -> dict[str, list[str]]:
        """The processor's card names per source id (rules/targets.yaml `names:`)."""
        out: dict[str, list[str]] = {}
        for card, source in self.processor(processor).names:
            out.setdefault(source, []).append(card)
        return out

    # -- NVIDIA (sweep and diagnose: the GPU a run used) -----------------------------------------
    def nvidia_arch(self, text: str) -> NvidiaArch:
        """``sm_90`` / ``sm90`` / ``compute_90`` / ``9.0`` / ``compute capability 9.0`` / a product (``H200``)."""
        raw = " ".join(text.strip().lower().split())
        match = _SM_RE.match(raw)
        name = f"sm_{match['digits']}" if match else None
        if name is None:
            match = _CC_RE.match(raw)
            if match:
                name = self._sm_of_capability(f"{int(match['major'])}.{match['minor']}")
        if name is None:
            name = self._nvidia_product(raw)
        if name is None and len(several := self.nvidia_products(raw)) > 1:
            raise TargetError(
                f"{text!r} names several NVIDIA targets: {', '.join(several)}",
                hint="name the card more precisely (its line: GeForce, Quadro, Tesla) or the sm_XX target",
            )
        if name is None or name not in self.nvidia:
            known = ", ".join(self.nvidia) or "none"
            raise TargetError(
                f"unknown NVIDIA target {text!r}", hint=f"known: {known} (sm_XX or a compute capability such as 9.0)"
            )
        return self.nvidia[name]

    def from_compute_capability(self, capability: str) -> NvidiaArch | None:
        """The architecture of a ``compute capability X.Y`` that llama.cpp or nvidia-smi printed; None if unknown."""
        name = self._sm_of_capability(capability.strip())
        return self.nvidia.get(name) if name else None

    def _sm_of_capability(self, capability: str) -> str | None:
        return next((a.name for a in self.nvidia.values() if a.capability == capability), None)

    def _nvidia_product(self, raw: str) -> str | None:
        """The architecture of a product name: exact ("Tesla P40", "GeForce GTX 1080") before a name the words end
        ("P40", "GTX 1080"); nvidia-smi's form factor and memory ("Tesla V100-SXM2-16GB", "H100 80GB HBM3") are
        dropped. None when no name or several architectures match."""
        cleaned = _NV_FORM_FACTOR.sub("", raw.removeprefix("nvidia ").strip())
        wanted = _nv_key(cleaned)
        if len(wanted) < 2:
            return None
        exact: set[str] = set()
        tail: set[str] = set()
        for arch in self.nvidia.values():
            for product in (*arch.products, *(n for n, _ in arch.names)):
                key = _nv_key(product)
                if key == wanted:
                    exact.add(arch.name)
                elif key.endswith(wanted) and (len(wanted) >= 3 or not wanted.isdigit()):
                    tail.add(arch.name)
        hits = exact or tail
        return hits.pop() if len(hits) == 1 else None

    def nvidia_products(self, text: str) -> list[str]:
        """The architectures a product name could be (for an error that says which): exact names, else tails."""
        cleaned = _NV_FORM_FACTOR.sub("", " ".join(text.strip().lower().split()).removeprefix("nvidia ").strip())
        wanted = _nv_key(cleaned)
        return (
            [
                a.name
                for a in self.nvidia.values()
                if any(_nv_key(p).endswith(wanted) for p in (*a.products, *(n for n, _ in a.names)))
            ]
            if len(wanted) >= 2
            else []
        )

    # -- any vendor (sweep, diagnose, `gfxgate targets`) -------------------------------------------------
    def parse_target(self, text: str) -> TargetId:
        """A GPU target of any vendor: ``gfx906:xnack-`` (AMD), ``sm_90`` / ``9.0`` (NVIDIA), or a card name.

        The vendor whose spelling the text has parses it alone; a name no vendor spells (a card, a product, a PCI
        id) is tried as AMD's cards, then as NVIDIA's products, and the AMD error is the one given."""
        raw = text.strip()
        for vendor in self.vendors.values():
            if vendor.spelling.match(raw):
                return vendor.parse(raw)
        try:
            return self.vendors[AMD].parse(raw)
        except TargetError as exc:
            try:
                return self.vendors[NVIDIA].parse(raw)
            except TargetError as nv_exc:
                if " names several NVIDIA targets" in str(nv_exc) and " names several " not in str(exc):
                    raise  # "5000": Quadro P5000 and RTX 5000, no AMD card: NVIDIA's candidates are the answer
                raise exc from None

    def parse_gpu(self, text: str) -> str:
        """The canonical name of the GPU a sweep ran on: an AMD target id (``gfx906:xnack-``) or ``sm_90``."""
        return str(self.parse_target(text))

    def vendor_of(self, name: str) -> Vendor | None:
        """The vendor of a canonical target name as recorded (a worklog's gpu_target); None for a name no vendor
        knows (a worklog written by hand, an older gfxgate)."""
        processor = name.split(":", 1)[0].strip()
        if processor in self._vendor_of:
            return self._vendor_of[processor]
        vendor = next((v for v in self.vendors.values() if v.spelling.match(processor) and v.knows(processor)), None)
        if len(self._vendor_of) < 4096:  # names read from files (worklogs) are bounded here, not by the input
            self._vendor_of[processor] = vendor
        return vendor

    def device_vendor(self, name: str) -> Vendor | None:
        """The vendor a device name a driver printed names by its first word (``NVIDIA H200``); None when the name
        does not say (AMD's names often do not: ``Radeon RX Vega``, ``RADV VEGA10``, ``AMD Radeon Graphics``)."""
        return next((v for v in self.vendors.values() if v.device_name and v.device_name.match(name.strip())), None)

    def describe_gpu(self, name: str) -> str:
        """A recorded target as a report names it: its vendor's description (``sm_90 (NVIDIA Hopper, compute
        capability 9.0)``), the name itself when no vendor knows it."""
        vendor = self.vendor_of(name)
        return vendor.describe(name) if vendor else name

    # -- HSA_OVERRIDE_GFX_VERSION ---------------------------------------------------------------
    def from_hsa_override(self, value: str) -> Processor:
        match = _OVERRIDE_RE.match(value.strip())
        if not match:
            raise TargetError(
                f"bad HSA_OVERRIDE_GFX_VERSION {value!r}", hint="the form is major.minor.stepping, e.g. 9.0.0"
            )
        major, minor, stepping = (int(match[k]) for k in ("major", "minor", "stepping"))
        if minor > 15 or stepping > 15:
            raise TargetError(f"HSA_OVERRIDE_GFX_VERSION {value!r} names no gfx processor")
        name = f"gfx{major}{minor:x}{stepping:x}"
        if name not in self.by_name:
            raise TargetError(f"HSA_OVERRIDE_GFX_VERSION {value!r} maps to {name}, which gfxgate does not know")
        return self.by_name[name]

    # -- preprocessor -----------------------------------------------------------------------------
    def predefined_macros(self, target: TargetId) -> dict[str, str]:
        """Device-side macros of a HIP/OpenCL compile for this target (defined → value)."""
        proc = self.processor(target.processor)
        macros = dict(proc.macros)
        macros["__amdgcn_processor__"] = f'"{proc.name.replace("-", "_")}"'
        macros["__amdgcn_target_id__"] = f'"{target}"'
        for feat, sign in target.settings:
            macros[f"__amdgcn_feature_{feat}__"] = "1" if sign == "+" else "0"
        return macros

    # -- lists and compatibility ------------------------------------------------------------------
    def spellings(self, target: TargetId) -> list[str]:
        """Every target id that names this target: the id itself first, then each feature variant.

        A bare ``gfx906`` device could be listed as ``gfx906``, ``gfx906:xnack-``, ``gfx906:sramecc+:xnack-`` …
        """
        proc = self.processor(target.processor)
        fixed = dict(target.settings)
        free = [f for f in sorted(proc.features) if f not in fixed]
        out = [str(target)]
        for chosen in itertools.chain.from_iterable(itertools.combinations(free, n) for n in range(1, len(free) + 1)):
            for signs in itertools.product("-+", repeat=len(chosen)):
                settings = dict(fixed)
                settings.update(zip(chosen, signs))
                spelled = str(TargetId(proc.name, tuple(sorted(settings.items()))))
                if spelled not in out:
                    out.append(spelled)
        return out

    def compatibility(self, code: TargetId, device: TargetId) -> Compatibility:
        """Does code built for ``code`` load on a device identified as ``device``?"""
        proc = self.processor(code.processor)
        if code.processor == device.processor:
            kind = "exact"
        elif proc.is_generic and device.processor in proc.members:
            kind = "generic"
        else:
            return Compatibility("none", f"code for {code.processor} does not run on {device.processor}")
        conditions = []
        for feat in FEATURES:
            want, have = code.feature(feat), device.feature(feat)
            if want is None:
                if have is not None and kind == "exact":
                    kind = "any-feature"
            elif have is None:
                conditions.append(f"{feat}{want}")
            elif want != have:
                return Compatibility("none", f"code built for {feat}{want}, device runs {feat}{have}")
        if conditions:
            return Compatibility("conditional", "only on devices running " + ", ".join(conditions))
        details = {
            "exact": f"built for {code}",
            "any-feature": f"built for {code} (any feature setting)",
            "generic": f"generic code {code} covers {device.processor}",
        }
        return Compatibility(kind, details[kind])


@functools.cache
def catalog() -> TargetCatalog:
    path = rules_dir() / "targets.yaml"

    data = load_yaml(path, "targets")
    procs = [
        Processor(
            name=p["name"],
            mach=p["mach"],
            family=p["family"],
            codename=p.get("codename", ""),
            products=tuple(p.get("products", ())),
            features=frozenset(p.get("features", ())),
            integrated=bool(p.get("integrated", False)),
        )
        for p in data["processors"]
    ]
    names: dict[str, list[tuple[str, str]]] = {}
    for group in data.get("names", ()):
        for proc_name, cards in group["cards"].items():
            names.setdefault(proc_name, []).extend((card, group["source"]) for card in cards)
    known = {p.name for p in procs}
    unknown = sorted(set(names) - known)
    if unknown:
        raise RuleError(f"{path}: names: unknown processor {', '.join(unknown)}")
    procs = [p._replace(names=tuple(names.get(p.name, ()))) for p in procs]
    procs += [
        Processor(
            name=g["name"],
            mach=g["mach"],
            family="generic",
            members=tuple(g["members"]),
            features=frozenset(g.get("features", ())),
        )
        for g in data["generics"]
    ]
    nv_names: dict[str, list[tuple[str, str]]] = {}
    for group in data.get("nvidia_names", ()):
        for arch_name, cards in group["cards"].items():
            nv_names.setdefault(arch_name, []).extend((card, group["source"]) for card in cards)
    nvidia = [
        NvidiaArch(
            a["name"],
            a["capability"],
            a["family"],
            tuple(a.get("products", ())),
            bool(a.get("jetson", False)),
            tuple(nv_names.get(a["name"], ())),
        )
        for a in data.get("nvidia", ())
    ]
    unknown_nv = sorted(set(nv_names) - {a.name for a in nvidia})
    if unknown_nv:
        raise RuleError(f"{path}: nvidia_names: unknown architecture {', '.join(unknown_nv)}")
    seen: dict[str, str] = {}
    for arch in nvidia:
        for key in (arch.name, f"cc:{arch.capability}"):
            if key in seen:
                raise RuleError(f"{path}: duplicate NVIDIA {key} ({arch.name} and {seen[key]})")
            seen[key] = arch.name
    for proc in procs:
        for key, kind in ((proc.name, "name"), (f"mach:{proc.mach}", "mach")):
            if key in seen:
                raise RuleError(f"{path}: duplicate {kind} {key} ({proc.name} and {seen[key]})")
            seen[key] = proc.name
    vendors = data.get("vendors", {})
    return TargetCatalog(
        procs,
        nvidia,
        probes=tuple(vendors.get(AMD, {}).get("probes", ())),
        nvidia_probes=tuple(vendors.get(NVIDIA, {}).get("probes", ())),
    )


# -- the vendor seam ------------------------------------------------------------------------------------------------
class Vendor(Protocol):
    """What one GPU vendor gives the target model: how its target names are spelled, parsed, listed, described, and
    which GPU tools describe its cards. Code that holds a target asks its vendor; no vendor's code sees another's."""

    name: str  # AMD or NVIDIA
    label: str  # "AMD", "NVIDIA"
    spelling: re.Pattern[str]  # a text spelled as one of this vendor's target names (gfx…, sm_…): its parser answers
    device_name: re.Pattern[str] | None  # a device name that says it is this vendor's (``NVIDIA H200``), if any does
    probes: tuple[str, ...]  # the names of host.probes' tools that describe this vendor's GPUs

    def parse(self, text: str) -> TargetId: ...

    def knows(self, processor: str) -> bool: ...

    def names(self) -> list[str]: ...

    def describe(self, name: str) -> str: ...


class AmdVendor:
    """AMD: LLVM's AMDGPU processors and generic targets, with features, card names and PCI ids (the gate matrix's
    targets)."""

    name: str = AMD
    label: str = "AMD"
    spelling: re.Pattern[str] = _AMD_SPELLING
    device_name: re.Pattern[str] | None = (
        None  # "AMD Radeon Graphics" says AMD, "Radeon RX Vega" and "RADV NAVI22" do not: the card lookup decides
    )

    def __init__(self, catalog: TargetCatalog, probes: Sequence[str] = ()) -> None:
        self._catalog = catalog
        self.probes = tuple(probes)

    def parse(self, text: str) -> TargetId:
        return self._catalog.parse(text)

    def knows(self, processor: str) -> bool:
        return processor.lower() in self._catalog.by_name

    def names(self) -> list[str]:
        return self._catalog.names()

    def describe(self, name: str) -> str:
        return name  # the gate matrix's own name, as recorded


class NvidiaVendor:
    """NVIDIA: nvcc's ``sm_XX`` architectures by CUDA compute capability (a sweep's or a log's GPU; the gate matrix
    does not model them)."""

    name: str = NVIDIA
    label: str = "NVIDIA"
    spelling: re.Pattern[str] = _NVIDIA_SPELLING
    device_name: re.Pattern[str] | None = lazy_compile(
        r"^NVIDIA\b", re.I
    )  # CUDA, Vulkan and nvidia-smi all print "NVIDIA <product>"

    def __init__(self, catalog: TargetCatalog, probes: Sequence[str] = ()) -> None:
        self._catalog = catalog
        self.probes = tuple(probes)

    def parse(self, text: str) -> TargetId:
        return TargetId(self._catalog.nvidia_arch(text).name, (), NVIDIA)

    def knows(self, processor: str) -> bool:
        return processor.lower() in self._catalog.nvidia

    def names(self) -> list[str]:
        return list(self._catalog.nvidia)

    def describe(self, name: str) -> str:
        arch = self._catalog.nvidia.get(name.lower())
        return f"{name} (NVIDIA {arch.family}, compute capability {arch.capability})" if arch else name


def _nv_key(name: str) -> str:
    """A product name's letters and digits, lower case, without the vendor and line words NVIDIA's names may or may
    not carry ("NVIDIA GeForce GTX 1080" = "GTX 1080"; "Tesla P40" = "P40" is left to the tail match)."""
    return re.sub(r"[^a-z0-9]", "", re.sub(r"\b(?:nvidia|geforce)\b", "", name.lower()))


# -- card names and PCI ids ---------------------------------------------------------------------------
_NOISE = frozenset({"amd", "ati", "radeon", "graphics", "with", "series"})  # "RX 580 Series" (amdgpu.ids) is the RX 580
_WORD = lazy_compile(r"[a-z]+|[0-9]+")
_PCI = lazy_compile(r"^(?:(?:0x)?1002:)?(?:0x)?(?P<device>[0-9a-f]{4})(?::(?:0x)?(?P<revision>[0-9a-f]{2}))?$")
# Where libdrm installs its table: distribution packages (Debian/Ubuntu libdrm-common, Fedora libdrm), AMD's own
# amdgpu-install packages.
AMDGPU_IDS = ("usr/share/libdrm/amdgpu.ids", "opt/amdgpu/share/libdrm/amdgpu.ids")


def card_words(text: str) -> list[str]:
    """The words of a card name that tell cards apart: lower case, letters and digits apart ("6900XT" = "6900 XT",
    "W7800" = "w 7800"), without the words every AMD name carries (AMD, Radeon, Graphics, Series, (TM), (R)); the R
    of "R7 Graphics" or "R9 380" stays (a Kaveri R7 is no Vega 7)."""
    return [w for w in _WORD.findall(text.lower().replace("(tm)", " ").replace("(r)", " ")) if w not in _NOISE]


def pci_id(text: str) -> tuple[int, int | None] | None:
    """(device, revision) of an AMD PCI id: ``0x687f``, ``1002:687f``, ``687f:c3``; a bare four-digit number
    ("7600") is a card name, not an id."""
    raw = text.strip().lower()
    match = _PCI.match(raw)
    if match is None or not (raw.startswith("0x") or ":" in raw or not match["device"].isdigit()):
        return None
    return int(match["device"], 16), (int(match["revision"], 16) if match["revision"] else None)


def read_amdgpu_ids(text: str) -> dict[tuple[int, int], str]:
    """libdrm's amdgpu.ids: ``DEVICE,\tREVISION,\tNAME`` lines (hex), after a version line; ``#`` comments."""
    out: dict[tuple[int, int], str] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) != 3 or line.startswith("#"):
            continue
        try:
            out[(int(parts[0], 16), int(parts[1], 16))] = parts[2]
        except ValueError:
            continue
    return out


@functools.cache
def _installed_ids(root: str) -> dict[tuple[int, int], str]:
    chosen = os.environ.get("GFXGATE_AMDGPU_IDS") if root == "/" else None  # another libdrm's table, for one run
    for rel in [chosen] if chosen else AMDGPU_IDS:
        try:
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as handle:
                return read_amdgpu_ids(handle.read(1 << 20))
        except OSError:
            continue
    return {}


def marketing_names(device: int, revision: int | None = None, *, root: str = "/") -> list[str]:
    """The marketing names libdrm's amdgpu.ids (read where installed under ``root``) gives a PCI device id."""
    ids = _installed_ids(root)
    names = [
        name for (dev, rev), name in sorted(ids.items()) if dev == device and (revision is None or rev == revision)
    ]
    return list(dict.fromkeys(names))
