"""Helpers shared by several test suites."""
