"""The OAuth door (issue 33), in process through the real ASGI application: /mcp stays what
header clients know, /oauth/mcp answers without a token with the RFC 9728 challenge, the
metadata documents say what the door offers, and a person's consent becomes a token that
works at /oauth/mcp alone, as the agent they named, until revoked.

The attacks: a token at /mcp, the REST door and SSE; a key at /oauth/mcp; a resource other
than /oauth/mcp; PKCE missing or plain; a redirect URI not registered; a replayed code; a
code for another client; consent without a session or without CSRF; a revoked connection."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from oauth2_provider.models import AccessToken, Application, Grant

from config.asgi import application
from rooms.errors import ROOM_ACCESS_DENIED
from tenants import people, services
from tenants.models import Membership, OAuthConnection
from tenants.oauth import connection_revoke

pytestmark = pytest.mark.store

HOST = "http://testserver"
RESOURCE = f"{HOST}/oauth/mcp"
REDIRECT = "http://127.0.0.1:45123/callback"
PASSWORD = "correct-horse-battery-staple"
HOOK_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / "claude-code"


@pytest.fixture(autouse=True)
def _database(transactional_db: None) -> None:
    """The door reaches the database from its worker threads."""


async def _request(method: str, path: str, **kwargs: Any) -> httpx.Response:
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url=HOST) as client:
        return await client.request(method, path, **kwargs)


def request(method: str, path: str, **kwargs: Any) -> httpx.Response:
    return async_to_sync(_request)(method, path, **kwargs)


def rpc(path: str, token: str | None, method: str, params: dict[str, Any]) -> httpx.Response:
    headers = {"content-type": "application/json", "accept": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return request("POST", path, headers=headers, content=json.dumps(body))


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def client_app(name: str = "Test client") -> Application:
    """A public client, as a client ID metadata document or a registration makes one."""
    return Application.objects.create(
        name=name,
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=REDIRECT,
        client_secret="",
    )


def signed_in(email: str = "ann@example.com") -> tuple[Client, Any]:
    user = people.user_signup(email=email, password=PASSWORD)
    browser = Client()
    assert browser.login(username=email, password=PASSWORD)
    return browser, user


def authorize_query(app: Application, challenge: str, **extra: str) -> str:
    query = {
        "response_type": "code",
        "client_id": app.client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-1",
        "scope": "mcp",
        "resource": RESOURCE,
        **extra,
    }
    return "/oauth/authorize/?" + urlencode(query)


def consent(
    browser: Client, app: Application, challenge: str, team_id: int, **choices: Any
) -> dict[str, list[str]]:
    """The person opens the consent page and connects; the redirect's query."""
    page = browser.get(authorize_query(app, challenge))
    assert page.status_code == 200, page.content[:500]
    form = page.context["form"]
    data = {f.name: f.value() or "" for f in form.hidden_fields()}
    data.update(
        {"team": str(team_id), "agent_name": "chat-agent", "allow": "1", "tools_profile": ""}
    )
    data.update({k: v for k, v in choices.items() if v is not None})
    answer = browser.post("/oauth/authorize/", data)
    assert answer.status_code == 302, answer.content[:800]
    location = urlsplit(answer["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT
    return parse_qs(location.query)


def token_exchange(app: Application, code: str, verifier: str, **extra: str) -> httpx.Response:
    body = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": app.client_id,
        "code_verifier": verifier,
        "resource": RESOURCE,
        **extra,
    }
    return request("POST", "/oauth/token/", data=body)


def connected(team_id: int | None = None, **choices: Any) -> tuple[str, Application, Any]:
    """A person's client connected through the whole flow: (access token, client, person)."""
    browser, user = signed_in()
    team = Membership.objects.get(user=user).team
    app = client_app()
    verifier, challenge = pkce()
    query = consent(browser, app, challenge, team_id or team.pk, **choices)
    answer = token_exchange(app, query["code"][0], verifier)
    assert answer.status_code == 200, answer.text
    return answer.json()["access_token"], app, user


# --- Two doors, one room ------------------------------------------------------------------------


def test_the_key_door_advertises_no_oauth_anywhere() -> None:
    refused = rpc("/mcp", None, "tools/list", {})
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == 'Bearer realm="roomservice"'
    for path in (
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ):
        assert request("GET", path).status_code == 404, path


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_the_oauth_door_challenges_without_a_token(method: str) -> None:
    answer = request(method, "/oauth/mcp", headers={"accept": "application/json"})
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{HOST}/.well-known/oauth-protected-resource/oauth/mcp", '
        'scope="mcp"'
    )
    assert "resource_metadata" in answer.json()["error"]["message"]


