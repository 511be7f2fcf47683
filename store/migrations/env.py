"""Alembic environment: the engine comes from the caller (store.migrate)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from pagetrail.store.models import Base

config = context.config
engine = config.attributes.get("engine")
if engine is None:  # plain `alembic` CLI use: the URL from the environment (the store
    # reads no engine settings; the default database's path is the engine's to know)
    import os

    url = os.environ.get("PAGETRAIL_DATABASE_URL")
    if not url:
        raise SystemExit("set PAGETRAIL_DATABASE_URL, or run `pagetrail db upgrade`")
    engine = create_engine(url)

with engine.begin() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    context.run_migrations()
