"""The one plugin convention: a kind named ``foo-bar`` is the module ``<package>.foo_bar``.

Matchers (``gfxgate.matchers``, attribute ``MATCHER``) and trace hops (``gfxgate.trace.hops``, the
module itself) are found this way: adding one is adding its module, nothing else lists it. The
names come from the package folder without importing anything; a plugin is imported on first use.
:class:`Plugins` is a read-only :class:`~collections.abc.Mapping`, so ``in``, ``get``, ``items`` and
``len`` all see every plugin, imported or not.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, Mapping
from typing import Any


class Plugins(Mapping):
    def __init__(self, package: str, attribute: str | None = None, *, helpers: tuple[str, ...] = ()) -> None:
        self.package, self.attribute, self.helpers = package, attribute, frozenset(helpers)
        self._names: tuple[str, ...] | None = None
        self._loaded: dict[str, Any] = {}

    def names(self) -> tuple[str, ...]:
        if self._names is None:
            path = importlib.import_module(self.package).__path__
            modules = (m.name for m in pkgutil.iter_modules(path) if not m.ispkg)
            self._names = tuple(
                sorted(m.replace("_", "-") for m in modules if not m.startswith("_") and m not in self.helpers)
            )
        return self._names

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            if name not in self.names():
                raise KeyError(name)
            module = importlib.import_module(f"{self.package}.{name.replace('-', '_')}")
            self._loaded[name] = getattr(module, self.attribute) if self.attribute else module
        return self._loaded[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())
