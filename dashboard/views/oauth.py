"""The OAuth consent page (/oauth/authorize/): a signed-in person lets one client act in
their team, as an agent they name (tenants.oauth). The toolkit validates the request and
issues the code; this page asks what only the person can answer, and refuses before asking
what the door never accepts (PKCE other than S256, a resource other than /oauth/mcp)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.db import transaction
from django.http import HttpRequest, HttpResponse
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.models import get_application_model
from oauth2_provider.oauth2_backends import _add_iss_to_redirect
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import AuthorizationView
from oauthlib.oauth2.rfc6749 import errors

from config.middleware import CSP
from dashboard import forms
from tenants import oauth
from tenants.models import Membership


class ConsentView(AuthorizationView):  # type: ignore[misc]
    template_name = "dashboard/oauth_consent.html"
    form_class = forms.ConsentForm

    def validate_authorization_request(self, request: HttpRequest) -> tuple[Any, Any]:
        """The toolkit's checks, then what this door never accepts, told to the client as
        any refused request is (before the page asks the person anything)."""
        scopes, credentials = super().validate_authorization_request(request)
        here = self._here()
        problem: errors.OAuth2Error | None = None
        if request.GET.get("code_challenge_method") != "S256":
            problem = errors.InvalidRequestError(
                description='PKCE with code_challenge_method "S256" is required.',
                state=credentials.get("state"),
            )
        elif not oauth.resources_exact(here, request.GET.getlist("resource")):
            problem = errors.CustomOAuth2Error(
                error="invalid_target",
                description=f"This server's only resource is {here}.",
                state=credentials.get("state"),
            )
        if problem is not None:
            raise OAuthToolkitError(error=problem, redirect_uri=credentials["redirect_uri"])
        return scopes, credentials

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # Every code comes from this page: a client cannot ask to skip it.
        forced = request.GET.copy()
        forced["approval_prompt"] = "force"
        request.GET = forced  # type: ignore[assignment]
        shown: HttpResponse = super().get(request, *args, **kwargs)
        return shown

    def get_form_kwargs(self) -> dict[str, Any]:
        kwargs = super().get_form_kwargs()
        kwargs["teams"] = [
            (str(m.team_id), m.team.name or m.team.slug)
            for m in Membership.objects.select_related("team").filter(user=self.request.user)
        ]
        return kwargs  # type: ignore[no-any-return]

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        form = context["form"]
        client_id = str(context.get("client_id") or form["client_id"].value() or "")
        context["client_id"] = client_id
        if "application" not in context:  # the form again, after a refusal
            model = get_application_model()
            context["application"] = model.objects.filter(client_id=client_id).first()
            context["scopes_descriptions"] = [oauth.SCOPE_TEXT]
        context["client_host"] = urlsplit(client_id).hostname if "://" in client_id else ""
        # Where the code goes, which the person should recognise (a name is only a claim).
        context["redirect_host"] = urlsplit(str(form["redirect_uri"].value() or "")).netloc
        return context  # type: ignore[no-any-return]

    def redirect(self, redirect_to: str, application: Any) -> HttpResponse:
        # Every answer sent back to the client names this server (RFC 9207 `iss`), errors
        # too, as the MCP authorization spec asks: the toolkit adds it to codes alone.
        issuer = oauth2_settings.oauth2_authorization_server_issuer(self.request)
        named = _add_iss_to_redirect(redirect_to, issuer)
        sent: HttpResponse = super().redirect(named, application)
        return sent

    def render_to_response(self, context: dict[str, Any], **kwargs: Any) -> HttpResponse:
        """The form's answer is a redirect to the client, and a browser holds a form's
        redirects to the page's form-action too (config.middleware allows only this site): the
        page allows the one redirect URI it was asked for, once the client is known to have
        registered it."""
        response: HttpResponse = super().render_to_response(context, **kwargs)
        application, form = context.get("application"), context.get("form")
        if application is None or form is None:
            return response
        uri = str(form["redirect_uri"].value() or "")
        target = urlsplit(uri)
        if re.fullmatch(r"[A-Za-z0-9.:\[\]-]+", target.netloc) and application.redirect_uri_allowed(
            uri
        ):
            to = f"form-action 'self' {target.scheme}://{target.netloc}"
            response["Content-Security-Policy"] = CSP.replace("form-action 'self'", to)
        return response

    def _here(self) -> str:
        return oauth.origin_of(self.request.scheme or "http", self.request.get_host()) + oauth.PATH

    def form_valid(self, form: forms.ConsentForm) -> HttpResponse:
        # The code is bound to this door whatever the (hidden, so forgeable) field says.
        here = self._here()
        if not oauth.resources_exact(here, form.cleaned_data["resource"].split()):
            form.add_error(None, f"This server's only resource is {here}.")
            wrong: HttpResponse = self.form_invalid(form)
            return wrong
        form.cleaned_data["resource"] = here
        data = form.cleaned_data
        application = get_application_model().objects.filter(client_id=data["client_id"]).first()
        if application is None:
            form.add_error(None, "This client is not known here: start again from the client.")
            unknown: HttpResponse = self.form_invalid(form)
            return unknown
        if not data.get("allow"):  # the toolkit tells the client access_denied
            told: HttpResponse = super().form_valid(form)
            return told
        # The consent and the code stand or fall together: a code the toolkit refuses to
        # make (a forged hidden field) leaves the earlier connection as it was.
        try:
            with transaction.atomic():
                oauth.connection_save(
                    user=self.request.user,
                    application=application,
                    team_id=int(data["team"]),
                    room_id=data["room"],
                    agent_name=data["agent_name"],
                    read_only=bool(data["read_only"]),
                    tools_profile=data["tools_profile"],
                )
                answered: HttpResponse = super().form_valid(form)
                if "code" not in parse_qs(urlsplit(answered.get("Location", "")).query):
                    raise _NoCode(answered)
        except oauth.ConnectionRefused as refused:
            form.add_error(refused.field, refused.message)
            again: HttpResponse = self.form_invalid(form)
            return again
        except _NoCode as failed:
            return failed.response
        return answered


class _NoCode(Exception):
    """The toolkit answered without a code: the consent saved with it is undone."""

    def __init__(self, response: HttpResponse) -> None:
        super().__init__("no code")
        self.response = response
