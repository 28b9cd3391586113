"""`manage.py signin_link [--email E]`: a fresh one-time sign-in link, without a restart."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants import firstrun

NO_OPERATOR = (
    "There is no first-run operator here (`make run` makes one on a local run): name an "
    "account with --email, or make one with `manage.py create_admin --email ...`."
)
NO_ACCOUNT = "No active account {email!r}: make one with `manage.py create_admin --email {email}`."


class Command(BaseCommand):
    help = (
        "Print a one-time link that signs in the first run's operator (the demo team), or the "
        "account of --email. It works once, for PASSWORD_RESET_TIMEOUT seconds (3 days)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", default=None, help="the account to sign in")
        parser.add_argument(
            "--base-url", default=None, help="the service's URL (default: PUBLIC_URL or :8000)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        email = options["email"]
        if email is None:
            user = firstrun.operator_get()
            if user is None:
                raise CommandError(NO_OPERATOR)
        else:
            email = email.strip().lower()
            user = User.objects.filter(username=email, is_active=True).first()
            if user is None:
                raise CommandError(NO_ACCOUNT.format(email=email))
        base = (options["base_url"] or firstrun.link_base()).rstrip("/")
        days = settings.PASSWORD_RESET_TIMEOUT // 86400
        self.stdout.write(f"Sign in as {user.username} (works once, for {days} days):")
        self.stdout.write(f"  {base}{firstrun.sign_in_path(user)}")
