"""The Python blocks of README.md and docs/, run."""
