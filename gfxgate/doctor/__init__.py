"""`gfxgate doctor`: this machine's GPUs, installs, service environment and access, joined to the gate matrix."""
