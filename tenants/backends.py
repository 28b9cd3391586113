"""The one password check of the service: the dashboard's sign-in and the Django admin's
both go through `authenticate()`, so both are throttled alike (tenants/people.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User

from tenants import people

if TYPE_CHECKING:  # a request is only read here; tenants/ imports no HTTP at run time
    from django.http import HttpRequest


def client_address(request: HttpRequest | None) -> str:
    """The client's address as the ASGI server saw it: behind a proxy listed in
    FORWARDED_ALLOW_IPS, uvicorn has already put the forwarded client there."""
    if request is None:
        return "unknown"
    return str(request.META.get("REMOTE_ADDR") or "unknown")


class ThrottledModelBackend(ModelBackend):
    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        account = str(username or kwargs.get("email") or "")
        address = client_address(request)
        wait = people.login_wait(account=account, address=address)
        if wait > 0:
            if request is not None:
                request.login_wait = wait  # type: ignore[attr-defined]  # read by the sign-in page
            return None
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            people.login_failure_record(account=account, address=address)
        else:
            people.login_success_record(account=account, address=address)
        return user
