"""JSON Schema of ``gfxgate artifacts --format json`` (schema_version 1); a test validates real output."""

from __future__ import annotations

_NULLABLE_INT = {"type": ["integer", "null"]}
_LOCATION = {
    "type": "object",
    "required": ["repo", "path", "offset"],
    "properties": {"repo": {"const": "file"}, "path": {"type": "string"}, "offset": _NULLABLE_INT},
}
_VERDICT = {
    "type": "object",
    "required": ["layer", "target", "status", "summary", "evidence", "remedy", "reason"],
    "properties": {
        "layer": {"enum": ["rocblas-artifacts", "installed-gpu-code"]},
        "target": {"type": "string"},
        "status": {"enum": ["allowed", "override-required", "partial", "blocked", "unknown"]},
        "summary": {"type": "string"},
        "evidence": {"type": "array", "items": {"type": "object", "required": ["source", "location", "text"],
                                                "properties": {"location": _LOCATION}}},
        "remedy": {"type": ["string", "null"]},
        "reason": {"type": ["string", "null"]},
    },
}
_CODE_OBJECT = {
    "type": "object",
    "required": ["target", "processor", "container", "offset", "size", "confirmed"],
    "additionalProperties": False,
    "properties": {
        "target": {"type": "string"},
        "processor": {"type": "string"},
        "container": {"enum": ["file", "bundle", "compressed-bundle", "embedded"]},
        "offset": {"type": "integer", "minimum": 0},
        "inner_offset": _NULLABLE_INT,
        "size": {"type": "integer", "minimum": 0},
        "code_object_version": _NULLABLE_INT,
        "generic_version": _NULLABLE_INT,
        "entry_id": {"type": ["string", "null"]},
        "confirmed": {"type": "boolean"},
        "kernels": {"type": ["array", "null"], "items": {"type": "string"}},
        "note": {"type": "string"},
    },
}
_COUNTS = {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}
_FILE = {
    "type": "object",
    "required": ["path", "kind", "size", "bytes_read", "targets", "code_objects", "strings", "errors", "skipped"],
    "additionalProperties": False,
    "properties": {
        "path": {"type": "string"},
        "kind": {"enum": ["code-object", "offload-bundle", "compressed-bundle", "hip-host-elf",
                          "host-elf-with-images", "host-elf", "other", "skipped"]},
        "size": {"type": "integer"},
        "bytes_read": {"type": "integer"},
        "sha256": {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"},
        "targets": _COUNTS,
        "kernel_counts": _COUNTS,
        "code_objects": {"type": "array", "items": _CODE_OBJECT},
        "strings": {"type": "array", "items": {"type": "object", "required": ["target", "offset", "count"]}},
        "library": {"type": ["object", "null"]},
        "errors": {"type": "array", "items": {"type": "object", "required": ["message", "offset"]}},
        "skipped": {"type": ["string", "null"]},
    },
}
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "gfxgate artifacts report",
    "type": "object",
    "required": ["schema_version", "kind", "generator", "paths", "options", "summary", "targets", "files",
                 "answers"],
    "properties": {
        "schema_version": {"const": 1},
        "kind": {"const": "artifacts"},
        "generator": {"type": "string"},
        "paths": {"type": "array", "items": {"type": "string"}},
        "options": {"type": "object"},
        "summary": {"type": "object", "required": ["files", "by_kind", "errors", "bytes_read", "size"]},
        "targets": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["code_objects", "files", "kernels"]}},
        "files": {"type": "array", "items": _FILE},
        "answers": {"type": "array", "items": _VERDICT},
        "notes": {"type": "array", "items": {"type": "string"}},
    },
}
