"""The record store's jobs written once for both SQL databases, SQLite and PostgreSQL.

Each job is a mixin over the primitives of :class:`~.dialect.SqlBase` (statements in
SQLite's SQL, under a scope); a store's connection gives them in its own database's SQL
(:class:`~.dialect.Dialect`). What is a store's own (its lexical index, PostgreSQL's vector
copies for HNSW) stays in its folder: :mod:`zep_core.stores.recordstore`, :mod:`zep_core.stores.postgres`.
"""
