"""The SQL stores: every operation written once over a small driver, each dialect beside its SQL.

`SqlOps` (ops.py) writes every store operation once, in terms of a `Driver`
(driver.py) that runs the named queries of its dialect's catalogue
(catalogue.py); the operations declared apart on the interface (store/ops/)
are written in the module of the same name here. Records become rows in one
place (rows.py), an operation's large input is stored once (content.py), and
`SqlTransaction` (transaction.py) is an open transaction of either dialect.

A dialect is a package of its Python beside its SQL: sqlite/ and
postgresql/, each with its store and driver (store.py), how it gets a
database ready (schema.py), its named queries (queries.sql), its whole
schema (schema.sql) and its numbered migrations (migrations/).
"""
