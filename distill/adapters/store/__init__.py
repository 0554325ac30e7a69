"""Stores: implementations of `distill.ports.Store`.

The SQL of each backend lives in `sql/`: `<backend>_queries.sql` (named queries, the same
names for every backend) and `<backend>_<NNNN>_<what>.sql` (migrations, applied in order).
"""

from distill.adapters.store.sqlite import SqliteStore

__all__ = ["SqliteStore"]
