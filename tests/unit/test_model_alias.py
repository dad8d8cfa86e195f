"""`ratchet.model`, the records' old home, still gives every record for one release (docs/architecture.md)."""

import ratchet.model
import ratchet.records


def test_the_old_module_gives_the_same_objects_as_the_records_package() -> None:
    assert ratchet.model.__all__ == ratchet.records.__all__
    assert {name: getattr(ratchet.model, name) for name in ratchet.model.__all__} == {
        name: getattr(ratchet.records, name) for name in ratchet.records.__all__
    }
