"""The name Ratchet is installed by; its import name and its command stay ``ratchet``.

``ratchet`` itself, on the public package index, is an unrelated project.
"""

__all__ = ["DISTRIBUTION"]

DISTRIBUTION = "ratchet-runtime"
