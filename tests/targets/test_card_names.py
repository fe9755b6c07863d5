"""Card names and PCI ids resolve to their gfx target (issue 24 item 7, reproduction 12), through the console script.

The names are the lists of ``rules/targets.yaml`` (`names:`, one list per source); PCI ids go through libdrm's real
``amdgpu.ids``, downloaded as the Debian package ``libdrm-common`` (never copied into gfxgate). The opt-in upstream
test checks the ROCm spec-table list against the table itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from gfxgate.targets import card_words, catalog, pci_id, read_amdgpu_ids
from tests.conftest import require_tool
from tests.debian import debian_package


def _targets(exe, *args, env=None):
    return exe("targets", *args, timeout=60, env=env)


@pytest.mark.parametrize(
    "name, target",
    [
        ("Radeon 780M", "gfx1103"),
        ("680M", "gfx1035"),
        ("Ryzen 7 5700G", "gfx90c"),
        ("RX 6950 XT", "gfx1030"),
        ("Radeon PRO V620", "gfx1030"),
        ("W7800", "gfx1100"),
        ("MI300X", "gfx942"),
        ("Instinct MI50", "gfx906"),
        ("MI350X", "gfx950"),
        ("6900XT", "gfx1030"),
        ("7600", "gfx1102"),
        ("5700G", "gfx90c"),
        ("Radeon 890M", "gfx1150"),
        ("Ryzen AI Max+ 395", "gfx1151"),
        ("RX 6700 XT", "gfx1031"),
        ("Vega 56", "gfx900"),
        ("Radeon AI PRO R9700", "gfx1201"),
        ("Ryzen 7 PRO 4750G", "gfx90c"),
        ("Athlon 3000G", "gfx902"),
        ("RX 6800S", "gfx1032"),
        ("RX 6800M", "gfx1031"),
        ("Radeon Pro W6400", "gfx1034"),
        ("RX 5500M", "gfx1012"),
        ("Radeon Pro WX 9100", "gfx900"),
        ("RX 580 Series", "gfx803"),
        ("Radeon(R) R9 380", "gfx802"),
    ],
)
def test_card_names_resolve_through_the_console_script(gfxgate_cli, name, target):
    done = _targets(gfxgate_cli, name, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["processor"] == target
    scan = gfxgate_cli("scan", "--target", name, "--format", "json", timeout=120)
    assert scan.returncode == 0, scan.stderr
    assert json.loads(scan.stdout)["targets"] == [target]


def test_a_name_of_two_processors_lists_both_and_target_refuses_it(gfxgate_cli):
    done = _targets(gfxgate_cli, "Vega 8", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert sorted(row["processor"] for row in json.loads(done.stdout)["targets"]) == ["gfx902", "gfx90c"]
    scan = gfxgate_cli("scan", "--target", "Vega 8", timeout=60)
    assert scan.returncode == 2 and "gfx902" in scan.stderr and "gfx90c" in scan.stderr


def test_every_card_of_ollamas_docs_table_at_v0_32_15_resolves():
    # the AMD rows of docs/gpu.mdx at v0.32.15 (Linux support table), as the family + the card
    rows = {
        "AMD Radeon RX": "9070 XT,9070 GRE,9070,9060 XT,9060 XT LP,9060,7900 XTX,7900 XT,7900 GRE,7800 XT,7700 XT,7700,"
        "7600 XT,7600,6950 XT,6900 XTX,6900XT,6800 XT,6800",
        "AMD Radeon AI PRO": "R9700,R9600D",
        "AMD Radeon PRO": "W7900,W7800,W7700,W7600,W7500,W6900X,W6800X Duo,W6800X,W6800,V620",
        "AMD Ryzen AI": "Ryzen AI Max+ 395,Ryzen AI Max 390,Ryzen AI Max 385,Ryzen AI 9 HX 475,Ryzen AI 9 HX 470,Ryzen AI 9 465,"
        "Ryzen AI 9 HX 375,Ryzen AI 9 HX 370,Ryzen AI 9 365",
        "AMD Instinct": "MI350X,MI300X,MI300A,MI250X,MI250,MI210,MI100",
    }
    cat = catalog()
    for family, cards in rows.items():
        for card in cards.split(","):
            name = card if card.startswith("Ryzen") else f"{family.removeprefix('AMD ')} {card}"
            assert len(cat.by_card(name)) == 1, name


def test_words_and_pci_ids():
    assert card_words("AMD Radeon(TM) RX 6900XT") == ["rx", "6900", "xt"]
    assert card_words("AMD Radeon(R) R7 Graphics") == ["r", "7"] and card_words("AMD Radeon RX 580 Series") == [
        "rx",
        "580",
    ]
    assert (
        pci_id("0x687f") == (0x687F, None)
        and pci_id("1002:73DF") == (0x73DF, None)
        and pci_id("73df:c1") == (0x73DF, 0xC1)
    )
    assert pci_id("7600") is None and pci_id("W7800") is None


@pytest.fixture(scope="module")
def amdgpu_ids():
    tree = debian_package("libdrm-common", require_tool("apt-get"), require_tool("dpkg"))
    path = tree / "usr/share/libdrm/amdgpu.ids"
    assert path.is_file()
    return path


def test_pci_ids_resolve_through_the_real_amdgpu_ids(gfxgate_cli, amdgpu_ids):
    table = read_amdgpu_ids(amdgpu_ids.read_text())
    assert len(table) > 300  # the real file, not an excerpt
    env = dict(os.environ, GFXGATE_AMDGPU_IDS=str(amdgpu_ids))
    wanted = {
        name: dev for (dev, _), name in table.items() if name in ("AMD Radeon RX 6700 XT", "AMD Radeon RX 6950 XT")
    }
    assert wanted, "libdrm-common lists the RX 6700 XT and RX 6950 XT"
    for name, dev in wanted.items():
        done = _targets(gfxgate_cli, f"0x{dev:04x}", "--format", "json", env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["processor"] == catalog().by_card(name)[0][0]
    mi = next(dev for (dev, _), name in table.items() if "MI50" in name)
    assert (
        json.loads(_targets(gfxgate_cli, f"1002:{mi:04x}", "--format", "json", env=env).stdout)["processor"] == "gfx906"
    )
    # amdgpu.ids' "Series" names are the cards (67df:c1 "AMD Radeon RX 580 Series"); an R-series APU (Kaveri's
    # "AMD Radeon R7 Graphics", 130c) is no Vega 7 or Vega 6: refused, naming what amdgpu.ids calls it
    series = next(f"{dev:04x}:{rev:02x}" for (dev, rev), name in table.items() if name == "AMD Radeon RX 580 Series")
    assert json.loads(_targets(gfxgate_cli, series, "--format", "json", env=env).stdout)["processor"] == "gfx803"
    for name in (
        "AMD Radeon R7 Graphics",
        "AMD Radeon R6 Graphics",
        "AMD Radeon R2 Graphics",
        "AMD Radeon R3 Graphics",
    ):
        kaveri = next(f"{dev:04x}:{rev:02x}" for (dev, rev), n in table.items() if n == name)
        refused = _targets(gfxgate_cli, kaveri, env=env)
        assert refused.returncode == 2 and f"names it {name}, which gfxgate does not know" in refused.stderr, (
            name,
            refused.stderr,
        )
    missing = _targets(gfxgate_cli, "0xffff", env=env)
    assert missing.returncode == 2 and "amdgpu.ids" in missing.stderr


@pytest.mark.skipif(
    not os.environ.get("GFXGATE_TEST_UPSTREAM"), reason="opt-in: GFXGATE_TEST_UPSTREAM=FOLDER of upstream clones"
)
def test_the_rocm_spec_table_list_is_the_table():
    root = os.environ["GFXGATE_TEST_UPSTREAM"]
    text = subprocess.run(
        ["git", "-C", f"{root}/ROCm", "show", "rocm-6.3.3:docs/reference/gpu-arch-specs.rst"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = re.findall(r"\*\n\s+- (.+)\n\s+- .+\n\s+- (gfx[0-9a-f]+)\n", text)
    assert len(rows) > 30
    listed = {
        (card, proc) for proc, p in catalog().by_name.items() for card, src in p.names if src == "rocm-gpu-arch-specs"
    }
    for model, target in rows:
        assert any(
            proc == target and card_words(card)[-len(card_words(model)) :] == card_words(model) for card, proc in listed
        ), model
