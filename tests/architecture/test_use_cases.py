"""The use-case rule (issue 25 item 3): a command's logic is one function in gfxgate/app/; its click callback only
parses options into the request, calls that function once, and renders and writes the result.

Read from the command modules' source (ast), so a new command that decides something in its click callback, or
reaches into a pipeline instead of the use case, fails here with the module and line."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path

import pytest

import gfxgate.cli
from gfxgate.cli import COMMANDS

CLI = Path(gfxgate.cli.__file__).parent

# what a command module may import from gfxgate besides gfxgate.cli and gfxgate.app: formatters (the result's
# render), the error codes, writing and text helpers, option parsing (NAME=VALUE) and the version
VIEW_MODULES = ("gfxgate.errors", "gfxgate.report", "gfxgate.jsontext", "gfxgate.serial", "gfxgate.fsio")
VIEW_NAMES = {("gfxgate", "__version__"), ("gfxgate.sources.resolve", "parse_assignments")}
# a sweep's progress lines show each run as its cell text (the same words as the report's cells)
PROGRESS_VIEWS = {("gfxgate.cli.sweep", "gfxgate.sweep.facts", "cell_text")}


def _command_modules() -> list[str]:
    return sorted({module for module, _, _ in COMMANDS.values()})


def _allowed(module: str, source: str, name: str) -> bool:
    if source.startswith(("gfxgate.cli", "gfxgate.app")) or not source.startswith("gfxgate"):
        return True
    if source.endswith(".render") or source in VIEW_MODULES or source.startswith("gfxgate.report."):
        return True
    return (source, name) in VIEW_NAMES or (module, source, name) in PROGRESS_VIEWS


def _imports(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                yield node, node.module, alias.name, alias.asname or alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name, "", alias.asname or alias.name.split(".")[0]


def _is_command(func: ast.FunctionDef) -> bool:
    """Decorated with click.command / click.group or a group's .command (``@pins.command("bump")``)."""
    for deco in func.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute) and target.attr in ("command", "group"):
            return True
    return False


def _callbacks(module: str, path: Path | None = None) -> list[tuple[ast.FunctionDef, ast.Module]]:
    path = path or CLI / (module.rsplit(".", 1)[1] + ".py")
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [(node, tree) for node in tree.body if isinstance(node, ast.FunctionDef) and _is_command(node)]


def _app_calls(func: ast.FunctionDef, tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module.function) of each call of a gfxgate.app function in the callback (names imported from gfxgate.app
    in the callback or at the module's top; classes, the requests, are not calls of a use case)."""
    bound = {}
    for scope in (tree, func):
        for node, source, name, local in _imports(scope):
            if source.startswith("gfxgate.app") and name and (scope is func or node in tree.body):
                bound[local] = (source, name)
    calls = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in bound:
            source, name = bound[node.func.id]
            if inspect.isfunction(getattr(importlib.import_module(source), name)):
                calls.append((node.lineno, f"{source}.{name}"))
    return calls


def _only_a_docstring(func: ast.FunctionDef) -> bool:
    body = func.body
    return len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)


@pytest.mark.parametrize("module", _command_modules())
def test_every_command_calls_exactly_one_use_case(module):
    check_one_use_case(module)


def check_one_use_case(module: str, path: Path | None = None) -> None:
    callbacks = _callbacks(module, path)
    assert callbacks, f"{module} defines no click command"
    for func, tree in callbacks:
        if _only_a_docstring(func):  # a group that only holds its sub-commands (`pins`, `snapshot`)
            continue
        calls = _app_calls(func, tree)
        assert len(calls) == 1, (
            f"{module}.{func.name} calls {len(calls)} gfxgate.app functions {calls}: a command "
            "calls exactly one use case (gfxgate/app/<command>.py) and renders its result"
        )


@pytest.mark.parametrize("module", _command_modules())
def test_command_modules_import_no_pipeline(module):
    """A command module reads options and renders: gfxgate.app, formatters and the view helpers only."""
    check_imports(module)


def check_imports(module: str, path: Path | None = None) -> None:
    path = path or CLI / (module.rsplit(".", 1)[1] + ".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wrong = [
        f"line {node.lineno}: {source}{'.' + name if name else ''}"
        for node, source, name, _ in _imports(tree)
        if not _allowed(module, source, name)
    ]
    assert not wrong, f"{module} imports logic below the use cases (move it into gfxgate/app/): {wrong}"


def test_each_use_case_takes_one_request():
    """Every use case a command calls takes at most one argument, a frozen request dataclass when it is a class."""
    import dataclasses
    import sys

    seen = set()
    for module in _command_modules():
        for func, tree in _callbacks(module):
            seen.update(name for _, name in _app_calls(func, tree))
    assert len(seen) >= len(COMMANDS)
    for qualified in sorted(seen):
        source, name = qualified.rsplit(".", 1)
        function = getattr(importlib.import_module(source), name)
        params = list(inspect.signature(function).parameters.values())
        assert len(params) <= 1, f"{qualified} takes {len(params)} arguments: one request"
        for param in params:  # the request's annotation only: a result type may be named for the type checker alone
            kind = param.annotation
            if isinstance(kind, str):
                kind = eval(kind, vars(sys.modules[function.__module__]))  # noqa: S307 - the module's own annotation
            if inspect.isclass(kind) and dataclasses.is_dataclass(kind):
                assert kind.__dataclass_params__.frozen, f"{qualified}: {kind.__name__} is not frozen"  # type: ignore[attr-defined]


def test_the_rule_sees_logic_in_a_callback(tmp_path, monkeypatch):
    """The checks above fail on a command that decides in its callback: two use cases called, a pipeline imported."""
    source = textwrap.dedent("""
        import click

        from gfxgate.cli.common import emit


        @click.command()
        def bad() -> None:
            from gfxgate.app.schema import schema
            from gfxgate.gate.scan import scan_matrix

            emit(schema("matrix") + schema("gates"), None)
            scan_matrix([])
        """)
    (tmp_path / "bad.py").write_text(source)
    monkeypatch.setattr(__import__(__name__, fromlist=["CLI"]), "CLI", tmp_path)
    [(func, tree)] = _callbacks("gfxgate.cli.bad")
    assert [name for _, name in _app_calls(func, tree)] == ["gfxgate.app.schema.schema"] * 2
    assert not _allowed("gfxgate.cli.bad", "gfxgate.gate.scan", "scan_matrix")
