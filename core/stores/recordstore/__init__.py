"""The SQLite record store, by job: the connection, and the rows each part of the memory reads and writes.

:class:`~zep_core.stores.records.RecordStore` is all of them over one connection.
"""
