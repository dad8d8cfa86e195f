"""What every record is: a frozen pydantic model, strict about unknown fields, with a JSON round trip.

Changing a record makes a new one (``record.model_copy(update=...)``, or a
record's own transition helper, which enforces its status machine).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["NonEmpty", "Record", "utcnow"]


def utcnow() -> dt.datetime:
    """The current time, timezone-aware, in UTC."""
    return dt.datetime.now(dt.UTC)


class Record(BaseModel):
    """Base of every record: frozen, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        return cls.model_validate_json(text)


NonEmpty = Annotated[str, Field(min_length=1)]