def test_the_metadata_names_the_door_and_its_issuer() -> None:
    resource = request("GET", "/.well-known/oauth-protected-resource/oauth/mcp").json()
    assert resource["resource"] == RESOURCE
    assert resource["authorization_servers"] == [f"{HOST}/oauth"]
    issuer = request("GET", "/.well-known/oauth-authorization-server/oauth").json()
    assert issuer["issuer"] == f"{HOST}/oauth"
    assert issuer["response_types_supported"] == ["code"]
    assert issuer["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert issuer["code_challenge_methods_supported"] == ["S256"]
    assert issuer["authorization_response_iss_parameter_supported"] is True
    assert issuer["client_id_metadata_document_supported"] is True
    assert issuer["authorization_endpoint"] == f"{HOST}/oauth/authorize/"
    assert issuer["token_endpoint"] == f"{HOST}/oauth/token/"
    assert issuer["revocation_endpoint"] == f"{HOST}/oauth/revoke_token/"
    assert issuer["token_endpoint_auth_methods_supported"] == ["none"]
    assert "registration_endpoint" not in issuer


def test_registration_is_offered_only_when_set(settings: Any) -> None:
    from oauth2_provider.settings import oauth2_settings

    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "DCR_ENABLED": True}
    oauth2_settings.reload()
    try:
        issuer = request("GET", "/.well-known/oauth-authorization-server/oauth").json()
        assert issuer["registration_endpoint"] == f"{HOST}/oauth/register/"
    finally:
        settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "DCR_ENABLED": False}
        oauth2_settings.reload()


# --- Consent, the token, the door --------------------------------------------------------------


def test_a_consent_becomes_a_token_for_the_oauth_door_alone() -> None:
    token, app, user = connected()
    connection = OAuthConnection.objects.get(user=user, application=app)
    assert connection.agent_name == "chat-agent"
    stored = AccessToken.objects.get(user=user)
    assert stored.token == ""  # kept only as its SHA-256
    assert stored.resource == [RESOURCE]

    listed = rpc("/oauth/mcp", token, "tools/list", {})
    assert listed.status_code == 200, listed.text
    names = [t["name"] for t in listed.json()["result"]["tools"]]
    assert "add_task" in names and "wait_for_events" in names
    room = services.room_create(team=connection.team, room_id="oauth-room", actor="test").room_id
    called = rpc(
        "/oauth/mcp",
        token,
        "tools/call",
        {"name": "add_task", "arguments": {"roomId": room, "title": "From a chat"}},
    )
    assert called.status_code == 200, called.text
    assert not called.json()["result"].get("isError"), called.text

    # The same token is no key: every other door refuses it.
    assert rpc("/mcp", token, "tools/list", {}).status_code == 401
    auth = {"authorization": f"Bearer {token}"}
    assert (
        request("POST", f"/api/v1/rooms/{room}/tools/read_plan", headers=auth, json={}).status_code
        == 401
    )
    assert request("GET", "/api/v1/me", headers=auth).status_code == 401
    assert request("GET", f"/api/v1/rooms/{room}/events/stream", headers=auth).status_code == 401
    # The hook door answers a token as it answers any unknown bearer: it cannot act.
    hook = json.loads((HOOK_FIXTURES / "PreToolUse-Edit.json").read_text())
    hook.update(session_id="s-1", cwd="/home/ann/checkout")
    told = request(
        "POST", f"/api/v1/rooms/{room}/hooks/claude-code", headers=auth, json=hook
    ).json()
    assert "ROOMSERVICE_KEY" in json.dumps(told), told


