"""The package exports exactly its curated public names."""

import ratchet


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(ratchet).items()
        if not name.startswith("_") and not isinstance(value, type(ratchet))
    }
    assert public == set(ratchet.__all__) - {"__version__"}


def test_every_exported_name_resolves() -> None:
    for name in ratchet.__all__:
        assert getattr(ratchet, name) is not None
