"""NVIDIA's architectures in the target model (issue 38 item 1): sm_30 … sm_121 with compute capability, family,
products and the card names of Ollama's docs table, each spelling (``sm_61``, ``6.1``, ``Tesla P40``, nvidia-smi's
``Tesla V100-SXM2-16GB``) parsed to one architecture, ambiguous names refused with the candidates."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from gfxgate.errors import TargetError
from gfxgate.targets import NVIDIA, TargetId, catalog

DOCS_TAG = "v0.32.15"
UPSTREAM = os.environ.get("GFXGATE_TEST_UPSTREAM")  # a folder with an `ollama` clone (tests/gate/test_upstream.py)


@pytest.mark.parametrize(
    "text, arch",
    [
        ("sm_61", "sm_61"),
        ("6.1", "sm_61"),
        ("Tesla P40", "sm_61"),
        ("P40", "sm_61"),
        ("GTX 1080", "sm_61"),
        ("NVIDIA GeForce GTX 1080 Ti", "sm_61"),
        ("Quadro P4000", "sm_61"),
        ("TITAN X", "sm_61"),
        ("P4", "sm_61"),
        ("Tesla P100", "sm_60"),
        ("6.0", "sm_60"),
        ("Tesla V100-SXM2-16GB", "sm_70"),
        ("V100", "sm_70"),
        ("sm_70", "sm_70"),
        ("GTX 750 Ti", "sm_50"),
        ("5.0", "sm_50"),
        ("Tesla M40", "sm_52"),
        ("Jetson Nano", "sm_53"),
        ("T4", "sm_75"),
        ("NVIDIA H100 80GB HBM3", "sm_90"),
        ("A100-PCIE-40GB", "sm_80"),
        ("GB10", "sm_121"),
        ("compute_120", "sm_120"),
        ("sm_30", "sm_30"),
        ("3.7", "sm_37"),
        ("cc 10.3", "sm_103"),
        ("11.0", "sm_110"),
    ],
)
def test_every_spelling_names_one_architecture(text, arch):
    assert catalog().parse_target(text) == TargetId(arch, (), NVIDIA)


def test_a_name_two_architectures_are_sold_as_is_refused_with_both():
    with pytest.raises(TargetError, match=r"names several NVIDIA targets: sm_52, sm_61, sm_75"):
        catalog().parse_target("5000")  # Quadro M5000, P5000, RTX 5000, …
    with pytest.raises(TargetError, match="unknown NVIDIA target 'sm_99'"):
        catalog().parse_target("sm_99")


def test_the_model_spans_kepler_to_blackwell_without_duplicates():
    cat = catalog()
    assert list(cat.nvidia)[0] == "sm_30" and list(cat.nvidia)[-1] == "sm_121"
    caps = [a.capability for a in cat.nvidia.values()]
    assert len(set(caps)) == len(caps)
    for arch in cat.nvidia.values():
        assert arch.cc_number == int(arch.digits), arch  # sm_61 is compute capability 6.1, sm_120 is 12.0
    assert {a.name for a in cat.nvidia.values() if a.jetson} >= {"sm_53", "sm_62", "sm_72", "sm_87"}


def _docs_table(text: str) -> dict[str, list[str]]:
    """Ollama's docs/gpu.mdx Nvidia table: compute capability -> the cards of its rows (continuation rows included)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.split("## AMD")[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not line.startswith("|"):
            continue
        if re.fullmatch(r"[0-9]+\.[0-9]", cells[0]):
            current = cells[0]
        elif cells[0]:
            continue
        if current:
            out.setdefault(current, []).extend(re.findall(r"`([^`]+)`", cells[2]))
    return out


@pytest.mark.upstream
@pytest.mark.skipif(not UPSTREAM, reason="set GFXGATE_TEST_UPSTREAM to run")
def test_every_card_of_ollamas_docs_table_is_in_its_rows_names():
    """The real docs/gpu.mdx at v0.32.15 (opt-in: the ollama clone of GFXGATE_TEST_UPSTREAM): each card of a row is
    among that architecture's ``ollama-docs`` names."""
    text = subprocess.run(
        ["git", "-C", str(Path(str(UPSTREAM)) / "ollama"), "show", f"{DOCS_TAG}:docs/gpu.mdx"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    table = _docs_table(text)
    assert len(table) == 12 and sum(map(len, table.values())) > 120
    cat = catalog()
    for capability, cards in table.items():
        arch = cat.from_compute_capability(capability)
        assert arch is not None, capability
        own = {n for n, src in arch.names if src == "ollama-docs"}
        for card in cards:
            assert any(
                re.sub(r"[^a-z0-9]", "", n.lower()).endswith(re.sub(r"[^a-z0-9]", "", card.lower())) for n in own
            ), f"{card} ({capability}) missing from rules/targets.yaml nvidia_names"


def test_targets_command_explains_tesla_p40(gfxgate_cli):
    import json

    done = gfxgate_cli("targets", "Tesla P40", "--format", "json", timeout=60)
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert (row["target"], row["compute_capability"], row["family"], row["cuda_architectures"]) == (
        "sm_61",
        "6.1",
        "Pascal",
        "61",
    )
    assert "Tesla P40" in row["card_names"]["ollama-docs"]
