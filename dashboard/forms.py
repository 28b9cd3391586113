"""Forms of the dashboard: each validates one action's input, nothing more."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from oauth2_provider.forms import AllowForm

from rooms import names, profiles
from rooms.schemas import ROOM_ID_RULE, room_id_valid
from tenants import firstrun


def agent_name_clean(value: object) -> str:
    """An agent's name as rooms.names's rule has it (refused, never rewritten); "" for none.
    Binding to a person's name is refused by the service (tenants.services)."""
    name = str(value or "")
    refused = names.name_problem(name, "The agent name") if name else None
    if refused is not None:
        raise forms.ValidationError(refused.message)
    return name


# A credential's default tool profile (rooms.profiles): empty is every tool, as for every
# key made before profiles; the snippets the pages print choose core in their URL anyway.
TOOLS_PROFILE_CHOICES = [
    ("", "full — every tool (the default)"),
    *[
        (p, f"{p} — {len(profiles.TOOLS[p])} tools: {profiles.PURPOSES[p]}")
        for p in ("core", "roomd")
    ],
]
TOOLS_PROFILE_HELP = (
    "What its MCP connections see when their URL names no ?tools= (the URL always wins)."
)


def tools_profile_field() -> forms.ChoiceField:
    return forms.ChoiceField(
        choices=TOOLS_PROFILE_CHOICES,
        required=False,
        label="Tool profile",
        help_text=TOOLS_PROFILE_HELP,
    )


def tools_profile_clean(value: object) -> profiles.Profile | None:
    return profiles.profile_stored(str(value or ""))


CLAIM_DEMO_LABEL = "Claim the demo team (the room and key that make run printed)"


class SignupForm(forms.Form):
    email = forms.EmailField(max_length=200)
    password = forms.CharField(widget=forms.PasswordInput, min_length=10, strip=False)
    claim_demo = forms.BooleanField(required=False, initial=True, label=CLAIM_DEMO_LABEL)

    def __init__(self, *args: Any, offer_demo: bool = False, **kwargs: Any) -> None:
        """`offer_demo`: the demo team is to be had, and the page was opened with its claim
        token (tenants.firstrun); otherwise the field is not there, and a posted claim_demo
        is ignored."""
        super().__init__(*args, **kwargs)
        if not offer_demo:
            del self.fields["claim_demo"]

    def clean_email(self) -> str:
        email = str(self.cleaned_data["email"]).strip().lower()
        if firstrun.operator_reserved(email):
            raise forms.ValidationError(firstrun.OPERATOR_RESERVED)
        if User.objects.filter(username=email).exists():
            raise forms.ValidationError("An account with this email exists; sign in instead.")
        return email

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if data.get("password") and data.get("email"):
            validate_password(
                str(data["password"]), User(username=str(data["email"]), email=str(data["email"]))
            )
        return data


class LoginForm(forms.Form):
    email = forms.CharField(max_length=200)
    password = forms.CharField(widget=forms.PasswordInput, strip=False)


class KeyLoginForm(forms.Form):
    key = forms.CharField(max_length=200, label="Team key", widget=forms.PasswordInput)


class RoomForm(forms.Form):
    room_id = forms.CharField(
        max_length=64,
        required=False,
        label="Room id (optional)",
        help_text="Leave empty for an unguessable id. 2-64 of a-z, 0-9, '_' and '-'.",
    )
    name = forms.CharField(max_length=200, required=False)
    project = forms.CharField(
        max_length=100,
        required=False,
        label="Project (optional)",
        help_text="A new room of a project starts with its earlier rooms' decisions and contracts.",
    )

    def clean_room_id(self) -> str:
        value = str(self.cleaned_data.get("room_id") or "").strip()
        if value and not room_id_valid(value):
            raise forms.ValidationError(f"A room id is {ROOM_ID_RULE}.")
        return value


