"""Hostile tests: each plays an attacker against real programs, stores and servers."""
