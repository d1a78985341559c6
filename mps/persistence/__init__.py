"""Storage: one `Database` interface, two real backends (SQLite via aiosqlite, Postgres via
asyncpg), versioned SQL migrations, and the read queries handlers use.

Writes reach a database only through the persistence actor (mps.actors.persistence), which groups
them into transactions; reads go straight to the backend's read connections.
"""
