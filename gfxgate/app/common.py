"""What several use cases share: parsing target names, refusing a report over its own input, opening a source a
command cannot answer without."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # annotations only
    from gfxgate.sources.base import Source
    from gfxgate.sources.resolve import SourceSet


def parse_targets(values: Iterable[str]) -> list:
    """Parse target names (each repeatable, comma-separated allowed) into TargetIds, keeping order: AMD's (``gfx906``,
    a card name) and NVIDIA's (``sm_61``, ``6.1``, ``Tesla P40``), each by its vendor's parser."""
    values = tuple(values)
    if not values:
        return []  # without targets the catalog is not even loaded
    from gfxgate.targets import catalog

    out = []
    for value in values:
        for part in value.split(","):
            if part.strip():
                target = catalog().parse_target(part)
                if target not in out:
                    out.append(target)
    return out


def refuse_output_over_inputs(output: Path | None, inputs: Iterable[str | Path]) -> None:
    """``-o`` naming a file the command reads (``diagnose x.log -o x.log``) would replace that input with the
    report: a usage error (exit 2) before anything is read. Only regular files count (a report to
    ``/dev/stdout`` while reading a terminal on ``/dev/stdin`` is fine); links are followed (``os.path.samefile``)."""
    import os
    import stat

    from gfxgate.errors import UsageError

    if output is None:
        return
    for name in inputs:
        if str(name) == "-":
            continue
        try:
            if stat.S_ISREG(os.stat(name).st_mode) and os.path.samefile(name, output):
                raise UsageError(
                    f"-o {output} is the input {name}: the report would replace it",
                    hint="write the report to another file",
                )
        except OSError:
            continue  # a missing output or input: nothing to protect here (the read reports a missing input)


def require_source(sourceset: SourceSet, name: str, command: str) -> Source:
    """Open a source a command cannot answer without; when it cannot be read, the command fails with the error's own
    exit code (5 offline or unreachable, 4 a broken clone) and one line naming the ``--source NAME=CLONE`` to give."""
    from gfxgate.errors import SourceError

    try:
        return sourceset.get(name)
    except SourceError as exc:
        source = getattr(exc, "source", None) or name  # llama.cpp at v0.30+: the llama-cpp clone, not ollama's
        error = type(exc)(
            f"{command}: cannot read {source}, so there is nothing to answer from ({exc.message}); "
            f"give --source {source}=CLONE (a local clone with its tags)"
        )
        raise error from None


def fail_on_targets(values: tuple[str, ...], available: tuple[str, ...]) -> tuple[str, ...]:
    """Canonical names of the --fail-on-target targets; each must be in the compared reports."""
    from gfxgate.errors import UsageError

    names = tuple(str(t) for t in parse_targets(values))
    missing = [n for n in names if n not in available]
    if missing:
        raise UsageError(
            f"--fail-on-target names {', '.join(missing)}, which is not in both reports",
            hint="compared targets: " + (", ".join(available) or "none"),
        )
    return names
