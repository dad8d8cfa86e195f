"""The `ratchet` command, run as a real program on real stores."""
