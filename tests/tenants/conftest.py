from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _database(transactional_db: None) -> None:
    """Tenancy tests reach the database from the access check's worker threads too."""
