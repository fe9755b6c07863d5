"""Everything that touches the machine, once: files under a root (``rootfs``), sysfs, installs, units, access."""
