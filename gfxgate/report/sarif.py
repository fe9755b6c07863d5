"""SARIF 2.1.0 for `scan` and `diff`: stable rule ids and fingerprints, locations in this repository.

Upstream files are not part of a pull request, so every result points at a file of *this*
repository — the gate rule's YAML file (scan; with ``--rules DIR``, DIR's file) or the pin in
``rules/pins.toml`` (diff) — and carries the upstream evidence (``repo@tag:path:line`` and the
matched line) in its message. A pure formatter: the locations come with the result (the rules loader
knows each rule's file and line; the CLI reads the pins file).

- rule ids: ``gfxgate/scan/<layer>`` and ``gfxgate/diff/<kind>``; they never contain a version.
- levels: blocked / regression → ``error``; override-required / drift → ``warning``;
  partial, unknown, improvement, resolved → ``note``. Allowed, not-scanned and not-measured cells
  and evidence-only moves produce no result.
- ``partialFingerprints["gfxgate/v1"]`` hashes what the result is about (layer, target, status or
  transition, deciding rules), never a line number or tag, so it survives upstream churn.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Mapping

from gfxgate.gate.matrix import GateMatrix
from gfxgate.jsontext import dumps
from gfxgate.model import Status
from gfxgate import __version__

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SCAN_LEVELS = {
    Status.BLOCKED: "error",
    Status.OVERRIDE_REQUIRED: "warning",
    Status.PARTIAL: "note",
    Status.UNKNOWN: "note",
}
DIFF_LEVELS = {"regression": "error", "drift": "warning", "improvement": "note", "resolved": "note"}
DIFF_TEXT = {
    "regression": "A target lost a layer: its status became more restrictive.",
    "drift": "A layer stopped deciding: a rule no longer matches upstream, or a source could not be read.",
    "improvement": "A target gained a layer: its status became less restrictive.",
    "resolved": "A layer that decided nothing before now decides.",
}
Where = tuple[str, int]  # (uri relative to the repository root, 1-based line)


def fingerprint(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def _location(where: Where) -> dict[str, Any]:
    uri, line = where
    return {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": max(1, line)}}}


def _evidence_text(evidence) -> str:
    parts = []
    for e in evidence:
        where = e.get("where") or "(no location)"
        parts.append(f"{where}" + (f" `{e['text'].strip()}`" if e.get("text") else ""))
    return "; ".join(parts)


def _driver(rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "gfxgate", "version": __version__, "semanticVersion": __version__, "rules": rules}


def _document(
    rules: list[dict[str, Any]], results: list[dict[str, Any]], properties: dict[str, Any], category: str
) -> dict[str, Any]:
    index = {r["id"]: i for i, r in enumerate(rules)}
    for result in results:
        result["ruleIndex"] = index[result["ruleId"]]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": _driver(rules)},
                "automationDetails": {"id": f"gfxgate/{category}/"},
                "columnKind": "unicodeCodePoints",
                "results": results,
                "properties": properties,
            }
        ],
    }


# -- scan -------------------------------------------------------------------------------------------------
def scan_sarif(matrix: GateMatrix) -> dict[str, Any]:
    """One result per decided-restrictive or unknown cell, located at the rule that decides it (where the rules
    loader found it: ``matrix.rule_locations``), else at its layer's gates file."""
    rule_where: dict[str, Where] = {}
    layer_where: dict[str, Where] = {}
    for loc in matrix.rule_locations:
        rule_where[loc.rule] = (loc.uri, loc.line)
        layer_where.setdefault(loc.layer, (loc.uri, 1))
    rules = []
    results = []
    for layer in matrix.layers:
        cells = [v for v in matrix.row(layer.id) if v.status in SCAN_LEVELS]
        if not cells:
            continue
        rule_id = f"gfxgate/scan/{layer.id}"
        rules.append(
            {
                "id": rule_id,
                "name": "".join(w.capitalize() for w in re.split(r"[^A-Za-z0-9]+", layer.id)),
                "shortDescription": {"text": layer.title},
                "fullDescription": {"text": layer.question},
                "defaultConfiguration": {"level": "warning"},
                "properties": {"tags": ["gfxgate", layer.kind]},
            }
        )
        for v in cells:
            deciding = sorted({e.source for e in v.evidence})
            where = (
                next((rule_where[r] for r in deciding if r in rule_where), None)
                or layer_where.get(layer.id)
                or ("rules/layers.yaml", 1)
            )
            evidence = [e.to_json() for e in v.evidence]
            text = f"{v.target}: {layer.title} is {v.status.value} — {v.summary}."
            if evidence:
                text += f" Evidence: {_evidence_text(evidence)}."
            if v.reason:
                text += f" {'Why' if v.status is Status.UNKNOWN else 'Also checked'}: {v.reason}."
            if v.remedy:
                text += f" Remedy: {v.remedy}"
            results.append(
                {
                    "ruleId": rule_id,
                    "level": SCAN_LEVELS[v.status],
                    "message": {"text": text},
                    "locations": [_location(where)],
                    "partialFingerprints": {
                        "gfxgate/v1": fingerprint("scan", layer.id, v.target, v.status.value, *deciding)
                    },
                    "properties": {
                        "target": v.target,
                        "layer": layer.id,
                        "status": v.status.value,
                        "rules": deciding,
                        "evidence": [e["where"] for e in evidence if e["where"]],
                    },
                }
            )
    properties = {"targets": list(matrix.targets), "sources": [f"{s.name}@{s.ref}" for s in matrix.sources]}
    return _document(rules, results, properties, "scan")