def test_a_key_is_refused_at_the_oauth_door() -> None:
    _, user = signed_in()
    team = Membership.objects.get(user=user).team
    key = services.api_key_create(team=team, name="k").secret
    answer = rpc("/oauth/mcp", key, "tools/list", {})
    assert answer.status_code == 401
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]
    assert rpc("/mcp", key, "tools/list", {}).status_code == 200


def test_a_revoked_connection_is_refused_on_the_next_call() -> None:
    token, app, user = connected()
    assert rpc("/oauth/mcp", token, "tools/list", {}).status_code == 200
    connection_revoke(OAuthConnection.objects.get(user=user, application=app))
    assert rpc("/oauth/mcp", token, "tools/list", {}).status_code == 401


def test_connecting_again_replaces_the_consent_and_ends_the_old_tokens() -> None:
    first, app, user = connected()
    browser = Client()
    browser.force_login(user)
    verifier, challenge = pkce()
    team = Membership.objects.get(user=user).team
    query = consent(browser, app, challenge, team.pk, agent_name="second-name")
    second = token_exchange(app, query["code"][0], verifier).json()["access_token"]
    assert rpc("/oauth/mcp", first, "tools/list", {}).status_code == 401
    assert rpc("/oauth/mcp", second, "tools/list", {}).status_code == 200
    assert OAuthConnection.objects.get(user=user, application=app).agent_name == "second-name"


# --- Attacks ------------------------------------------------------------------------------------


def test_a_resource_other_than_the_door_is_invalid_target() -> None:
    browser, _ = signed_in()
    app = client_app()
    _, challenge = pkce()
    page = browser.get(authorize_query(app, challenge, resource="https://elsewhere.example/mcp"))
    assert page.status_code == 302
    told = parse_qs(urlsplit(page["Location"]).query)
    assert told["error"] == ["invalid_target"]
    assert told["state"] == ["st-1"]


def test_a_token_request_for_another_resource_is_refused_and_the_code_survives() -> None:
    browser, user = signed_in()
    team = Membership.objects.get(user=user).team
    app = client_app()
    verifier, challenge = pkce()
    code = consent(browser, app, challenge, team.pk)["code"][0]
    wrong = token_exchange(app, code, verifier, resource="https://elsewhere.example/mcp")
    assert wrong.status_code == 400
    assert wrong.json()["error"] == "invalid_target"
    assert token_exchange(app, code, verifier).status_code == 200


@pytest.mark.parametrize("method", [None, "plain"])
def test_pkce_other_than_s256_is_refused_before_consent(method: str | None) -> None:
    browser, _ = signed_in()
    app = client_app()
    verifier, challenge = pkce()
    query = {
        "response_type": "code",
        "client_id": app.client_id,
        "redirect_uri": REDIRECT,
        "state": "st-1",
        "code_challenge": verifier if method == "plain" else challenge,
    }
    if method is not None:
        query["code_challenge_method"] = method
    page = browser.get("/oauth/authorize/?" + urlencode(query))
    assert page.status_code == 302
    told = parse_qs(urlsplit(page["Location"]).query)
    assert told["error"] == ["invalid_request"]
    assert not OAuthConnection.objects.exists()


def test_a_wrong_verifier_gets_no_token() -> None:
    browser, user = signed_in()
    team = Membership.objects.get(user=user).team
    app = client_app()
    _, challenge = pkce()
    code = consent(browser, app, challenge, team.pk)["code"][0]
    other_verifier, _ = pkce()
    answer = token_exchange(app, code, other_verifier)
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_grant"