class CredentialForm(forms.Form):
    """What a key and an invite both take, after their own fields (`field_order`): the agent
    it is bound to, read-only, its tool profile."""

    agent_name = forms.CharField(max_length=128, required=False, label="Bind to agent (optional)")
    read_only = forms.BooleanField(required=False, label="Read-only")
    tools_profile = tools_profile_field()

    def clean_agent_name(self) -> str:
        return agent_name_clean(self.cleaned_data.get("agent_name"))

    def clean_tools_profile(self) -> profiles.Profile | None:
        return tools_profile_clean(self.cleaned_data.get("tools_profile"))


class KeyForm(CredentialForm):
    field_order = ["name"]
    name = forms.CharField(max_length=200)


EXPIRY_CHOICES = [
    ("", "never"),
    ("3600", "1 hour"),
    ("86400", "1 day"),
    ("604800", "7 days"),
    ("2592000", "30 days"),
]


class InviteForm(CredentialForm):
    field_order = ["label", "expires_in"]
    label = forms.CharField(max_length=200, required=False)
    expires_in = forms.ChoiceField(choices=EXPIRY_CHOICES, required=False, label="Expires after")


class ShareForm(forms.Form):
    label = forms.CharField(max_length=200, required=False)
    expires_in = forms.ChoiceField(choices=EXPIRY_CHOICES, required=False, label="Expires after")


class MemberInviteForm(forms.Form):
    email = forms.EmailField(max_length=200)
    role = forms.ChoiceField(choices=[("member", "member"), ("admin", "admin"), ("owner", "owner")])


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=[("member", "member"), ("admin", "admin"), ("owner", "owner")])


class PasswordChangeForm(forms.Form):
    current = forms.CharField(widget=forms.PasswordInput, strip=False, label="Current password")
    new = forms.CharField(
        widget=forms.PasswordInput, strip=False, label="New password", min_length=10
    )

    def __init__(self, *args: Any, has_password: bool = True, **kwargs: Any) -> None:
        """`has_password`: False for an account made without one (create_admin, the first
        run's operator), which signed in with a one-time link and sets its first here."""
        super().__init__(*args, **kwargs)
        if not has_password:
            del self.fields["current"]


class DeleteAccountForm(forms.Form):
    confirm = forms.CharField(label='Type "delete my account"')

    def clean_confirm(self) -> str:
        if self.cleaned_data["confirm"] != "delete my account":
            raise forms.ValidationError('Type exactly "delete my account".')
        return str(self.cleaned_data["confirm"])


class WebhookForm(forms.Form):
    url = forms.URLField(max_length=2000, label="Receiver URL", assume_scheme="https")
    agent_filter = forms.CharField(
        max_length=128, required=False, label="Only events for agent (optional)"
    )
    event_types = forms.CharField(
        max_length=1000,
        required=False,
        label="Only these event types (optional)",
        help_text="Comma-separated, e.g. task_updated, context_available. Empty: every type.",
    )

    def clean_agent_filter(self) -> str:
        return agent_name_clean(self.cleaned_data.get("agent_filter"))

    def clean_event_types(self) -> list[str]:
        raw = str(self.cleaned_data.get("event_types") or "")
        return [t.strip() for t in raw.split(",") if t.strip()][:50]


class ConsentForm(AllowForm, CredentialForm):  # type: ignore[misc]
    """The OAuth consent (dashboard.views.oauth): the toolkit's hidden request fields, then
    what the person decides: the team, one room or all, the agent the client acts as (a
    name is required: every act is someone's), read-only, the tools profile."""

    field_order = ["team", "room", "agent_name", "read_only", "tools_profile"]
    team = forms.ChoiceField(label="Team")
    room = forms.CharField(
        max_length=64, required=False, label="Only this room (optional)", help_text="Its id."
    )
    agent_name = forms.CharField(max_length=128, label="Act as agent")

    def __init__(self, *args: Any, teams: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].choices = teams  # type: ignore[attr-defined]
        # Cancel asks nothing: the client is told access_denied.
        self.allowing = not self.is_bound or bool(self.data.get("allow"))
        for name in ("team", "agent_name"):
            self.fields[name].required = self.allowing

    def clean_agent_name(self) -> str:
        name = agent_name_clean(self.cleaned_data.get("agent_name"))
        if self.allowing and not name:
            raise forms.ValidationError("Name the agent this client acts as.")
        return name
