"""gfxgate doctor on captured machines (tests/doctor/machines.py), through the console script (issue 26 done-when)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from tests.cputime import cpu_time
from tests.doctor.machines import HERE, machine

VEGA_DROPIN = '[Service]\nEnvironment="HSA_OVERRIDE_GFX_VERSION=9.0.6"\n'


def _doctor(exe, *args, timeout=120):
    return exe("doctor", *args, timeout=timeout)


def _json(exe, root, *args):
    done = _doctor(exe, "--root", str(root), "--format", "json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def vega56(tmp_path, built):
    return machine(tmp_path / "vega56", "vega56", version="0.17.5", dropin=VEGA_DROPIN, built=built)


def test_vega56_names_card_target_version_blocking_layers_and_the_fix(gfxgate_cli, vega56):
    data = _json(gfxgate_cli, vega56)
    gpu = data["gpus"][0]
    assert (gpu["target"], gpu["name"], gpu["pci"], gpu["integrated"]) == (
        "gfx900",
        "Radeon RX Vega 56",
        "1002:687f:c3",
        False,
    )
    report = data["targets"][0]
    assert report["version"] == "0.17.5" and report["matrix_from"] == "embedded snapshot at v0.17.5"
    rows = {r["layer"]: r for r in report["rows"]}
    # the machine's blocking layers, each with its evidence on the machine
    assert rows["access"]["status"] == "blocked" and rows["access"]["evidence"][0]["where"] == "/dev/kfd"
    assert any(e["where"].startswith("/etc/group:3") for e in rows["access"]["evidence"])
    assert rows["override"]["status"] == "blocked"
    assert rows["override"]["evidence"][0]["where"] == "/etc/systemd/system/ollama.service.d/override.conf:2"
    assert "TensileLibrary_lazy_gfx906.dat missing" in rows["override"]["evidence"][1]["note"]
    # the installed files (real clang-19 code objects): rocBLAS and libggml-hip.so hold no gfx900 code
    assert (
        rows["rocblas-artifacts"]["status"] == "blocked"
        and "present: gfx1030, gfx1100" in rows["rocblas-artifacts"]["summary"]
    )
    assert rows["installed-gpu-code"]["status"] == "blocked"
    assert re.search(
        r"/usr/local/lib/ollama/rocm/libggml-hip\.so(@0x[0-9a-f]+)?$",
        rows["installed-gpu-code"]["evidence"][0]["where"],
    )
    assert rows["release-packaging"]["status"] == "blocked"  # the release's own evidence, from the snapshot
    assert rows["release-packaging"]["evidence"][0]["where"].startswith("ollama@v0.17.5:Dockerfile:")
    vulkan = next(b for b in report["backends"] if b["backend"] == "vulkan")
    commands = "\n".join(c for s in vulkan["steps"] for c in s["commands"])
    assert 'Environment="OLLAMA_VULKAN=1"' in commands and "sudo systemctl edit ollama" in commands
    assert "sudo usermod -aG render ollama" in commands
    assert vulkan["state"] == "needs steps"
    assert report["pin"] and report["pin"].startswith("ollama v")


def test_vega56_text_and_markdown_say_the_same(gfxgate_cli, vega56):
    text = _doctor(gfxgate_cli, "--root", str(vega56)).stdout
    md = _doctor(gfxgate_cli, "--root", str(vega56), "--format", "md").stdout
    for out in (text, md):
        assert "Radeon RX Vega 56" in out and "gfx900" in out and "override.conf:2" in out
        assert 'Environment="OLLAMA_VULKAN=1"' in out and "usermod -aG render ollama" in out


def test_a_service_user_in_render_needs_no_usermod(gfxgate_cli, tmp_path):
    root = machine(tmp_path / "m", "vega56", version="0.17.5", render_members="ollama")
    report = _json(gfxgate_cli, root)["targets"][0]
    assert {r["layer"]: r["status"] for r in report["rows"]}["access"] == "allowed"
    assert "usermod" not in json.dumps(report["backends"])


def test_an_override_already_in_the_dropin_is_a_done_step(gfxgate_cli, tmp_path):
    root = machine(
        tmp_path / "m",
        "vega56",
        version="0.17.5",
        render_members="ollama",
        dropin='[Service]\nEnvironment="OLLAMA_VULKAN=1"\n',
    )
    vulkan = next(b for b in _json(gfxgate_cli, root)["targets"][0]["backends"] if b["backend"] == "vulkan")
    assert vulkan["state"] == "runs" and vulkan["steps"][0]["done"] is True
    assert vulkan["steps"][0]["evidence"][0]["where"] == "/etc/systemd/system/ollama.service.d/override.conf:2"


def test_the_last_assignment_wins_and_says_what_it_overrode(gfxgate_cli, tmp_path):
    root = machine(
        tmp_path / "m",
        "vega56",
        version="0.17.5",
        dropin='[Service]\nEnvironment="OLLAMA_VULKAN=0"\nEnvironmentFile=-/etc/default/ollama\n',
    )
    (root / "etc/default").mkdir()
    (root / "etc/default/ollama").write_text("SECRET_TOKEN=hunter2\nOLLAMA_VULKAN=1\n")
    unit = _json(gfxgate_cli, root)["unit"]
    setting = next(s for s in unit["environment"] if s["name"] == "OLLAMA_VULKAN")
    assert setting["value"] == "1" and setting["where"] == "/etc/default/ollama:2"
    assert setting["overridden"] == ["/etc/systemd/system/ollama.service.d/override.conf:2=0"]
    assert "SECRET_TOKEN" not in json.dumps(unit)


def test_rdna2_gfx1031_at_v0_32_15(gfxgate_cli, tmp_path, built):
    root = machine(
        tmp_path / "m", "rx6700xt", version="0.32.15", runner="rocm_v7_2", render_members="ollama", built=built
    )
    data = _json(gfxgate_cli, root)
    assert data["gpus"][0]["target"] == "gfx1031" and data["gpus"][0]["name"] == "Radeon RX 6700"
    report = data["targets"][0]
    assert report["version"] == "0.32.15"
    assert "v0.32.15" in report["answer"]
    rocm = next(b for b in report["backends"] if b["backend"] == "rocm")
    assert rocm["state"] in ("needs steps", "runs")
    commands = "\n".join(c for s in rocm["steps"] for c in s["commands"])
    assert 'Environment="HSA_OVERRIDE_GFX_VERSION=10.3.0"' in commands


def test_apu_gfx1103_at_v0_30(gfxgate_cli, tmp_path, built):
    root = machine(
        tmp_path / "m",
        "780m",
        version="0.30.0",
        runner="rocm_v7_2",
        render_members="ollama",
        rocblas_targets=("gfx1100", "gfx1101", "gfx1102"),
        built=built,
    )
    data = _json(gfxgate_cli, root)
    gpu = data["gpus"][0]
    assert (gpu["target"], gpu["integrated"]) == ("gfx1103", True)
    assert gpu["gtt_bytes"] == 24 << 30  # what an iGPU can use, beside its 512 MiB carve-out
    report = data["targets"][0]
    settings = "\n".join(c for b in report["backends"] for s in b["steps"] for c in s["commands"])
    assert "OLLAMA_IGPU_ENABLE=1" in settings  # v0.30+ drops integrated GPUs unless told


def test_collect_then_root_round_trips(gfxgate_cli, vega56, tmp_path):
    out = tmp_path / "capture.tar.gz"
    first = _doctor(gfxgate_cli, "--root", str(vega56), "--format", "json", "--collect", str(out))
    assert first.returncode == 0, first.stderr
    replay = tmp_path / "replay"
    with tarfile.open(out) as tar:
        names = tar.getnames()
        tar.extractall(replay, filter="data")
    assert "etc/systemd/system/ollama.service.d/override.conf" in names and ".gfxgate-doctor/stat.json" in names
    assert not any(n.endswith(".gguf") for n in names)
    second = _doctor(gfxgate_cli, "--root", str(replay), "--format", "json")
    assert second.returncode == 0, second.stderr
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    a.pop("root"), b.pop("root")
    strip = lambda d: re.sub(r'"/[^"]*?/(vega56|replay)/', '"/', json.dumps(d))  # the scanned files' host paths
    assert strip(a) == strip(b)


def test_collect_keeps_only_the_listed_variables(gfxgate_cli, tmp_path):
    root = machine(
        tmp_path / "m",
        "vega56",
        version="0.17.5",
        dropin='[Service]\nEnvironment="OLLAMA_API_KEY=sk-secret" "OLLAMA_VULKAN=1"\n',
    )
    out = tmp_path / "c.tar.gz"
    assert _doctor(gfxgate_cli, "--root", str(root), "--collect", str(out)).returncode == 0
    with tarfile.open(out) as tar:
        text = tar.extractfile("etc/systemd/system/ollama.service.d/override.conf").read().decode()
        unit = tar.extractfile("etc/systemd/system/ollama.service").read().decode()
    assert "sk-secret" not in text and "OLLAMA_VULKAN=1" in text and text.count("\n") == 2
    assert "PATH=" not in unit and unit.count("\n") == (HERE / "ollama.service").read_text().count("\n")


def test_nfd_output_follows_the_feature_file_format(gfxgate_cli, vega56):
    done = _doctor(gfxgate_cli, "--root", str(vega56), "--format", "nfd")
    assert done.returncode == 0
    lines = [l for l in done.stdout.splitlines() if l and not l.startswith("#")]
    assert lines
    for line in lines:
        key, _, value = line.partition("=")
        # NFD: prefixed names; label values ≤ 63 chars, alphanumeric at both ends, [-_.A-Za-z0-9] inside
        assert re.fullmatch(r"gfxgate\.io/[a-z0-9.]+", key), line
        assert re.fullmatch(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?", value), line
    assert "gfxgate.io/gpu0.target=gfx900" in lines


def test_prometheus_output_parses_as_a_textfile(gfxgate_cli, vega56):
    from prometheus_client.parser import text_string_to_metric_families

    done = _doctor(gfxgate_cli, "--root", str(vega56), "--format", "prometheus")
    families = {f.name: f for f in text_string_to_metric_families(done.stdout)}
    gate = families["gfxgate_gate"].samples
    assert {tuple(sorted(s.labels)) for s in gate} == {("backend", "gpu", "layer", "release", "target")}
    packaging = [s for s in gate if s.labels["layer"] == "release-packaging"]
    assert packaging and all(s.value == 0 and s.labels["release"] == "v0.17.5" for s in packaging)


def test_root_that_is_not_a_folder_is_exit_6(gfxgate_cli, tmp_path):
    done = _doctor(gfxgate_cli, "--root", str(tmp_path / "missing"))
    assert done.returncode == 6 and done.stderr.count("\n") <= 2


def test_fail_on(gfxgate_cli, vega56):
    assert _doctor(gfxgate_cli, "--root", str(vega56), "--fail-on", "vulkan").returncode == 1
    assert _doctor(gfxgate_cli, "--root", str(vega56), "--fail-on", "nope").returncode == 2


def test_under_a_second_with_a_rocblas_folder_of_1355_files(gfxgate_cli, tmp_path):
    root = machine(tmp_path / "m", "vega56", version="0.17.5", dropin=VEGA_DROPIN)
    blas = root / "usr/local/lib/ollama/rocm/rocblas/library"
    kinds = [
        "TensileLibrary_Type_HH_Contraction_l_Alik_Bljk_Cijk_Dijk_{t}.co",
        "Kernels.so-000-{t}.hsaco",
        "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_{t}_{n}.dat",
    ]
    # the names are kept as they are made (a listing of the folder per file made was this test's cost)
    n, names = 0, {p.name for p in blas.iterdir()}
    while len(names) < 1355:
        for t in ("gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx942"):
            name = kinds[n % 3].format(t=t, n=n)
            if name not in names:
                (blas / name).write_bytes(b"")
                names.add(name)
            n += 1
    assert len(list(blas.iterdir())) >= 1355
    _doctor(gfxgate_cli, "--root", str(root))  # warm caches (the embedded snapshot's schema check)
    with cpu_time() as spent:  # CPU seconds, not wall: a busy machine does not fail it
        done = _doctor(gfxgate_cli, "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert spent.seconds < 1.0 * float(os.environ.get("GFXGATE_SLOW_FACTOR", "1")), spent.seconds


def test_json_validates_against_the_shipped_schema(gfxgate_cli, vega56):
    import jsonschema

    schema = json.loads(gfxgate_cli("schema", "doctor", check=True).stdout)
    jsonschema.validate(_json(gfxgate_cli, vega56), schema)


def test_live_server_version_and_ps_through_the_official_client(gfxgate_cli, vega56):
    """An Ollama-API server on 127.0.0.1 that follows the real protocol (tests/sweep/ollama_server.py)."""
    import ollama

    from tests.sweep.ollama_server import MODEL, Behaviour, FakeOllama

    server = FakeOllama(Behaviour(version="0.17.5")).start()
    try:
        ollama.Client(host=server.url).generate(model=MODEL, prompt="hi", options={"num_gpu": 5, "num_predict": 1})
        data = _json(gfxgate_cli, vega56, "--live", server.url)
    finally:
        server.stop()
    live = data["live"]
    assert live["version"] == "0.17.5" and live["error"] is None
    assert live["models"] and live["models"][0]["name"] == MODEL and live["models"][0]["on_gpu"].endswith("% GPU")
    assert live["models"][0]["on_gpu"] != "100 % GPU"  # 5 of 29 layers offloaded


def test_live_server_that_does_not_answer_is_a_fact(gfxgate_cli, vega56):
    data = _json(gfxgate_cli, vega56, "--live", "http://127.0.0.1:9")
    assert data["live"]["error"] and data["targets"]


@pytest.mark.skipif(
    not os.environ.get("GFXGATE_TEST_UPSTREAM"), reason="opt-in: GFXGATE_TEST_UPSTREAM=FOLDER of upstream clones"
)
def test_the_unit_fixture_is_install_sh_s_and_the_v0_32_15_matrix_is_read_live(gfxgate_cli, tmp_path, built):
    up = os.environ["GFXGATE_TEST_UPSTREAM"]
    script = subprocess.run(
        ["git", "-C", f"{up}/ollama", "show", "v0.17.5:scripts/install.sh"], capture_output=True, text=True, check=True
    ).stdout
    body = script.split("cat <<EOF | $SUDO tee /etc/systemd/system/ollama.service >/dev/null\n", 1)[1].split(
        "\nEOF\n", 1
    )[0]
    expected = body.replace("$BINDIR", "/usr/local/bin").replace(
        "$PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    )
    assert (HERE / "ollama.service").read_text() == expected + "\n"
    root = machine(
        tmp_path / "m", "rx6700xt", version="0.32.15", runner="rocm_v7_2", render_members="ollama", built=built
    )
    data = _json(
        gfxgate_cli,
        root,
        "--source",
        f"ollama={up}/ollama",
        "--source",
        f"rocm-docs={up}/ROCm",
        "--source",
        f"llama-cpp={up}/llama.cpp",
    )
    report = data["targets"][0]
    assert report["matrix_from"] == "sources at v0.32.15"
    rocm = next(b for b in report["backends"] if b["backend"] == "rocm")
    assert any("HSA_OVERRIDE_GFX_VERSION=10.3.0" in c for s in rocm["steps"] for c in s["commands"])


def test_a_debian_llama_cpp_tree_is_found(gfxgate_cli, reallama):
    """Debian sid's real llama.cpp packages, unpacked as installed: llama-server and its ggml backends."""
    data = _json(gfxgate_cli, reallama.root)
    assert "/usr/bin/llama-server" in data["installs"]["llama_server"]
    names = {p.rsplit("/", 1)[-1] for p in data["installs"]["ggml_backends"]}
    assert "libggml-vulkan.so" in names and any(n.startswith("libggml-cpu") for n in names)
    assert data["gpus"] == [] and data["targets"] == []


