"""`SqlStore`: what the SQLite and PostgreSQL stores share, a transaction over a driver.

A SQL store says how it gets a connection for a transaction (`_connect`) and
how it gives it back (`_disconnect`); beginning, committing, rolling back and
the operations themselves (`SqlOps`) are the same for both.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

from .base import StateStore
from .driver import Driver
from .sql import SqlOps

__all__ = ["SqlStore"]


class SqlStore(StateStore):
    """A store whose operations are `SqlOps` over a `Driver`."""

    @abc.abstractmethod
    async def _connect(self) -> Driver:
        """Return a driver on a connection this transaction may use alone."""

    async def _disconnect(self, driver: Driver) -> None:
        """Give back the connection of a transaction that ended (a pool takes it back)."""

    async def _begin(self, *, write: bool) -> _SqlTransaction:
        driver = await self._connect()
        try:
            await driver.begin(write=write)
        except BaseException:
            await self._disconnect(driver)
            raise
        return _SqlTransaction(self, driver, SqlOps(driver))


@dataclass(slots=True)
class _SqlTransaction:
    store: SqlStore
    driver: Driver
    ops: SqlOps

    @property
    def touched(self) -> set[str]:
        return self.ops.touched

    async def end(self, *, commit: bool) -> None:
        try:
            if commit:
                await self.driver.commit()
            else:
                await self.driver.rollback()
        finally:
            await self.store._disconnect(self.driver)
