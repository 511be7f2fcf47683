"""Alembic environment: the engine comes from the caller (store.migrate)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from pagetrail.store.models import Base

config = context.config
engine = config.attributes.get("engine")
if engine is None:  # plain `alembic` CLI use: take the URL from settings
    from pagetrail.tools.settings import get_settings

    engine = create_engine(get_settings().database_url)

with engine.begin() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    context.run_migrations()
