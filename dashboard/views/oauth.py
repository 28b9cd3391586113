"""The OAuth consent page (/oauth/authorize/): a signed-in person lets one client act in
their team, as an agent they name (tenants.oauth). The toolkit validates the request and
issues the code; this page asks what only the person can answer, and refuses before asking
what the door never accepts (PKCE other than S256, a resource other than /oauth/mcp)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.models import get_application_model
from oauth2_provider.oauth2_backends import _add_iss_to_redirect
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import AuthorizationView
from oauthlib.oauth2.rfc6749 import errors

from config.middleware import CSP
from dashboard import forms
from tenants import oauth, selectors
from tenants.models import Membership


class ConsentView(AuthorizationView):  # type: ignore[misc]
    template_name = "dashboard/oauth_consent.html"
    form_class = forms.ConsentForm

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            _, credentials = self.validate_authorization_request(request)
        except OAuthToolkitError as error:
            refused: HttpResponse = self.error_response(error, application=None)
            return refused
        here = self._here()
        problem: errors.OAuth2Error | None = None
        if request.GET.get("code_challenge_method") != "S256":
            problem = errors.InvalidRequestError(
                description='PKCE with code_challenge_method "S256" is required.',
                state=credentials.get("state"),
            )
        elif any(not oauth.resource_exact(here, [r]) for r in request.GET.getlist("resource")):
            problem = errors.CustomOAuth2Error(
                error="invalid_target",
                description=f"This server's only resource is {here}.",
                state=credentials.get("state"),
            )
        if problem is not None:
            failed = OAuthToolkitError(error=problem, redirect_uri=credentials["redirect_uri"])
            told: HttpResponse = self.error_response(failed, application=None)
            return told
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
        if any(not oauth.resource_exact(here, [r]) for r in form.cleaned_data["resource"].split()):
            form.add_error(None, f"This server's only resource is {here}.")
            wrong: HttpResponse = self.form_invalid(form)
            return wrong
        form.cleaned_data["resource"] = here
        if form.cleaned_data.get("allow"):
            data = form.cleaned_data
            team_id = int(data["team"])
            room = None
            if data["room"]:
                room = selectors.rooms_of_team(team_id).filter(room_id=data["room"]).first()
                if room is None:
                    form.add_error("room", "That room is not one of the team's.")
                    again: HttpResponse = self.form_invalid(form)
                    return again
            application = get_application_model().objects.get(client_id=data["client_id"])
            found = (
                Membership.objects.select_related("team")
                .filter(user=self.request.user, team_id=team_id)
                .first()
            )
            if found is None:
                form.add_error("team", "You are not a member of that team.")
                outsider: HttpResponse = self.form_invalid(form)
                return outsider
            oauth.connection_save(
                user=self.request.user,
                application=application,
                team=found.team,
                room=room,
                agent_name=data["agent_name"],
                read_only=bool(data["read_only"]),
                tools_profile=data["tools_profile"],
            )
        answered: HttpResponse = super().form_valid(form)
        return answered
