"""`manage.py create_admin --email E [--team SLUG]`: the first administrator, and how they
sign in (docs/operations.md "First administrator and sign-up")."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_email, validate_slug

from rooms.errors import DomainError
from tenants import firstrun, people


class Command(BaseCommand):
    help = (
        "Make (or reuse) the account of --email a Django superuser and an owner of a team "
        "(--team's, made if missing; else the first they own, else a new one of their own), "
        "and print a one-time sign-in link. Running it again changes nothing more."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", required=True)
        parser.add_argument("--team", default=None, help="slug of the team they own")
        parser.add_argument(
            "--base-url", default=None, help="the service's URL (default: PUBLIC_URL or :8000)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        email = str(options["email"]).strip().lower()
        try:
            validate_email(email)
        except ValidationError:
            raise CommandError(f"{options['email']!r} is not an email address.") from None
        team_slug = options["team"]
        if team_slug is not None:
            try:
                validate_slug(team_slug)
            except ValidationError:
                raise CommandError(
                    f"{team_slug!r} is not a team slug (letters, digits, '-' and '_')."
                ) from None
        try:
            admin = people.admin_ensure(email=email, team_slug=team_slug)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        base = (options["base_url"] or firstrun.link_base()).rstrip("/")
        days = settings.PASSWORD_RESET_TIMEOUT // 86400
        said = "Created" if admin.created else "Already there, kept"
        self.stdout.write(
            f"{said}: {admin.user.username}, superuser, owner of the team {admin.team.slug}."
        )
        self.stdout.write(f"Sign in once with this link (works once, for {days} days):")
        self.stdout.write(f"  {base}{firstrun.sign_in_path(admin.user)}")
        if not admin.user.has_usable_password():
            self.stdout.write(f"Then set a password on {base}/account.")
        self.stdout.write(f"The Django admin: {base}/admin/")
        self.stdout.write("Another link: python manage.py signin_link --email " + email)
