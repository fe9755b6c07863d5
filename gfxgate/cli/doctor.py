"""`gfxgate doctor`: this machine's GPUs, installs, service environment and access, and the fix for this machine."""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, fail_on_option, format_option, os_option, output_option, source_options, terminal


@click.command()
@click.option(
    "--root",
    type=click.Path(path_type=Path),
    default=Path("/"),
    show_default=True,
    help="Read this folder as / (a captured tree: sysfs under DIR/sys, units under DIR/etc …).",
)
@click.option(
    "--log",
    "logs",
    multiple=True,
    metavar="LOG",
    type=click.Path(allow_dash=True),
    help="An Ollama / llama.cpp log (as `gfxgate diagnose` reads it) for the runtime row.",
)
@click.option(
    "--runtime",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="WORKLOG",
    help="A `gfxgate sweep` worklog of this machine: a backend whose runs failed is 'failed on this machine'.",
)
@click.option(
    "--journal",
    is_flag=True,
    help="Also diagnose the service's journal since boot (journalctl -u ollama; this machine only).",
)
@click.option(
    "--live",
    "live_url",
    metavar="URL",
    default=None,
    help="Ask this Ollama server /api/version and /api/ps (e.g. http://127.0.0.1:11434).",
)
@click.option(
    "--collect",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the files doctor read to OUT.tar.gz (only the GPU variables of environments), for `doctor --root`.",
)
@format_option(("md", "json", "text", "nfd", "prometheus"), default="text")
@output_option()
@fail_on_option(
    "backend",
    "BACKEND|any",
    help="Exit 1 when BACKEND (rocm, vulkan, cuda, cpu) or any backend does not run on this machine as it is; repeatable.",
)
@source_options(refs=False, online=True, note="for the matrix at the installed version")
@os_option(
    default=None,
    help="The release to answer for (default: the tree's: a captured Windows install is windows; docs/windows.md).",
)
def doctor(root, logs, runtime, journal, live_url, collect, fmt, output, fail_on, sources, online, os_name) -> None:
    """The whole chain on this machine: GPUs (KFD/DRM sysfs, no ROCm needed), installed runtimes, the ollama
    service's real environment (unit + drop-ins, file:line), device access, the gate matrix at the installed
    version, a verdict per backend and the fix as this machine's steps. Read-only; never needs root.

    Exit codes: 0 report written, 1 a --fail-on-backend backend does not run as the machine is, 2 usage, 5 network,
    6 unreadable input (--root not a folder, a --log that cannot be read).
    """
    import sys

    from gfxgate.app.doctor import DoctorRequest, examine
    from gfxgate.doctor.render import render
    from gfxgate.errors import ExitCode
    from gfxgate.sources.resolve import parse_assignments

    result = examine(
        DoctorRequest(
            root=root,
            logs=tuple(logs),
            runtime=runtime,
            journal=journal,
            live_url=live_url,
            sources=parse_assignments(sources, "--source"),
            offline=not online,
            fail_on=tuple(fail_on),
            collect=collect,
            output=output,
            os=os_name,
        )
    )
    emit(render(result.report, fmt, **(terminal(output) if fmt == "text" else {})), output)
    if result.collected is not None:
        click.echo(
            f"gfxgate: wrote {result.collected} files to {collect} (replay: gfxgate doctor --root DIR after tar -xzf)",
            err=True,
        )
    if result.failing:
        click.echo(f"gfxgate: does not run as the machine is: {', '.join(result.failing)}", err=True)
        sys.exit(int(ExitCode.FINDINGS))