def test_live_real_llama_server(gfxgate_cli, reallama, vega56, tmp_path):
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path / "server.log").open("wb")
    argv = [
        *reallama.command("cpu"),
        "-m",
        str(reallama.model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        "256",
    ]
    proc = subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        data = _json(gfxgate_cli, vega56, "--live", f"http://127.0.0.1:{port}")
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        log.close()
    live = data["live"]
    assert live["kind"] == "llama-server" and live["error"] is None, live
    assert live["version"] and live["models"][0]["name"] == reallama.model.name


def test_an_nvidia_gpu_beside_the_amd_one_is_listed(gfxgate_cli, tmp_path):
    root = machine(tmp_path / "m", "vega56", version="0.17.5")
    card = root / "sys/class/drm/card1/device"
    card.mkdir(parents=True)
    (card / "vendor").write_text("0x10de\n")
    (card / "device").write_text("0x2684\n")
    (card / "uevent").write_text("DRIVER=nvidia\nPCI_ID=10DE:2684\n")
    info = root / "proc/driver/nvidia/gpus/0000:01:00.0"
    info.mkdir(parents=True)
    (info / "information").write_text("Model: \t\t NVIDIA GeForce RTX 4090\nIRQ:   \t\t 180\n")
    gpus = _json(gfxgate_cli, root)["gpus"]
    assert [(g["vendor"], g["name"], g["pci"], g["driver"]) for g in gpus if g["vendor"] == "nvidia"] == [
        ("nvidia", "NVIDIA GeForce RTX 4090", "10de:2684", "nvidia")
    ]
    assert [g["target"] for g in gpus if g["vendor"] == "amd"] == ["gfx900"]


def test_the_readmes_vega56_excerpt_is_the_tools_output(gfxgate_cli, vega56):
    readme = (Path(__file__).parents[2] / "docs/commands/doctor.md").read_text(encoding="utf-8")  # its example
    start = readme.index("<!-- check: tested-by tests/doctor/test_doctor.py -->")
    excerpt = [l for l in readme[start : readme.index("<!-- end check -->", start)].splitlines()[1:] if l.strip()]
    output = _doctor(gfxgate_cli, "--root", str(vega56), "--format", "md").stdout.splitlines()
    assert len(excerpt) >= 25
    for line in excerpt:
        assert line in output, f"README doctor excerpt is stale: {line[:80]}"


def test_hostile_captured_trees(gfxgate_cli, tmp_path):
    root = machine(tmp_path / "m", "vega56", version="0.17.5")
    outside = tmp_path / "secret"
    outside.write_text("ollama:x:998:\nrender:x:993:ollama\n")
    (root / "etc/group").unlink()
    (root / "etc/group").symlink_to(outside)  # a link out of the tree is not read
    props = root / "sys/class/kfd/kfd/topology/nodes/1/properties"
    props.write_text(props.read_text() + "x" * (3 << 20))  # a huge sysfs file is read bounded
    (root / ".gfxgate-doctor/stat.json").write_text("[1, 2")  # a broken manifest
    (root / "etc/systemd/system/ollama.service.d").mkdir()
    (root / "etc/systemd/system/ollama.service.d/x.conf").write_text(
        '[Service]\nEnvironment="HSA_OVERRIDE_GFX_VERSION=9.0.0\nEnvironment=OLLAMA_VULKAN=\x1b[31m1\n'
    )
    with cpu_time() as spent:
        done = _doctor(gfxgate_cli, "--root", str(root), "--format", "md")
    assert done.returncode == 0, done.stderr
    assert spent.seconds < 10, spent.seconds
    assert "secret" not in done.stdout
    for fmt in ("md", "text"):
        out = _doctor(gfxgate_cli, "--root", str(root), "--format", fmt).stdout
        # shown, inert: the ESC as a visible form (report/text.py's Control Picture, or doctor's own \\x1b)
        assert re.search(r"OLLAMA_VULKAN=(?:\u241b|\\x1b)\\?\[31m1", out) and "\x1b" not in out
    data = _json(gfxgate_cli, root)
    assert data["unit"]["problems"] and "unbalanced quotes" in data["unit"]["problems"][0]
    assert all(
        not any(a["nodes"][i][1] for i in range(len(a["nodes"]))) for a in data["access"]
    )  # no stat, no group: no access


def test_a_per_device_override_wins_for_its_gpu(gfxgate_cli, tmp_path):
    root = machine(
        tmp_path / "m",
        "vega56",
        version="0.17.5",
        dropin='[Service]\nEnvironment="HSA_OVERRIDE_GFX_VERSION=10.3.0"\nEnvironment="HSA_OVERRIDE_GFX_VERSION_0=9.0.0"\n',
    )
    rows = {r["layer"]: r for r in _json(gfxgate_cli, root)["targets"][0]["rows"]}
    assert rows["override"]["evidence"][0]["where"].endswith("override.conf:3")
    assert "report gfx900" in rows["override"]["summary"]


def test_collect_carries_the_log_and_the_replay_reads_it(gfxgate_cli, vega56, tmp_path):
    log = Path(__file__).parents[2] / "samples/logs/ollama-0.12.3-override-rocblas.log"
    out = tmp_path / "c.tar.gz"
    first = _doctor(gfxgate_cli, "--root", str(vega56), "--log", str(log), "--format", "json", "--collect", str(out))
    assert first.returncode == 0, first.stderr
    replay = tmp_path / "replay"
    with tarfile.open(out) as tar:
        tar.extractall(replay, filter="data")
    second = _json(gfxgate_cli, replay)
    rows = lambda d: {r["layer"]: (r["status"], r["summary"]) for r in d["targets"][0]["rows"]}
    a = rows(json.loads(first.stdout))
    assert a["runtime"][0] == "blocked" and rows(second)["runtime"] == a["runtime"]
    assert "different Ollama versions" in " ".join(second["notes"])
