"""What the nodes of a fleet answered: each node's envelope (``gfxgate fleet node``: doctor's JSON, the node name, the
Slurm job and step ids) read from DIR/nodes/, and the one table over them — node x GPU x backend: the verdict, the
layers that block it and the fix. A node the job was given that wrote nothing is a row saying it did not answer.

A node's rows are :func:`doctor_rows` of its doctor JSON, the same function over `gfxgate doctor --format json` run on
that node alone: the fleet adds the node column, nothing else."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from gfxgate.errors import InputError
from gfxgate.fleet.jobs import JOBS_DIR, NODES_DIR
from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord, document
from gfxgate.fsio import read_input
from gfxgate.jsontext import loads_input

NODE_KIND = "gfxgate-fleet-node"
NODE_SCHEMA_VERSION = 1
MAX_NODE_BYTES = 16 << 20
MAX_NODES = 100_000
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
BLOCKING = ("blocked", "override-required")
UNDECIDED = ("unknown", "not-scanned")
MACHINE_LAYERS = ("access", "environment")  # doctor's machine rows: they gate every backend that needs the GPU


@dataclass(frozen=True)
class Row(JsonRecord):
    node: str
    gpu: str  # "gfx900 Radeon RX Vega 56", "none found", or "-" for a node without an answer
    backend: str  # rocm, vulkan, cpu; "-" for a node without an answer
    state: str  # doctor's verdict (runs, needs steps, no route, undecided), or "did not answer" / "error"
    blocking: tuple[str, ...]  # the layers that block this backend (undecided: the ones that are unknown)
    fix: str  # the steps still to do, the pin, or why nothing was decided
    version: str | None = None  # the Ollama release judged


@dataclass(frozen=True)
class NodeStatus(JsonRecord):
    node: str
    answered: bool
    job_id: str | None = None
    step_id: str | None = None
    exit_code: int | None = None
    error: str | None = None
    file: str | None = None


@dataclass(frozen=True)
class FleetReport(JsonRecord):
    folder: str
    jobs: tuple[str, ...]  # the doctor jobs whose node lists were found
    nodes: tuple[NodeStatus, ...]
    rows: tuple[Row, ...]

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(n.node for n in self.nodes if not n.answered)

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(n.node for n in self.nodes if n.answered and n.error)


def check_node_name(name: str) -> str:
    if not _NODE.fullmatch(name):
        raise InputError(f"{name!r} is not a node name gfxgate writes a file for (letters, digits, '.', '_', '-')")
    return name


def doctor_rows(node: str, doctor: Mapping[str, Any]) -> list[Row]:
    """One row per GPU target x backend of a doctor JSON document (`gfxgate doctor --format json`)."""
    targets = doctor.get("targets") or []
    if not targets:
        gpus = doctor.get("gpus") or []
        what = ", ".join(str(g.get("name") or g.get("target") or "?") for g in gpus) or "none found"
        return [Row(node, what, "-", "no AMD GPU target", (), "doctor found no GPU target on this node")]
    rows = []
    for t in targets:
        gpu = f"{t.get('target')} {t.get('gpu')}".strip()
        layer_backends = {layer: tuple(bs) for layer, bs in (t.get("layer_backends") or [])}
        for b in t.get("backends") or []:
            backend = str(b.get("backend"))
            state = str(b.get("state"))
            rows.append(
                Row(
                    node,
                    gpu,
                    backend,
                    state,
                    _blocking(t, backend, state, layer_backends),
                    _fix(t, b, state),
                    t.get("version"),
                )
            )
    return rows


def _gates(layer: str, backend: str, layer_backends: Mapping[str, tuple[str, ...]]) -> bool:
    if layer in layer_backends:
        return backend in layer_backends[layer]
    return layer in MACHINE_LAYERS and backend != "cpu"


def _blocking(target: Mapping[str, Any], backend: str, state: str, layer_backends) -> tuple[str, ...]:
    if state == "runs":
        return ()
    wanted = UNDECIDED if state == "undecided" else BLOCKING
    return tuple(
        str(r["layer"])
        for r in target.get("rows") or []
        if r.get("status") in wanted and _gates(str(r["layer"]), backend, layer_backends)
    )


def _fix(target: Mapping[str, Any], backend: Mapping[str, Any], state: str) -> str:
    todo = [str(s.get("what")) for s in backend.get("steps") or [] if not s.get("done")]
    if todo:
        return "; ".join(todo)
    if state == "runs":
        return "-"
    if state == "no route" and target.get("pin"):
        return f"pin {target['pin']}"
    return str(backend.get("reason") or backend.get("label") or "-")


def read_node(path: Path) -> Mapping[str, Any]:
    """One node's envelope; an InputError naming the file when it is not one."""
    try:
        data = loads_input(read_input(path, "node answer ", limit=MAX_NODE_BYTES))
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != NODE_KIND:
        raise InputError(f"{path}: not a gfxgate fleet node answer (kind is not {NODE_KIND!r})")
    if data.get("schema_version") != NODE_SCHEMA_VERSION:
        raise InputError(f"{path}: schema_version {data.get('schema_version')!r} is not {NODE_SCHEMA_VERSION}")
    node = data.get("node")
    if not isinstance(node, str):
        raise InputError(f"{path}: no node name")
    check_node_name(node)
    doctor = data.get("doctor")
    if doctor is not None and (not isinstance(doctor, dict) or doctor.get("kind") != "doctor"):
        raise InputError(f"{path}: 'doctor' is not a gfxgate doctor document")
    if doctor is None and not isinstance(data.get("error"), str):
        raise InputError(f"{path}: neither a doctor document nor an error")
    return data


