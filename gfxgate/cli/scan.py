"""`gfxgate scan --target T…`: the gate matrix."""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, format_option, output_option, parse_targets, source_options, terminal

DEFAULT_INSTALLED = ("/usr/lib/ollama", "/usr/local/lib/ollama", "/opt/rocm/lib")


@click.command()
@click.option("-t", "--target", "targets", multiple=True, metavar="TARGET",
              help="GPU target (gfx900, gfx906:xnack-, 'RX Vega 56'); repeatable or comma-separated.")
@format_option(("md", "json", "text", "sarif"))
@output_option()
@source_options
@click.option("--live", is_flag=True, help="Read the sources instead of the embedded snapshot.")
@click.option("--installed", "installed", multiple=True, metavar="DIR",
              help="Scan installed GPU code under DIR for the artifact rows (repeatable; 'default' = the usual places).")
@click.option("--runtime", type=click.Path(path_type=Path),  # read_worklog: missing, folder, FIFO, device → exit 6
              help="A `gfxgate sweep` worklog for the runtime row.")
@click.option("--log", "logs", multiple=True, metavar="LOG",
              type=click.Path(allow_dash=True),  # read as diagnose reads a log: missing, folder, FIFO, device → exit 6
              help="An Ollama / llama.cpp log (as `gfxgate diagnose` reads it) for the runtime row; with --target auto, also the targets.")
@click.option("--rules", "rules_root", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Use gate rules from this folder (layers.yaml, gates/*.yaml) instead of the shipped ones.")
@click.option("--snapshot", "snapshot_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Evaluate from this snapshot file instead of the embedded one.")
@click.option("-v", "--verbose", is_flag=True, help="Text format: also every cell's evidence, remedy and the notes.")
def scan(targets, fmt, output, refs, sources, offline, live, installed, runtime, logs, rules_root, snapshot_path,
         verbose) -> None:
    """The gate matrix: for each layer and target, a status with its evidence and remedy.

    Without --live, --ref or --source the evidence comes from the embedded snapshot of the
    pinned upstream tags (ollama: the newest release it knows, named in the notes with its age),
    so the command works offline on a fresh machine. The seed study's versions are a pin set
    with a snapshot of its own: --ref ollama=v0.17.5 answers from it, offline too.
    """
    from datetime import date

    from gfxgate.errors import UsageError
    from gfxgate.gate.scan import scan_matrix
    from gfxgate.report import render
    from gfxgate.sources.resolve import parse_assignments

    names = [part.strip() for value in targets for part in value.split(",") if part.strip()]
    auto = any(name.lower() == "auto" for name in names)
    diagnoses = None
    if logs:
        if runtime:
            raise UsageError("--runtime and --log both fill the runtime row; pass one of them")
        from gfxgate.diagnose import diagnose_inputs

        diagnoses = diagnose_inputs(list(logs), locate=False)
    if auto:
        if not diagnoses:
            raise UsageError("--target auto reads the targets from a log", hint="add --log LOG")
        detected = sorted({g.processor for d in diagnoses for g in d.gpus if g.processor})
        if not detected:
            raise UsageError("--target auto: the log names no gfx target",
                             hint="name the target (--target gfx900); `gfxgate diagnose LOG` says what the log lacks")
        names = [n for n in names if n.lower() != "auto"] + detected
    parsed = parse_targets(tuple(names))
    if not parsed:
        raise UsageError("name at least one --target", hint="e.g. gfxgate scan --target gfx900")
    runtime_cells = runtime_backends = runtime_version = None
    if diagnoses is not None:
        from gfxgate.diagnose.analyse import log_versions, runtime_backend_verdicts, runtime_verdicts

        runtime_cells = runtime_verdicts(diagnoses, parsed)
        runtime_backends = runtime_backend_verdicts(diagnoses, parsed)  # each route judged by its own backend's runs
        versions = log_versions(diagnoses)
        runtime_version = versions[0] if len(versions) == 1 else None
    dirs: list[Path] = []
    for value in installed:
        if value == "default" and not Path(value).exists():
            dirs += [Path(d) for d in DEFAULT_INSTALLED + (_multiarch_lib(),) if d and Path(d).is_dir()]
        elif not Path(value).exists():  # as `gfxgate artifacts PATH` does: a named path must exist
            from gfxgate.errors import InputError

            raise InputError(f"--installed {value}: no such file or folder")
        else:
            dirs.append(Path(value))
    matrix = scan_matrix(
        parsed,
        live=live,
        refs=parse_assignments(refs, "--ref"),
        sources=parse_assignments(sources, "--source"),
        offline=offline,
        installed=dirs or None,
        runtime=runtime,
        rules_root=rules_root,
        snapshot_path=snapshot_path,
        runtime_cells=runtime_cells,
        runtime_backends=runtime_backends,
        runtime_version=runtime_version,
        today=date.today(),
    )
    options = {**terminal(output), "verbose": verbose} if fmt == "text" else {}
    emit(render(matrix, fmt, **options), output)


def _multiarch_lib() -> str:
    import sysconfig

    multiarch = sysconfig.get_config_var("MULTIARCH")
    return f"/usr/lib/{multiarch}" if multiarch else ""
