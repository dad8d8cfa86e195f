"""`ratchet serve`: the HTTP API, its live streams and the dashboard (needs the ``serve`` extra)."""
