"""Real llama.cpp for the tests: Debian sid's llama-server, its ggml backends, lavapipe, a tiny GGUF model.

* The sid packages (``llama.cpp-tools``, ``libllama0``, ``libggml0``, ``libggml0-backend-vulkan`` and the sid
  runtime libraries they need) are downloaded through a private apt tree (``tests/debian.py``) and unpacked
  with ``dpkg -x`` into the tests' cache; nothing is installed. The sid binaries need a newer glibc than a
  bookworm machine has, so they run through sid's own ``ld-linux-x86-64.so.2 --library-path …``.
* ggml looks for backend modules in its built-in folder, the *executable's* folder and the working folder.
  Started through the dynamic loader, the executable is the loader itself, so each backend set is a folder
  holding a copy of the loader and links to its backend modules: ``cpu`` (the CPU variants only) and
  ``vulkan`` (CPU + Vulkan). :meth:`RealLlama.command` is the argv prefix of a llama-server with that set.
* Vulkan runs on lavapipe (bookworm's ``mesa-vulkan-drivers``, a CPU Vulkan device; .ci/run installs it).
  ggml-vulkan skips CPU-type devices unless ``GGML_VK_VISIBLE_DEVICES`` lists them; the command sets that
  with ``env`` and points Mesa's shader cache into the tests' cache (the first run compiles shaders).
* :func:`tiny_llama` writes a random-weight llama GGUF (a few hundred KB) with ``gguf`` from PyPI.

Use from any test folder::

    from tests.reallama import reallama, reallama_vulkan  # noqa: F401  (session fixtures)

or without pytest (benchmarks): ``prepare()`` returns the same :class:`RealLlama`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.debian import debian_cache, foreign_packages

SUITE = "sid"
PACKAGES = (
    "llama.cpp-tools", "libllama0", "libggml0", "libggml0-backend-vulkan",
    # sid's runtime: the loader and libc, the C++ runtime, OpenMP (ggml-cpu), OpenSSL (llama-server), the Vulkan loader
    "libc6", "libgcc-s1", "libstdc++6", "libgomp1", "libssl3t64", "libvulkan1",
)  # fmt: skip
MULTIARCH = "x86_64-linux-gnu"
LOADER = "ld-linux-x86-64.so.2"
LAVAPIPE_ICD = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
BACKEND_SETS = ("cpu", "vulkan")


@dataclass(frozen=True)
class RealLlama:
    """An unpacked sid llama.cpp, its backend sets and a tiny model; all paths absolute."""

    root: Path  # the dpkg -x tree
    sets: Path  # one folder per backend set
    model: Path  # tiny random llama GGUF (4 layers → "offloaded N/5 layers")
    cache: Path  # per-machine cache (Mesa shader cache lives here)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def libdir(self) -> Path:
        return self.root / "usr" / "lib" / MULTIARCH

    @property
    def server(self) -> Path:
        return self.root / "usr" / "bin" / "llama-server"

    def command(self, backends: str = "cpu", tool: str = "llama-server") -> list[str]:
        """argv prefix that starts ``tool`` with the given backend set (append llama-server's own flags)."""
        if backends not in BACKEND_SETS:
            raise ValueError(f"backend set {backends!r} is not one of {BACKEND_SETS}")
        argv = ["env", *(f"{k}={v}" for k, v in sorted(self.env_for(backends).items()))]
        return [
            *argv,
            str(self.sets / backends / LOADER),
            "--library-path", f"{self.libdir}:{self.libdir / 'llama'}",
            str(self.root / "usr" / "bin" / tool),
        ]  # fmt: skip

    def env_for(self, backends: str) -> dict[str, str]:
        env = {"MESA_SHADER_CACHE_DIR": str(self.cache / "mesa-shader-cache")}
        if backends == "vulkan":
            env["GGML_VK_VISIBLE_DEVICES"] = "0"  # lavapipe is a CPU-type device: ggml-vulkan skips it unless listed
            env["VK_ICD_FILENAMES"] = str(LAVAPIPE_ICD)  # only lavapipe, whatever else the machine has
        return env


def tiny_llama(
    path: Path,
    *,
    n_layer: int = 4,
    n_embd: int = 64,
    n_ff: int = 128,
    n_head: int = 4,
    n_head_kv: int | None = None,
    seed: int = 0,
    context_length: int = 256,
) -> Path:
    """A random-weight llama GGUF with an SPM vocabulary (bytes + a few letters): garbage text, real shapes.

    ``n_head_kv`` that does not divide ``n_head`` makes a model llama.cpp loads but cannot build a graph for: a real
    ``GGML_ASSERT`` (SIGABRT with a backtrace) while the context is created.
    """
    n_head_kv = n_head if n_head_kv is None else n_head_kv
    n_kv = n_embd // n_head * n_head_kv
    import numpy as np
    import gguf

    letters = "abcdefghijklmnopqrstuvwxyz"
    tokens = [
        "<unk>",
        "<s>",
        "</s>",
        *(f"<0x{b:02X}>" for b in range(256)),
        "\u2581",
        *letters,
        *("\u2581" + c for c in letters),
    ]
    types = [2, 3, 3, *([6] * 256), *([1] * (1 + 2 * len(letters)))]  # unknown, control, byte, normal
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    writer = gguf.GGUFWriter(str(tmp), "llama")
    writer.add_name("gfxgate-tiny-random")
    writer.add_context_length(context_length)  # llama-server caps a slot's context (and a generation) to it
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_file_type(0)  # all F32
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    rng = np.random.default_rng(seed)

    def weight(name: str, *shape: int) -> None:  # numpy (rows, cols) = ggml ne (cols, rows)
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    weight("token_embd.weight", len(tokens), n_embd)
    writer.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
    weight("output.weight", len(tokens), n_embd)
    for i in range(n_layer):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, np.float32))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, np.float32))
        weight(f"blk.{i}.attn_q.weight", n_embd, n_embd)
        weight(f"blk.{i}.attn_k.weight", n_kv, n_embd)
        weight(f"blk.{i}.attn_v.weight", n_kv, n_embd)
        weight(f"blk.{i}.attn_output.weight", n_embd, n_embd)
        weight(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        weight(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        weight(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, path)
    return path


def _backend_sets(libdir: Path, sets: Path) -> Path:
    modules = libdir / "ggml" / "backends0"
    cpu = sorted(modules.glob("libggml-cpu-*.so"))
    assert cpu, f"no CPU backend modules in {modules}"
    for name, extra in (("cpu", []), ("vulkan", [modules / "libggml-vulkan.so"])):
        folder = sets / name
        if (folder / ".complete").exists():
            continue
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        shutil.copy2(libdir / LOADER, folder / LOADER)  # a copy: /proc/self/exe resolves symlinks
        for module in [*cpu, *extra]:
            (folder / module.name).symlink_to(module)
        (folder / ".complete").write_text("")
    return sets


def prepare(apt: str | None = None, dpkg: str | None = None) -> RealLlama:
    """Download/unpack (cached), build the backend sets and the tiny model; raises if a tool is missing."""
    apt = apt or shutil.which("apt-get")
    dpkg = dpkg or shutil.which("dpkg")
    if not apt or not dpkg:
        raise FileNotFoundError("apt-get and dpkg are needed to fetch Debian's llama.cpp")
    root = foreign_packages(SUITE, PACKAGES, apt, dpkg)
    cache = debian_cache().parent / "reallama"
    cache.mkdir(parents=True, exist_ok=True)
    libdir = root / "usr" / "lib" / MULTIARCH
    sets = _backend_sets(libdir, root.parent / f"{root.name}-sets")
    model = cache / "tiny-llama-4l.gguf"
    if not model.exists():
        tiny_llama(model)
    return RealLlama(root=root, sets=sets, model=model, cache=cache)


def _required(what: str) -> None:
    message = f"{what} (.ci/run installs it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def reallama() -> RealLlama:
    """Debian sid's llama.cpp with the CPU backend set and a tiny model (downloads once, then cached)."""
    if not (shutil.which("apt-get") and shutil.which("dpkg")):
        _required("apt-get and dpkg are not installed")
    from tests.conftest import file_lock

    # one process prepares at a time (xdist workers, two sessions): the backend sets are rebuilt in place
    with file_lock(debian_cache().parent / "reallama.lock"):
        return prepare()


@pytest.fixture(scope="session")
def reallama_vulkan(reallama: RealLlama) -> RealLlama:
    """The same, with lavapipe present for the ``vulkan`` backend set."""
    if not LAVAPIPE_ICD.exists():
        _required(f"lavapipe is not installed ({LAVAPIPE_ICD} is missing; apt-get install mesa-vulkan-drivers)")
    return reallama
