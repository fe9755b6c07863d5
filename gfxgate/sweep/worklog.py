"""The sweep worklog: JSON Lines, one run per line, appended, flushed and fsync'd.

Every line is self-describing (``schema_version`` and ``kind``), so a worklog can be read without the
command line that wrote it. A sweep killed while writing can leave a torn last line (no trailing newline,
not valid JSON): the reader ignores it with a warning, and the writer moves it aside to ``WORKLOG.torn``
before appending, so nothing already written is lost and the next line is not glued to the fragment.
A bad line anywhere else is an :class:`~gfxgate.errors.InputError` naming the line.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping
import hashlib
import io
import platform

import fastjsonschema
import zstandard
from fastjsonschema import JsonSchemaValueException

from gfxgate.errors import InputError
from gfxgate.records import dataclass
from gfxgate.serial import json_key
from gfxgate.fsio import OutputError, read_input
from gfxgate.jsontext import loads_input
from gfxgate import __version__
from gfxgate.datafiles import load_schema

SCHEMA_VERSION = 1
KIND = "gfxgate-sweep-run"

OUTCOMES = ("ok", "http-error", "crash", "timeout", "connection-error")
REQUIRED = ("run_id", "cell", "endpoint", "model", "options", "outcome", "started_at", "ended_at")
MAX_WORKLOG_BYTES = 64 << 20  # ~10,000 runs; more is not a worklog gfxgate wrote


def cell_key(
    endpoint: str,
    model: str,
    num_gpu: int,
    repeat: int,
    *,
    ctx: int | None = None,
    prompt_tokens: int | None = None,
    flash_attn: str | None = None,
    kv_type: str | None = None,
    warmup: bool = False,
) -> str:
    """The identity of one planned run; a rerun skips cells whose key is already in the worklog.

    The context axes are appended only where they are set, so a sweep without them keeps the keys (and the resume)
    of worklogs written before they existed."""
    key = f"{endpoint}|{model}|num_gpu={num_gpu}|repeat={repeat}"
    for name, value in (("ctx", ctx), ("prompt", prompt_tokens), ("fa", flash_attn), ("kv", kv_type)):
        if value is not None:
            key += f"|{name}={value}"
    return key + ("|warmup=yes" if warmup else "")


@dataclass(frozen=True)
class RunRecord:
    """One run of a sweep: the one type the sweep writes (``WorklogWriter.append``, the progress lines) and reads
    (``read_worklog``): the record as its worklog line holds it, and the line it was read from (0 before it is)."""

    record: Mapping[str, Any]
    line: int = 0

    run_id = json_key("record", "run_id")
    cell = json_key("record", "cell")
    endpoint = json_key("record", "endpoint", "name")
    model = json_key("record", "model")
    outcome = json_key("record", "outcome")

    @property
    def url(self) -> str:
        return self.record["endpoint"].get("url", "")

    @property
    def endpoint_kind(self) -> str:
        """``ollama`` (also for worklogs written before the field existed) or ``llama-server``."""
        return self.record["endpoint"].get("kind") or "ollama"

    @property
    def num_gpu(self) -> int:
        return int(self.record["options"]["num_gpu"])

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def ctx(self) -> int | None:
        """The context size the run asked for (``num_ctx``; llama-server's ``-c``); None: the server's default."""
        value = self.record["options"].get("num_ctx")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def prompt_tokens(self) -> int | None:
        """The prompt length the run asked for (``--prompt-tokens``); the server's own count is ``prompt_eval_count``."""
        value = self.record.get("prompt_tokens")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def flash_attn(self) -> str | None:
        return self.record.get("flash_attn")

    @property
    def kv_type(self) -> str | None:
        return self.record.get("kv_cache_type")

    @property
    def warmup(self) -> bool:
        """A warm-up run: recorded, counted, and left out of every statistic."""
        return self.record.get("warmup") is True

    @property
    def gpu_target(self) -> str | None:
        return self.record.get("gpu_target")

    def get(self, key: str, default: Any = None) -> Any:
        return self.record.get(key, default)


Run = RunRecord  # the name the sweep's readers use (facts, hypotheses, model, verdicts): the same type


@dataclass(frozen=True)
class Worklog:
    path: Path
    runs: tuple[Run, ...]
    warnings: tuple[str, ...] = ()

    def effective_runs(self) -> tuple[Run, ...]:
        """The last run of each cell (a retried or re-measured cell supersedes its earlier runs),
        in the order the cells first appear."""
        last: dict[str, Run] = {}
        for run in self.runs:
            last.setdefault(run.cell, run)
            last[run.cell] = run
        return tuple(last.values())

    def superseded(self) -> frozenset[str]:
        """Run ids replaced by a later run of the same cell."""
        kept = {run.run_id for run in self.effective_runs()}
        return frozenset(run.run_id for run in self.runs if run.run_id not in kept)

    def finished_cells(self, retry: Iterable[str] = ()) -> set[str]:
        """Cells a resumed sweep skips: those whose latest run's outcome is not in ``retry``."""
        again = set(retry)
        return {run.cell for run in self.effective_runs() if run.outcome not in again}


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # a zstandard frame (RFC 8878)


def _inflated(path: Path, data: bytes) -> bytes:
    """A zstandard-compressed worklog's lines, inflated within the same bound as a plain one (a frame that inflates
    past MAX_WORKLOG_BYTES is refused, whatever size it declares)."""
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
            out = b""
            while len(out) <= MAX_WORKLOG_BYTES:  # read() may return less than asked: to the bound or the end
                more = reader.read(MAX_WORKLOG_BYTES + 1 - len(out))
                if not more:
                    break
                out += more
    except zstandard.ZstdError as exc:
        raise InputError(f"worklog {path}: not a readable zstandard stream: {exc}") from None
    if len(out) > MAX_WORKLOG_BYTES:
        raise InputError(f"worklog {path}: inflates past {MAX_WORKLOG_BYTES >> 20} MiB; not a worklog gfxgate wrote")
    return out


def read_worklog(path: Path, *, missing_ok: bool = False) -> Worklog:
    """Parse a worklog (plain, or zstandard-compressed as the committed H200 worklogs are); a torn last line is ignored
    with a warning, any other bad line is an InputError."""
    path = Path(path)
    try:  # a regular file only (a FIFO would block, /dev/zero never ends), of bounded size
        data = read_input(path, "worklog ", limit=MAX_WORKLOG_BYTES)
    except FileNotFoundError:
        if missing_ok:
            return Worklog(path, ())
        raise InputError(
            f"worklog {path} does not exist", hint="run `gfxgate sweep --worklog FILE ...` first"
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read worklog {path}: {exc.strerror or exc}") from None
    if data.startswith(ZSTD_MAGIC):  # a committed worklog, zstandard-compressed (samples/h200/*.jsonl.zst)
        data = _inflated(path, data)
    lines = data.split(b"\n")
    torn_tail = lines[-1]  # empty when the file ends with a newline
    runs: list[Run] = []
    warnings: list[str] = []
    for number, raw in enumerate(lines[:-1], start=1):
        if not raw.strip():
            continue
        runs.append(Run(_parse_line(path, number, raw), number))
    if torn_tail.strip():
        number = len(lines)
        try:
            runs.append(Run(_parse_line(path, number, torn_tail), number))
        except InputError:
            warnings.append(
                f"{path}:{number}: ignored a torn last line ({len(torn_tail)} bytes, no newline): "
                "an interrupted write; that run will be redone"
            )
    return Worklog(path, tuple(runs), tuple(warnings))


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None (a record is a few levels deep)."""
    if isinstance(value, float):
        return value if value - value == 0 else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _parse_line(path: Path, number: int, raw: bytes) -> Mapping[str, Any]:
    where = f"{path}:{number}"

    try:  # too deep, an integer too long, a number not finite: a ValueError too (never a RecursionError)
        record = loads_input(raw)
    except ValueError as exc:
        raise InputError(f"{where}: not a worklog line ({exc})", hint="is this a gfxgate sweep worklog?") from None
    if not isinstance(record, dict) or record.get("kind") != KIND:
        raise InputError(f"{where}: not a gfxgate sweep run (kind is not {KIND!r})")
    version = record.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError(
            f"{where}: worklog schema_version {version!r} is not supported (this gfxgate reads {SCHEMA_VERSION})"
        )
    missing = [key for key in REQUIRED if key not in record]
    if missing:
        raise InputError(f"{where}: run record lacks {', '.join(missing)}")
    if record["outcome"] not in OUTCOMES:
        raise InputError(f"{where}: unknown outcome {record['outcome']!r}")
    if not isinstance(record.get("options"), dict) or not isinstance(record["options"].get("num_gpu"), int):
        raise InputError(f"{where}: options.num_gpu must be an integer")
    if not isinstance(record.get("endpoint"), dict) or "name" not in record["endpoint"]:
        raise InputError(f"{where}: endpoint must be an object with a name")
    problem = _line_problem(raw, record)
    if problem:
        raise InputError(f"{where}: {problem}", hint="`gfxgate schema sweep-worklog` prints what a line must hold")
    return record


# The schema check is most of what reading a line costs (a few ms), and a worklog is read again and again: by a
# resumed sweep, by `scan --runtime` once per kind of verdict, by `sweep report` after the sweep. A line's problem
# depends on its bytes alone, so each distinct line is checked once per process (keyed by a digest of its bytes).
_CHECKED: dict[bytes, str | None] = {}
_CHECKED_MAX = 4096


def _line_problem(raw: bytes, record: Mapping[str, Any]) -> str | None:
    """``_schema_problem(record)`` for the line ``raw`` that ``record`` was parsed from, remembered by its bytes."""
    key = hashlib.blake2b(raw, digest_size=16).digest()
    if key in _CHECKED:
        return _CHECKED[key]
    problem = _schema_problem(record)
    if len(_CHECKED) >= _CHECKED_MAX:
        _CHECKED.clear()
    _CHECKED[key] = problem
    return problem


def _schema_problem(record: Mapping[str, Any]) -> str | None:
    """The first way ``record`` breaks the worklog-line schema (wrong field types would otherwise become
    tracebacks deep in `sweep report` and `scan --runtime`), or None.

    A line that passes fastjsonschema's check compiled from the schema (20-50 times faster than jsonschema's
    validator) has no problem; one it rejects is validated by jsonschema, whose first error by path gives the
    message (fastjsonschema asserts ``format``, which jsonschema does not: such a line only costs that second look)."""
    try:
        _line_check()(record)
        return None
    except JsonSchemaValueException:
        pass
    error = next(
        iter(sorted(_line_validator().iter_errors(record), key=lambda e: list(map(str, e.absolute_path)))), None
    )
    if error is None:
        return None
    where = "/".join(map(str, error.absolute_path)) or "(the record)"
    return f"{where}: {' '.join(error.message.split())[:200]}"


_VALIDATOR: list = []
_CHECK: list = []


def _line_schema() -> dict[str, Any]:
    # Every field that is there must have its type; only the REQUIRED top-level fields must be there
    # (older and hand-made worklogs carry fewer; readers use .get for the rest).
    return {**_without_required(load_schema("sweep-worklog")), "required": list(REQUIRED)}


def _line_check() -> Callable[[Any], Any]:
    """fastjsonschema's validator of a worklog line: the schema's keywords mean the same in draft 7 as in its
    draft 2020-12, which fastjsonschema does not name; no defaults are filled in."""
    if not _CHECK:
        schema = {k: v for k, v in _line_schema().items() if k not in ("$schema", "$id")}
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
        _CHECK.append(fastjsonschema.compile(schema, use_default=False))
    return _CHECK[0]


def _without_required(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_required(v) for k, v in schema.items() if k != "required"}
    if isinstance(schema, list):
        return [_without_required(v) for v in schema]
    return schema


def _line_validator():
    if not _VALIDATOR:
        import jsonschema  # here: only a line fastjsonschema rejects needs it, 45 ms to import

        _VALIDATOR.append(jsonschema.Draft202012Validator(_line_schema()))
    return _VALIDATOR[0]


def record_fields(cell, plan, *, host: str, started, ended, wall: float, prompt: str | None = None) -> dict[str, Any]:
    """The fields of a run record that do not depend on the endpoint (Ollama or llama-server): who wrote it,
    the cell (with its context axes), the request and its timing. The runner of each endpoint adds what it
    measured; ``prompt`` is the text sent where it is not the plan's (a prompt of ``--prompt-tokens``)."""
    prompt = plan.prompt if prompt is None else prompt
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "generator": f"gfxgate {__version__}",
        "cell": cell.key,
        "repeat": cell.repeat,
        "host": host,
        "platform": platform.platform(terse=True),
        "gpu_target": plan.gpu_target,
        "model": cell.model,
        "timeout_s": plan.timeout,
        "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
        "prompt_preview": prompt[:80],
        "warmup": cell.warmup,
        "prompt_tokens": cell.prompt_tokens,
        "prompt_length": cell.prompt_spec,
        "flash_attn": cell.flash_attn,
        "kv_cache_type": cell.kv_type,
        "started_at": started.isoformat(timespec="milliseconds"),
        "ended_at": ended.isoformat(timespec="milliseconds"),
        "wall_s": round(wall, 3),
        **slurm_fields(),
    }