def test_a_redirect_uri_not_registered_exactly_is_refused_on_the_page() -> None:
    browser, _ = signed_in()
    app = client_app()
    _, challenge = pkce()
    for redirect in ("https://attacker.example/cb", REDIRECT + "/more", "http://127.0.0.1.evil/cb"):
        page = browser.get(authorize_query(app, challenge, redirect_uri=redirect))
        # Never sent to an unregistered address: the error is shown here.
        assert page.status_code == 400, redirect
        assert "Location" not in page


def test_a_replayed_code_and_a_code_for_another_client_are_refused() -> None:
    browser, user = signed_in()
    team = Membership.objects.get(user=user).team
    app, other = client_app(), client_app("Other")
    verifier, challenge = pkce()
    code = consent(browser, app, challenge, team.pk)["code"][0]
    stolen = request(
        "POST",
        "/oauth/token/",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": other.client_id,
            "code_verifier": verifier,
        },
    )
    assert stolen.status_code == 400
    assert token_exchange(app, code, verifier).status_code == 200
    replayed = token_exchange(app, code, verifier)
    assert replayed.status_code == 400
    assert replayed.json()["error"] == "invalid_grant"


def test_consent_needs_a_session_and_csrf() -> None:
    app = client_app()
    _, challenge = pkce()
    anonymous = Client()
    page = anonymous.get(authorize_query(app, challenge))
    assert page.status_code == 302 and page["Location"].startswith("/login")
    browser, user = signed_in()
    forged = Client(enforce_csrf_checks=True)
    forged.force_login(user)
    team = Membership.objects.get(user=user).team
    answer = forged.post(
        "/oauth/authorize/",
        {
            "client_id": app.client_id,
            "redirect_uri": REDIRECT,
            "response_type": "code",
            "scope": "mcp",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "team": str(team.pk),
            "agent_name": "forged",
            "allow": "1",
        },
    )
    assert answer.status_code == 403
    assert not OAuthConnection.objects.exists()
    # The page itself may not be framed.
    shown = browser.get(authorize_query(app, challenge))
    assert shown["X-Frame-Options"] == "DENY"


def test_consent_to_a_team_one_is_not_in_is_refused() -> None:
    browser, _ = signed_in()
    stranger = people.user_signup(email="bob@example.com", password=PASSWORD)
    their_team = Membership.objects.get(user=stranger).team
    app = client_app()
    _, challenge = pkce()
    page = browser.get(authorize_query(app, challenge))
    data = {f.name: f.value() or "" for f in page.context["form"].hidden_fields()}
    data.update({"team": str(their_team.pk), "agent_name": "x", "allow": "1"})
    answer = browser.post("/oauth/authorize/", data)
    assert answer.status_code == 200  # the form again, with the error
    assert not OAuthConnection.objects.exists()


def test_cancel_tells_the_client_access_denied() -> None:
    browser, _ = signed_in()
    app = client_app()
    _, challenge = pkce()
    page = browser.get(authorize_query(app, challenge))
    data = {f.name: f.value() or "" for f in page.context["form"].hidden_fields()}
    answer = browser.post("/oauth/authorize/", data)
    assert answer.status_code == 302
    told = parse_qs(urlsplit(answer["Location"]).query)
    assert told["error"] == ["access_denied"]
    assert not OAuthConnection.objects.exists()


def test_the_consent_page_may_send_its_form_to_the_clients_registered_redirect_only() -> None:
    """A browser holds a form's redirect to the page's form-action too: the page names the
    one registered redirect URI's origin beside its own, and nothing else."""
    browser, _ = signed_in()
    app = client_app()
    _, challenge = pkce()
    page = browser.get(authorize_query(app, challenge))
    policy = page["Content-Security-Policy"]
    assert "form-action 'self' http://127.0.0.1:45123;" in policy + ";", policy
    assert policy.count("form-action") == 1
    other = browser.get("/account")
    assert "127.0.0.1:45123" not in other["Content-Security-Policy"]


