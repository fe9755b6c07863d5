"""Real Debian packages for the tests: ``apt-get download`` + ``dpkg -x``, cached under the user cache dir.

Two sources, one cache:

* :func:`debian_package` downloads with the machine's own apt configuration (the release it runs, e.g.
  bookworm's ROCm libraries for the artifact tests).
* :func:`foreign_packages` downloads from another suite (e.g. sid's llama.cpp) through a *private* apt tree
  under the cache: its own sources list (the machine's Debian mirror and keyring, another suite), lists,
  package cache and an empty dpkg status. The machine's apt configuration and state are never touched.

Nothing here is a pytest fixture, so benchmarks can import it. Downloads and extractions go to private
temporary names first and are renamed into place, so two sessions sharing the cache never see half a package.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


def run(cmd: Sequence[str], cwd: Path) -> None:
    proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
    if proc.returncode:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stderr}")


def debian_cache() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("gfxgate-tests")) / "debian"


def _extract(debs: Iterable[Path], tree: Path, dpkg: str) -> Path:
    """``dpkg -x`` every .deb into one staging folder, then rename it to ``tree`` (atomic for readers)."""
    tree.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{tree.name}-", dir=tree.parent))
    names = []
    for deb in debs:
        run([dpkg, "-x", str(deb), str(staging)], tree.parent)
        names.append(deb.name)
    (staging / ".complete").write_text("\n".join(names) + "\n")
    if tree.exists() and not (tree / ".complete").exists():
        shutil.rmtree(tree, ignore_errors=True)  # a tree left half-written by an older, interrupted run
    try:
        os.rename(staging, tree)
    except OSError:  # another session finished first
        shutil.rmtree(staging, ignore_errors=True)
    return tree


def _download(apt_argv: Sequence[str], names: Sequence[str], debs: Path) -> None:
    debs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=debs) as tmp:
        run([*apt_argv, "download", *names], Path(tmp))
        for deb in Path(tmp).glob("*.deb"):
            os.replace(deb, debs / deb.name)


def _found(debs: Path, name: str) -> Path:
    # apt-get download writes NAME_VERSION_ARCH.deb (an epoch's ':' as %3a)
    found = sorted(debs.glob(f"{name}_*.deb"))
    assert found, f"apt-get download {name} produced no .deb in {debs}"
    return found[-1]


def debian_package(name: str, apt: str, dpkg: str) -> Path:
    """One package of the machine's own release, extracted once; the tree is cached across sessions."""
    cache = debian_cache()
    tree = cache / name
    if (tree / ".complete").exists():
        return tree
    debs = cache / "debs"
    if not sorted(debs.glob(f"{name}_*.deb")):
        _download([apt], [name], debs)
    return _extract([_found(debs, name)], tree, dpkg)


def machine_mirror(apt_etc: Path = Path("/etc/apt")) -> tuple[str, str]:
    """(mirror URI, keyring) of the machine's main Debian source, from sources.list(.d); deb.debian.org if none.

    Reads both formats: one-line ``deb [signed-by=…] URI SUITE …`` and deb822 ``.sources`` stanzas.
    Security and other non-archive URIs are skipped.
    """
    entries: list[tuple[str, str]] = []
    files = [
        apt_etc / "sources.list",
        *sorted((apt_etc / "sources.list.d").glob("*.list")),
        *sorted((apt_etc / "sources.list.d").glob("*.sources")),
    ]
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if path.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields: dict[str, str] = {}
                for line in stanza.splitlines():
                    if line.startswith("#") or ":" not in line or line[:1].isspace():
                        continue
                    key, _, value = line.partition(":")
                    fields[key.strip().lower()] = value.strip()
                if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes").lower() == "no":
                    continue
                for uri in fields.get("uris", "").split():
                    entries.append((uri, fields.get("signed-by", "")))
        else:
            for line in text.splitlines():
                match = re.match(r"^\s*deb\s+(?:\[(?P<opts>[^\]]*)\]\s+)?(?P<uri>\S+)\s+\S+", line)
                if match:
                    opts = dict(o.split("=", 1) for o in (match["opts"] or "").split() if "=" in o)
                    entries.append((match["uri"], opts.get("signed-by", "")))
    for uri, keyring in entries:
        if re.search(r"/debian/?$", uri) and "security" not in uri:
            keyring = keyring if keyring.startswith("/") and Path(keyring).exists() else DEFAULT_KEYRING
            return uri.rstrip("/"), keyring
    return DEFAULT_MIRROR, DEFAULT_KEYRING


def private_apt(suite: str, apt: str, root: Path, components: Sequence[str] = ("main",)) -> list[str]:
    """apt-get argv bound to a private apt tree for ``suite`` (its ``components``) under ``root`` (created and
    updated once)."""
    mirror, keyring = machine_mirror()
    etc, lists, cache = root / "etc", root / "lists", root / "cache"
    for folder in (etc / "sources.list.d", etc / "preferences.d", lists / "partial", cache / "archives" / "partial"):
        folder.mkdir(parents=True, exist_ok=True)
    (etc / "sources.list").write_text(f"deb [signed-by={keyring}] {mirror} {suite} {' '.join(components)}\n")
    status = root / "status"
    status.touch()
    argv = [
        apt,
        "-q",
        "-o", f"Dir::Etc::SourceList={etc / 'sources.list'}",
        "-o", f"Dir::Etc::SourceParts={etc / 'sources.list.d'}",
        "-o", f"Dir::Etc::Preferences={etc / 'preferences'}",
        "-o", f"Dir::Etc::PreferencesParts={etc / 'preferences.d'}",
        "-o", f"Dir::State::Lists={lists}",
        "-o", f"Dir::State::Status={status}",
        "-o", f"Dir::Cache={cache}",
        "-o", "Acquire::Languages=none",
    ]  # fmt: skip
    if os.geteuid() == 0:
        # The private tree lives in root's cache folder, which the _apt sandbox user cannot write to.
        argv += ["-o", "APT::Sandbox::User=root"]
    if not (root / ".updated").exists():
        run([*argv, "update"], root)
        (root / ".updated").write_text(suite + "\n")
    return argv


def foreign_packages(
    suite: str, names: Sequence[str], apt: str, dpkg: str, components: Sequence[str] = ("main",)
) -> Path:
    """Packages of another suite (``sid``), all extracted into one tree, cached by suite and package set;
    ``components`` beyond main (``contrib``: NVIDIA's CUDA builds) get their own private apt tree."""
    cache = debian_cache()
    digest = hashlib.sha256(" ".join(sorted(names)).encode()).hexdigest()[:12]
    tree = cache / f"{suite}-{digest}"
    if (tree / ".complete").exists():
        return tree
    debs = cache / f"debs-{suite}"
    missing = [n for n in names if not sorted(debs.glob(f"{n}_*.deb"))]
    if missing:
        extra = "".join(f"-{c}" for c in components if c != "main")
        _download(private_apt(suite, apt, cache / f"apt-{suite}{extra}", components), missing, debs)
    return _extract([_found(debs, n) for n in names], tree, dpkg)
