def checks_called(monkeypatch, call):
    """Run ``call()`` with the loaders a cross-check of the shipped rules needs (the pins, the layers' ids, the
    workarounds) replaced by recorders; returns ``call()``'s result and the names of those that were called — none,
    when a start-up cache answered."""
    from gfxgate.gate import ruleset, workarounds
    from gfxgate.sources import resolve

    calls: list[str] = []
    with monkeypatch.context() as patch:
        for module, name in ((resolve, "load_pins"), (ruleset, "layer_ids"), (workarounds, "default_workarounds")):
            patch.setattr(module, name, lambda *a, _n=name, **k: calls.append(_n))
        result = call()
    return result, calls