def test_behind_a_proxy_the_metadata_and_the_challenge_name_the_public_address(
    settings: Any,
) -> None:
    """Behind a TLS proxy that keeps the Host and says the scheme (Caddy, as deployed), the
    door, its metadata and the issuer all name https://<host>/...: a client compares them."""
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proxied = {"host": "rooms.example.com", "x-forwarded-proto": "https"}
    public = "https://rooms.example.com"
    resource = request(
        "GET", "/.well-known/oauth-protected-resource/oauth/mcp", headers=proxied
    ).json()
    assert resource["resource"] == f"{public}/oauth/mcp"
    assert resource["authorization_servers"] == [f"{public}/oauth"]
    issuer = request("GET", "/.well-known/oauth-authorization-server/oauth", headers=proxied)
    assert issuer.json()["issuer"] == f"{public}/oauth"
    assert issuer.json()["token_endpoint"] == f"{public}/oauth/token/"
    door = request("POST", "/oauth/mcp", headers={**proxied, "accept": "application/json"})
    assert door.headers["www-authenticate"].startswith(
        f'Bearer resource_metadata="{public}/.well-known/oauth-protected-resource/oauth/mcp"'
    )


def test_with_public_url_the_issuer_and_resource_are_fixed() -> None:
    from tests.test_production import settings_of

    shown = settings_of(
        {"PUBLIC_URL": "https://rooms.example.com/"},
        "s.OAUTH2_PROVIDER['OIDC_ISS_ENDPOINT'], "
        "s.OAUTH2_PROVIDER['OAUTH2_PROTECTED_RESOURCE_IDENTIFIER']",
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == [
        "https://rooms.example.com/oauth",
        "https://rooms.example.com/oauth/mcp",
    ]


def test_an_authorization_code_is_kept_only_as_its_digest() -> None:
    browser, user = signed_in()
    team = Membership.objects.get(user=user).team
    app = client_app()
    verifier, challenge = pkce()
    code = consent(browser, app, challenge, team.pk)["code"][0]
    kept = Grant.objects.get(application=app).code
    assert kept == hashlib.sha256(code.encode()).hexdigest() != code
    assert token_exchange(app, code, verifier).status_code == 200
    assert not Grant.objects.exists()  # used once, gone


def test_the_oauth_door_serves_the_same_tools_and_profiles_as_the_key_door() -> None:
    token, _, user = connected()
    key = services.api_key_create(team=Membership.objects.get(user=user).team, name="k").secret
    for query in ("", "?tools=core", "?tools=roomd"):
        by_token = rpc(f"/oauth/mcp{query}", token, "tools/list", {}).json()["result"]["tools"]
        by_key = rpc(f"/mcp{query}", key, "tools/list", {}).json()["result"]["tools"]
        assert by_token == by_key, query


def test_a_token_reaches_its_own_team_only() -> None:
    """Cross-team: a connection to ann's team, a room of bob's team; the refusal is the one
    every credential gets for a room not its own, and bob's room is untouched."""
    token, _, _ = connected()
    bob = people.user_signup(email="bob@example.com", password=PASSWORD)
    theirs = services.room_create(
        team=Membership.objects.get(user=bob).team, room_id="bobs-room", actor="test"
    ).room_id
    for tool, arguments in (
        ("read_plan", {"roomId": theirs}),
        ("add_task", {"roomId": theirs, "title": "planted"}),
    ):
        answer = rpc("/oauth/mcp", token, "tools/call", {"name": tool, "arguments": arguments})
        assert answer.json()["result"]["isError"] is True, tool
        assert answer.json()["result"]["content"][0]["text"] == ROOM_ACCESS_DENIED, tool
    rooms = rpc("/oauth/mcp", token, "tools/call", {"name": "list_rooms", "arguments": {}})
    assert "bobs-room" not in rooms.text
