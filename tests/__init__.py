"""Ratchet's test suites.

Helper modules (tests/helpers, the crash harness, each suite's support module)
have their asserts rewritten like the tests', so a failed check in a helper
says what it compared.
"""

import pytest

pytest.register_assert_rewrite(
    "tests.agent",
    "tests.chat",
    "tests.cli",
    "tests.crash",
    "tests.engine",
    "tests.failover",
    "tests.helpers",
    "tests.providers",
    "tests.serve",
    "tests.store",
    "tests.unit",
)
