from gfxgate.cli import run

if __name__ == "__main__":  # pragma: no cover - exercised through `python -m gfxgate`
    run()
