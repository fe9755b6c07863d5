"""One function per command: a frozen request in, a result out; the CLI only parses options and renders."""
