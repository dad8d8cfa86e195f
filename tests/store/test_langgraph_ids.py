"""LangGraph's ids as SQL stores keep them: a UUID in 16 bytes, any other id read back as written,
in the order of the text."""

from __future__ import annotations

import uuid

from ratchet.store.sql.langgraph_ids import id_key, id_text

IDS = [
    str(uuid.uuid4()),
    "1f1e7d13-180e-647c-8013-6e5e81230b49",
    "77d7d4cd-027b-9261-9a52-45d8cf3300bb",  # a task id: UUID-shaped, not of a known version
    "1F1E7D13-180E-647C-8013-6E5E81230B49",  # upper case: kept as text, to read back the same
    "",
    "1",
    "checkpoint-0001",
    "sixteen-chars-id",  # 16 bytes of text: not read back as a UUID
    "seventeen-chars-i",
    "an id with ünïcode",
]


def test_every_id_reads_back_as_written() -> None:
    for text in IDS:
        assert id_text(id_key(text)) == text
    assert len(id_key(IDS[1])) == 16
    assert len(id_key("sixteen-chars-id")) == 17


def test_ids_of_one_kind_sort_as_their_text() -> None:
    uuids = sorted(str(uuid.uuid4()) for _ in range(200))
    assert sorted(uuids, key=id_key) == uuids
    others = [
        "",
        "1",
        "10",
        "2",
        "checkpoint-0001",
        "checkpoint-0001-b",
        "sixteen-chars-id",
        "sixteen-chars-ie",
    ]
    assert sorted(others, key=id_key) == sorted(others)
