"""``python -m ratchet``: the same as the ``ratchet`` command."""

from .cli import main

main()
