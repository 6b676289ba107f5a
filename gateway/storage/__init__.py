"""Persistence: ORM tables, migrations, and repositories returning frozen records."""
