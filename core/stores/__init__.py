"""The three stores: SQLite (records), Chroma (vectors), Kùzu (graph)."""
