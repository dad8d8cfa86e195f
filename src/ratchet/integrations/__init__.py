"""Bridges to other agent frameworks: each imports Ratchet, and nothing of Ratchet imports them."""
