from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tenants import people, services
from tenants.models import Membership, Team

PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(autouse=True)
def _database(transactional_db: None) -> None:
    """Pages reach the database from the access check's worker threads too."""


@dataclass
class Person:
    user: User
    team: Team
    client: Client


def person(email: str) -> Person:
    user = people.user_signup(email=email, password=PASSWORD)
    team = Membership.objects.get(user=user).team
    client = Client()
    assert client.login(username=email, password=PASSWORD)
    return Person(user=user, team=team, client=client)


@pytest.fixture
def ann() -> Person:
    return person("ann@example.com")


@pytest.fixture
def bob() -> Person:
    return person("bob@example.com")


__all__ = ["PASSWORD", "Person", "person", "services"]