# -- diff -------------------------------------------------------------------------------------------------
def diff_sarif(
    diff, *, pins_uri: str = "rules/pins.toml", pins_lines: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """One result per status change, located at the pin of the repository whose evidence changed."""
    pins_lines = pins_lines or {}
    kinds = [k for k in DIFF_LEVELS if diff.of_kind(k)]
    rules = [
        {
            "id": f"gfxgate/diff/{kind}",
            "name": kind.capitalize(),
            "shortDescription": {"text": f"Gate {kind}"},
            "fullDescription": {"text": DIFF_TEXT[kind]},
            "defaultConfiguration": {"level": DIFF_LEVELS[kind]},
            "properties": {"tags": ["gfxgate", "diff"]},
        }
        for kind in kinds
    ]
    results = []
    for c in diff.changes:
        if c.kind not in DIFF_LEVELS:
            continue
        old, new = c.to_json()["old"], c.to_json()["new"]
        repos = [
            e["where"].split("@", 1)[0]
            for e in new["evidence"] + old["evidence"]
            if e.get("where") and "@" in e["where"]
        ]
        line = next((pins_lines[r] for r in repos if r in pins_lines), 1)
        text = (
            f"{c.target}: {c.layer_title} {c.old_status} → {c.new_status} ({c.kind})."
            f" Old: {old['summary']}" + (f" [{_evidence_text(old['evidence'])}]" if old["evidence"] else "") + "."
            f" New: {new['summary']}" + (f" [{_evidence_text(new['evidence'])}]" if new["evidence"] else "") + "."
        )
        if new["reason"] and not new["evidence"]:
            text += f" Why: {new['reason']}."
        if new["remedy"]:
            text += f" Remedy: {new['remedy']}"
        results.append(
            {
                "ruleId": f"gfxgate/diff/{c.kind}",
                "level": DIFF_LEVELS[c.kind],
                "message": {"text": text},
                "locations": [_location((pins_uri, line))],
                "partialFingerprints": {
                    "gfxgate/v1": fingerprint("diff", c.kind, c.layer, c.target, c.old_status, c.new_status)
                },
                "properties": {
                    "target": c.target,
                    "layer": c.layer,
                    "kind": c.kind,
                    "old_status": c.old_status,
                    "new_status": c.new_status,
                    "rules": list(c.rule_ids),
                },
            }
        )
    properties = {
        "targets": list(diff.targets),
        "old_sources": [f"{s['name']}@{s['ref']}" for s in diff.old_sources],
        "new_sources": [f"{s['name']}@{s['ref']}" for s in diff.new_sources],
    }
    return _document(rules, results, properties, "diff")


def render_scan(matrix: GateMatrix) -> str:
    return dumps(scan_sarif(matrix)) + "\n"