def slurm_fields() -> dict[str, Any]:
    """``{"slurm": {node, job_id, array_job_id, array_task_id, …}}`` when the run is a Slurm task (a `gfxgate fleet
    sweep` array task), else nothing: the report keeps each run's node."""
    env = {key: os.environ[var] for key, var in SLURM_ENV.items() if os.environ.get(var)}
    return {"slurm": env} if env else {}


# what Slurm tells a task about itself (the same names as host/slurm.py's, read here: the reader and the report's
# formatters stay clear of host/)
SLURM_ENV = {
    "node": "SLURMD_NODENAME",
    "job_id": "SLURM_JOB_ID",
    "array_job_id": "SLURM_ARRAY_JOB_ID",
    "array_task_id": "SLURM_ARRAY_TASK_ID",
    "cluster": "SLURM_CLUSTER_NAME",
}


class WorklogWriter:
    """Appends run records durably: one ``write`` per line, then flush and fsync."""

    def __init__(self, path: Path, *, set_aside: bool = True) -> None:
        """Open for appending and take the worklog's lock (read the worklog only after this, so a second
        sweep cannot plan from a stale copy); ``set_aside=False`` leaves the torn-tail repair to the caller
        (after it has checked the worklog is one)."""
        self.path = Path(path)
        if self.path.parent and not self.path.parent.exists():
            raise InputError(f"worklog folder {self.path.parent} does not exist")
        self._created = not self.path.exists()  # removed again on close if nothing was written
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InputError(f"cannot open worklog {self.path} for appending: {exc.strerror or exc}") from None
        try:
            # One writer at a time: two sweeps appending to one worklog would run the same cells twice.
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            self._fd = -1
            raise InputError(f"worklog {self.path} is in use by another gfxgate sweep") from None
        if set_aside:
            try:
                self.set_aside_torn_tail()
            except BaseException:
                self.close()
                raise

    def set_aside_torn_tail(self) -> None:
        """Bytes after the last newline: a complete record only lacks its newline (it gets one, and counts);
        anything else is an interrupted write, moved to WORKLOG.torn and cut off. A write that fails there (a
        full disk) is an output error, exit 2."""
        try:
            self._set_aside_torn_tail()
        except OSError as exc:
            raise OutputError(
                f"cannot repair the torn last line of worklog {self.path}: {exc.strerror or exc}",
                hint="free space (or pick another --worklog); the runs already written are kept",
            ) from None

    def _set_aside_torn_tail(self) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0:
            return
        with open(self.path, "rb+") as handle:
            start = max(0, size - (1 << 20))
            handle.seek(start)
            tail = handle.read()
            if tail.endswith(b"\n"):
                return
            cut = tail.rfind(b"\n")
            if cut < 0 and start > 0:
                raise InputError(f"worklog {self.path} ends with a line over 1 MiB without a newline")
            keep = start + cut + 1
            fragment = tail[cut + 1 :]
            try:
                _parse_line(self.path, 0, fragment)
            except InputError:
                pass
            else:  # the reader counted it as a run: keep it, completed
                os.write(self._fd, b"\n")
                os.fsync(self._fd)
                return
            with open(self.path.with_name(self.path.name + ".torn"), "ab") as aside:
                aside.write(fragment + b"\n")
                aside.flush()
                os.fsync(aside.fileno())
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())

    def append(self, run: RunRecord | Mapping[str, Any]) -> int:
        """Write one run record as one line; returns the number of bytes written."""
        record = run.record if isinstance(run, RunRecord) else run
        try:
            text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except ValueError:  # a server's 1e308 / 1e-300 made an infinite rate: null, never non-JSON the reader refuses
            text = json.dumps(_finite(record), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        data = (text + "\n").encode("utf-8")
        written = 0
        try:
            before = os.fstat(self._fd).st_size
            while written < len(data):
                written += os.write(self._fd, data[written:])
            os.fsync(self._fd)
        except OSError as exc:  # a full disk, a quota, an I/O error: an output that cannot be written (exit 2)
            if written:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, before)  # no torn line left behind (the next run would repair one)
            raise OutputError(
                f"cannot append to worklog {self.path}: {exc.strerror or exc}",
                hint="free space (or pick another --worklog); the runs already written are kept",
            ) from None
        return written

    def close(self) -> None:
        if self._fd >= 0:
            try:
                if self._created and os.fstat(self._fd).st_size == 0:
                    os.unlink(self.path)  # a sweep that ran nothing leaves no worklog behind
            except OSError:
                pass
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> WorklogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
