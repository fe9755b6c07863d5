"""Fixtures: real artifacts built at test time (clang-19) and real Debian packages, cached."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.artifacts.artifact_builders import Built, debian_package, shared_object
from tests.conftest import require_tool, shared_build


@pytest.fixture(scope="session")
def built(clang19, tmp_path_factory) -> Built:
    return shared_build(tmp_path_factory, "artifacts-built", lambda root: Built(root, clang19))


@pytest.fixture(scope="session")
def rocblas_folder(built, tmp_path_factory) -> Path:
    """A rocBLAS-style library folder made of real code objects (names as rocBLAS/Tensile write them)."""
    lib = tmp_path_factory.mktemp("rocblas") / "rocblas" / "library"
    lib.mkdir(parents=True)
    shutil.copy(built.code_object("gfx900"), lib / "Kernels.so-000-gfx900.hsaco")
    shutil.copy(built.code_object("gfx906:xnack-"), lib / "Kernels.so-000-gfx906-xnack-.hsaco")
    shutil.copy(
        built.device_bundle("dev-900.co", "--offload-compress", archs=("gfx900",)),
        lib / "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx900.co",
    )
    shutil.copy(
        built.device_bundle("dev-1030.co", archs=("gfx1030",)),
        lib / "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx1030.co",
    )
    import msgpack

    for target in ("gfx900", "gfx1030"):
        (lib / f"TensileLibrary_lazy_{target}.dat").write_bytes(msgpack.packb({"library": {"type": "Hardware"}}))
    return lib.parent.parent


@pytest.fixture(scope="session")
def libhsa() -> Path:
    return shared_object(debian_package("libhsa-runtime64-1", *_apt()), "libhsa-runtime64")


@pytest.fixture(scope="session")
def libamdhip() -> Path:
    return shared_object(debian_package("libamdhip64-5", *_apt()), "libamdhip64")


@pytest.fixture(scope="session")
def librocsparse() -> Path:
    return shared_object(debian_package("librocsparse0", *_apt()), "librocsparse")


def _apt() -> tuple[str, str]:
    return require_tool("apt-get"), require_tool("dpkg")
