"""JSON Schemas of a worklog line and of `gfxgate sweep report --format json` (draft 2020-12).

Kept as Python data next to the code that writes the documents; the tests validate real output
against them, so a change to either side that breaks the contract fails there.
"""

from __future__ import annotations

from typing import Any

from gfxgate.sweep.report import REPORT_SCHEMA_VERSION
from gfxgate.sweep.worklog import KIND, OUTCOMES, SCHEMA_VERSION

_NULLABLE_INT = {"type": ["integer", "null"]}
_NULLABLE_STR = {"type": ["string", "null"]}
_PHASE = {
    "type": "object",
    "required": ["phase", "reason"],
    "properties": {
        "phase": {"enum": ["none", "load", "compute", "timeout", "transport", "unknown"]},
        "reason": {"type": "string"},
    },
}
_COLLECTED = {
    "type": "object",
    "required": ["source", "ok", "note"],
    "properties": {
        "source": {"type": "string"},
        "where": {"type": "string"},
        "ok": {"type": "boolean"},
        "note": {"type": "string"},
        "line_count": {"type": "integer"},
        "first_line_no": {"type": "integer"},
        "excerpt": {"type": "array", "items": {"type": "string"}},
    },
}

WORKLOG_LINE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://gfxgate.invalid/schemas/sweep-worklog-line.json",
    "title": "gfxgate sweep worklog line (one run)",
    "type": "object",
    "required": [
        "schema_version", "kind", "run_id", "cell", "repeat", "host", "gpu_target", "endpoint", "server_version",
        "model", "model_digest", "options", "started_at", "ended_at", "wall_s", "outcome", "http_status", "error",
        "eval_count", "durations_ns", "tokens_per_s", "ps_after", "evidence", "crash", "phase", "environment",
    ],  # fmt: skip
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "kind": {"const": KIND},
        "run_id": {"type": "string", "minLength": 1},
        "cell": {"type": "string", "pattern": r"^[^|]+\|.+\|num_gpu=-?\d+\|repeat=\d+$"},
        "repeat": {"type": "integer", "minimum": 0},
        "host": {"type": "string"},
        "gpu_target": _NULLABLE_STR,
        "endpoint": {
            "type": "object",
            "required": ["name", "url"],
            "properties": {
                "name": {"type": "string"},
                "url": {"type": "string"},
                "kind": {"enum": ["ollama", "llama-server"]},
                "command": {"type": "array", "items": {"type": "string"}},
            },
        },
        "server_version": _NULLABLE_STR,
        "model": {"type": "string"},
        "model_digest": _NULLABLE_STR,
        "options": {
            "type": "object",
            "required": ["num_gpu", "num_predict", "seed", "temperature"],
            "properties": {
                "num_gpu": {"type": "integer", "minimum": -1},
                "num_predict": {"type": "integer"},
                "seed": {"type": "integer"},
                "temperature": {"type": "number"},
            },
        },
        "started_at": {"type": "string", "format": "date-time"},
        "ended_at": {"type": "string", "format": "date-time"},
        "wall_s": {"type": "number", "minimum": 0},
        "outcome": {"enum": list(OUTCOMES)},
        "http_status": _NULLABLE_INT,
        "error": _NULLABLE_STR,
        "eval_count": _NULLABLE_INT,
        "durations_ns": {
            "type": "object",
            "required": ["total", "load", "prompt_eval", "eval"],
            "additionalProperties": _NULLABLE_INT,
        },
        "tokens_per_s": {"type": ["number", "null"]},
        "ps_after": {
            "type": "object",
            "required": ["ok", "models"],
            "properties": {
                "ok": {"type": "boolean"},
                "models": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["model", "size", "size_vram"],
                        "properties": {"size": _NULLABLE_INT, "size_vram": _NULLABLE_INT},
                    },
                },
            },
        },
        "evidence": {"type": "array", "items": _COLLECTED},
        "crash": {
            "oneOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["signals", "exit_status", "terminated", "frames", "key_frames", "excerpt"],
                    "properties": {
                        "signals": {"type": "array", "items": {"type": "string"}},
                        "exit_status": _NULLABLE_INT,
                        "terminated": {"type": "boolean"},
                        "frames": {"type": "array", "items": {"type": "string"}},
                        "key_frames": {"type": "array", "items": {"type": "string"}},
                        "excerpt": {"type": "array", "items": {"type": "string"}},
                    },
                },
            ]
        },
        "phase": _PHASE,
        # llama-server runs only (endpoint.kind = "llama-server"): what its log says, and the sweep's own cost
        "offload": {
            "type": "object",
            "required": ["backends", "devices", "layers", "of"],
            "properties": {
                "backends": {"type": "array", "items": {"type": "string"}},
                "devices": {"type": "array", "items": {"type": "string"}},
                "layers": _NULLABLE_INT,
                "of": _NULLABLE_INT,
                "line": _NULLABLE_INT,
                "model_loaded_line": _NULLABLE_INT,
                "no_usable_gpu": {"type": "boolean"},
            },
        },
        "overhead": {
            "type": "object",
            "required": ["spawn_s", "health_wait_s", "completion_s", "stop_s", "server_exit"],
            "properties": {
                "spawn_s": {"type": "number"},
                "health_wait_s": {"type": ["number", "null"]},
                "completion_s": {"type": ["number", "null"]},
                "stop_s": {"type": ["number", "null"]},
                "server_exit": {
                    "type": "object",
                    "required": ["returncode", "signal", "after_stop"],
                    "properties": {"returncode": _NULLABLE_INT, "signal": _NULLABLE_STR, "after_stop": _NULLABLE_INT},
                },
            },
        },
        "server_log": {"type": "string"},
        "environment": {"type": "array", "items": _COLLECTED},
        "notes": {"type": "array", "items": {"type": "string"}},
    },
}

REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://gfxgate.invalid/schemas/sweep-report.json",
    "title": "gfxgate sweep report",
    "type": "object",
    "required": ["schema_version", "kind", "generator", "worklog", "endpoints", "models", "num_gpu", "cells", "hypotheses", "crashes", "runs", "warnings"],
    "properties": {
        "schema_version": {"const": REPORT_SCHEMA_VERSION},
        "kind": {"const": "sweep-report"},
        "cells": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["model", "num_gpu", "endpoint", "text", "passes", "total", "runs"],
                "properties": {
                    "text": {"type": "string", "pattern": r"^(OK|FAIL|FLAKY)\b"},
                    "runs": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                },
            },
        },
        "hypotheses": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "question", "verdict", "reason", "runs"],
                "properties": {
                    "id": {"enum": ["gpu-unusable", "num-gpu-is-gpu-count", "backend-compute-failure"]},
                    "verdict": {"enum": ["supported", "rejected", "inconclusive"]},
                },
            },
        },
        "crashes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["run", "endpoint", "label", "phase", "reason", "excerpt"],
                "properties": {"phase": _PHASE["properties"]["phase"]},
            },
        },
        "runs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["run", "worklog_line", "endpoint", "num_gpu", "outcome", "superseded"],
                "properties": {"outcome": {"enum": list(OUTCOMES)}, "worklog_line": {"type": "integer", "minimum": 1}},
            },
        },
    },
}
