"""Everything that touches the machine, once: processes (``proc``), the systemd journal (``journal``), the GPU
tools (``probes``). Nothing outside this package imports :mod:`subprocess`."""