def expected_nodes(folder: Path) -> tuple[tuple[str, ...], dict[str, str]]:
    """(job ids, node name -> the latest job given that node) of the doctor jobs that ran on this folder
    (DIR/jobs/JOBID.nodes)."""
    jobs: list[str] = []
    nodes: dict[str, str] = {}
    listed = (
        [p for p in (folder / JOBS_DIR).glob("*.nodes") if p.stem.isdigit()] if (folder / JOBS_DIR).is_dir() else []
    )
    for path in sorted(listed, key=lambda p: int(p.stem)):
        jobs.append(path.stem)

        try:
            text = read_input(path, "node list ", limit=MAX_NODE_BYTES).decode("utf-8", "replace")
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
        for line in text.split():
            nodes[check_node_name(line.strip())] = path.stem
    return tuple(jobs), nodes


def build_report(folder: Path, expect: Iterable[str] = ()) -> FleetReport:
    """The table over DIR/nodes/*.json; the nodes in DIR/jobs/*.nodes and ``expect`` that wrote nothing are listed
    as not answering, and so is a node whose answer is older than the latest job that was given it (a second
    `fleet doctor` into the same folder). A folder with neither answers nor node lists is an InputError."""
    if not folder.is_dir():
        raise InputError(f"{folder} is not a folder", hint="the --dir of `gfxgate fleet doctor`")
    jobs, listed = expected_nodes(folder)
    answers: dict[str, tuple[Path, Mapping[str, Any]]] = {}
    node_dir = folder / NODES_DIR
    paths = sorted(node_dir.glob("*.json")) if node_dir.is_dir() else []
    if len(paths) > MAX_NODES:
        raise InputError(f"{node_dir} holds {len(paths)} files; more than {MAX_NODES} is not a fleet gfxgate wrote")
    for path in paths:
        data = read_node(path)
        answers[data["node"]] = (path, data)
    wanted = list(dict.fromkeys([*listed, *(check_node_name(n) for n in expect), *answers]))
    if not wanted:
        raise InputError(
            f"{folder} holds no node answers ({NODES_DIR}/*.json) and no job node lists ({JOBS_DIR}/*.nodes)",
            hint="run `gfxgate fleet doctor --dir DIR` first (or wait for its job to end)",
        )
    nodes: list[NodeStatus] = []
    rows: list[Row] = []
    for node in sorted(wanted, key=_natural):
        path, data = answers.get(node, (folder, {}))
        slurm = data.get("slurm") or {}
        latest = listed.get(node)
        stale = bool(data) and latest is not None and str(slurm.get("job_id")) != latest
        if not data or stale:
            nodes.append(NodeStatus(node, False, latest))
            rows.append(
                Row(
                    node,
                    "-",
                    "-",
                    "did not answer",
                    (),
                    f"no answer from job {latest}; the folder holds an older one (job {slurm.get('job_id')})"
                    if stale
                    else "no answer in the folder: the task did not run or did not finish",
                )
            )
            continue
        status = NodeStatus(
            node,
            True,
            _str(slurm.get("job_id")),
            _str(slurm.get("step_id")),
            data.get("exit_code") if isinstance(data.get("exit_code"), int) else None,
            _str(data.get("error")),
            str(path),
        )
        nodes.append(status)
        if data.get("doctor") is None:
            rows.append(Row(node, "-", "-", "error", (), str(data.get("error"))))
        else:
            rows += doctor_rows(node, data["doctor"])
    return FleetReport(str(folder), jobs, tuple(nodes), tuple(rows))


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _natural(name: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def envelope(
    node: str,
    slurm: Mapping[str, str],
    doctor_json: str | None,
    *,
    exit_code: int,
    error: str | None,
    failing: tuple[str, ...] = (),
) -> str:
    """The file a node's task writes: doctor's JSON document unchanged under ``doctor``, plus who wrote it."""
    body: dict[str, Any] = {
        "node": node,
        "slurm": dict(slurm),
        "exit_code": exit_code,
        "failing": list(failing),
        "error": error,
        "doctor": None if doctor_json is None else json.loads(doctor_json),
    }
    return json.dumps(document(NODE_KIND, body, version=NODE_SCHEMA_VERSION), ensure_ascii=True, indent=1) + "\n"
