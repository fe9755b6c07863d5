"""Everything that touches the machine, once: processes (``proc``), the systemd journal (``journal``), the GPU
tools (``probes``), files under a root (``rootfs``), sysfs, installs, units and access. Nothing outside this package
imports :mod:`subprocess`."""
