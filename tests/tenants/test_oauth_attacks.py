"""The OAuth door under attack (issue 33), each attack beside the legitimate path it imitates:
a client ID metadata document inside the network, a flood of registrations and registrations
for grants or secrets the door does not offer, a replayed refresh token, tokens that outlived
their person, their team or their time, tokens for another audience, and error redirects that
do not name the issuer (RFC 9207)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from oauth2_provider import cimd
from oauth2_provider.models import AccessToken, Application

from config.asgi import application
from rooms import clock
from tenants import people, services
from tenants.auth import _oauth_lookup, caller_recheck
from tenants.capabilities import Caller
from tenants.credentials import secret_digest
from tenants.models import AuditEvent, Membership, OAuthConnection
from tests.clock import clock_at
from tests.tenants.test_oauth import (
    HOST,
    REDIRECT,
    RESOURCE,
    authorize_query,
    client_app,
    consent,
    pkce,
    request,
    rpc,
    signed_in,
    token_exchange,
)

pytestmark = pytest.mark.store

ISSUER = f"{HOST}/oauth"
CHALLENGE = (
    f'Bearer resource_metadata="{HOST}/.well-known/oauth-protected-resource/oauth/mcp", '
    'scope="mcp", error="invalid_token"'
)


@pytest.fixture(autouse=True)
def _database(transactional_db: None) -> None:
    """The door reaches the database from its worker threads."""


def flow(email: str = "ann@example.com") -> tuple[dict[str, Any], Application, Any]:
    """A person's client connected through the whole flow: (the token answer, client, person)."""
    browser, user = signed_in(email)
    team = Membership.objects.get(user=user).team
    app = client_app()
    verifier, challenge = pkce()
    code = consent(browser, app, challenge, team.pk)["code"][0]
    answer = token_exchange(app, code, verifier)
    assert answer.status_code == 200, answer.text[:300]
    return answer.json(), app, user


def refresh(app: Application, refresh_token: str) -> httpx.Response:
    body = {
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": app.client_id,
        "resource": RESOURCE,
    }
    return request("POST", "/oauth/token/", data=body)


def refused(token: str) -> None:
    answer = rpc("/oauth/mcp", token, "tools/list", {})
    assert answer.status_code == 401, answer.text[:300]
    assert answer.headers["www-authenticate"] == CHALLENGE


def works(token: str) -> None:
    answer = rpc("/oauth/mcp", token, "tools/list", {})
    assert answer.status_code == 200, answer.text[:300]


# --- Client ID metadata documents inside the network ---------------------------------------------


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP port on this machine nothing else uses: a connection to it waits in the backlog,
    so `contacted` tells whether anything tried to fetch from it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def contacted(server: socket.socket) -> bool:
    try:
        connection, _ = server.accept()
    except BlockingIOError:
        return False
    connection.close()
    return True


def cimd_authorize(browser: Client, client_id: str) -> Any:
    _, challenge = pkce()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": "https://attacker.example/cb",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-1",
        "resource": RESOURCE,
    }
    return browser.get("/oauth/authorize/?" + urlencode(query))


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "10.0.0.1", "169.254.169.254", "[::1]:{port}"]
)
def test_a_metadata_document_inside_the_network_is_never_fetched(
    host: str, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    client_id = f"https://{host.format(port=port)}/client.json"
    browser, _ = signed_in()
    page = cimd_authorize(browser, client_id)
    # An unknown client: the error is shown here, never sent to the attacker's address.
    assert page.status_code == 400
    assert "Location" not in page
    token = request(
        "POST",
        "/oauth/token/",
        data={"grant_type": "authorization_code", "code": "x", "client_id": client_id},
    )
    assert token.status_code in (400, 401)
    assert not contacted(listener)
    assert not Application.objects.exists()


def test_the_listener_would_see_a_fetch_the_address_check_did_not_stop(
    listener: socket.socket, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """The test above proves something: with the toolkit's address check off, the same
    request reaches the port (and fails on it, as nothing answers TLS there)."""
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "CIMD_FETCH_TIMEOUT_SECONDS": 1}
    monkeypatch.setattr(cimd, "_ip_is_public", lambda ip: True)
    browser, _ = signed_in()
    page = cimd_authorize(browser, f"https://127.0.0.1:{listener.getsockname()[1]}/control.json")
    assert page.status_code == 400
    assert contacted(listener)
    assert not Application.objects.exists()


def test_a_metadata_document_on_the_internet_makes_a_public_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client_id = "https://chat.example/oauth/client.json"
    document = {
        "client_id": client_id,
        "client_name": "Chat",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
    }
    fetched: list[str] = []

    def fetch(self: Any, url: str) -> tuple[dict[str, Any], int]:
        fetched.append(url)
        return document, 300

    monkeypatch.setattr(cimd.SafeMetadataFetcher, "fetch", fetch)
    browser, user = signed_in()
    team = Membership.objects.get(user=user).team
    verifier, challenge = pkce()
    code = consent(browser, Application(client_id=client_id), challenge, team.pk)["code"][0]
    assert fetched == [client_id]
    made = Application.objects.get(client_id=client_id)
    assert (made.client_type, made.registration_source) == ("public", "cimd")
    answer = token_exchange(made, code, verifier)
    assert answer.status_code == 200, answer.text[:300]
    works(answer.json()["access_token"])


# --- Dynamic registration -----------------------------------------------------------------------


@pytest.fixture
def registration(settings: Any) -> None:
    """Registration on (the settings fixture reloads the toolkit's settings both ways), three
    clients per address per hour."""
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "DCR_ENABLED": True}
    settings.OAUTH_REGISTRATIONS_PER_ADDRESS_PER_HOUR = 3


def register(address: str, **metadata: Any) -> httpx.Response:
    """A registration from `address`: a public authorization-code client unless `metadata`
    says otherwise (None: the field left out, so the toolkit's default applies)."""
    body = {
        "client_name": "CLI",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    body = {k: v for k, v in body.items() if v is not None}

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=application, client=(address, 40000))
        async with httpx.AsyncClient(transport=transport, base_url=HOST) as client:
            return await client.post("/oauth/register/", json=body)

    return async_to_sync(send)()


def test_a_flood_of_registrations_stops_at_the_limit_of_its_address(registration: None) -> None:
    answers = [register("203.0.113.7") for _ in range(5)]
    for over in answers[3:]:
        assert over.status_code == 401
        assert over.json() == {
            "error": "access_denied",
            "error_description": "Authentication required to register a client",
        }
    assert Application.objects.count() == 3
    assert register("203.0.113.8").status_code != 401
    assert Application.objects.count() == 4


def test_a_flood_from_many_addresses_is_bounded_in_the_database(
    registration: None, settings: Any
) -> None:
    """Past OAUTH_REGISTRATIONS_UNUSED_MAX registrations nobody connected, more are refused
    whatever their address; those unused past OAUTH_REGISTRATION_UNUSED_SECONDS go, and make
    room; a connected client never counts and never goes."""
    settings.OAUTH_REGISTRATIONS_UNUSED_MAX = 4
    tokens, connected_app, _ = flow()
    connected_app.registration_source = Application.RegistrationSource.DCR
    connected_app.save()
    answers = [register(f"198.51.100.{n}") for n in range(6)]
    assert [a.status_code for a in answers] == [201] * 4 + [401] * 2
    assert Application.objects.filter(registration_source="dcr").count() == 5
    later = clock.now() + timedelta(seconds=settings.OAUTH_REGISTRATION_UNUSED_SECONDS + 1)
    with clock_at(later):
        assert register("198.51.100.77").status_code == 201
    # The four unused went; the connected one and the new one stay.
    kept = Application.objects.filter(registration_source="dcr")
    assert kept.count() == 2 and connected_app in kept
    assert rpc("/oauth/mcp", tokens["access_token"], "tools/list", {}).status_code == 200


def test_a_registration_under_the_limit_is_answered(registration: None) -> None:
    assert register("203.0.113.11").status_code == 201


def test_a_registration_is_a_public_client_that_connects(registration: None) -> None:
    answer = register("203.0.113.9")
    assert answer.status_code == 201, answer.text
    made = answer.json()
    assert "client_secret" not in made
    assert made["grant_types"] == ["authorization_code", "refresh_token"]
    assert made["token_endpoint_auth_method"] == "none"
    app = Application.objects.get(client_id=made["client_id"])
    assert (app.client_type, app.authorization_grant_type) == ("public", "authorization-code")
    # Its registration access token is no token for the door.
    refused(made["registration_access_token"])

    browser, user = signed_in()
    team = Membership.objects.get(user=user).team
    verifier, challenge = pkce()
    code = consent(browser, app, challenge, team.pk)["code"][0]
    tokens = token_exchange(app, code, verifier)
    assert tokens.status_code == 200, tokens.text
    works(tokens.json()["access_token"])


REFUSED = [
    {"grant_types": ["client_credentials"]},
    {"grant_types": ["password"]},
    {"grant_types": ["implicit"]},
    {"grant_types": ["urn:ietf:params:oauth:grant-type:device_code"]},
    {"token_endpoint_auth_method": "client_secret_basic"},
    {"token_endpoint_auth_method": "client_secret_post"},
    {"token_endpoint_auth_method": None},  # left out: the toolkit makes it confidential
]


@pytest.mark.parametrize(
    ("metadata", "address"), [(m, f"203.0.113.{20 + i}") for i, m in enumerate(REFUSED)]
)
def test_a_registration_for_another_grant_or_a_secret_is_refused(
    registration: None, metadata: dict[str, Any], address: str
) -> None:
    answer = register(address, **metadata)
    assert not Application.objects.exists()
    assert answer.status_code == 401, answer.text
    assert "client_secret" not in answer.text


# --- Refresh tokens rotate, and a replay ends the family ---------------------------------------


def test_a_refresh_rotates_both_tokens() -> None:
    first, app, _ = flow()
    answer = refresh(app, first["refresh_token"])
    assert answer.status_code == 200, answer.text
    second = answer.json()
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"]
    works(second["access_token"])
    refused(first["access_token"])


def test_a_replayed_refresh_token_ends_the_family() -> None:
    first, app, user = flow()
    second = refresh(app, first["refresh_token"]).json()
    replayed = refresh(app, first["refresh_token"])
    assert replayed.status_code == 400
    assert replayed.json()["error"] == "invalid_grant"
    # Someone else held the old refresh token: what it was rotated into ends too.
    assert not AccessToken.objects.filter(user=user).exists()
    assert refresh(app, second["refresh_token"]).status_code == 400
    refused(second["access_token"])


def test_the_door_forgets_rotated_and_revoked_tokens_at_once() -> None:
    first, app, _ = flow()
    works(first["access_token"])
    second = refresh(app, first["refresh_token"]).json()
    refused(first["access_token"])
    works(second["access_token"])
    assert refresh(app, first["refresh_token"]).status_code == 400
    refused(second["access_token"])


def test_a_refresh_for_another_resource_is_refused_and_the_token_survives() -> None:
    first, app, _ = flow()
    body = {
        "grant_type": "refresh_token",
        "refresh_token": first["refresh_token"],
        "client_id": app.client_id,
        "resource": "https://elsewhere.example/oauth/mcp",
    }
    wrong = request("POST", "/oauth/token/", data=body)
    assert wrong.status_code == 400
    assert wrong.json()["error"] == "invalid_target"
    assert refresh(app, first["refresh_token"]).status_code == 200


@pytest.mark.parametrize("used_first", [False, True])
def test_a_token_the_client_revoked_is_refused(used_first: bool) -> None:
    tokens, app, _ = flow()
    if used_first:
        works(tokens["access_token"])
    body = {"token": tokens["access_token"], "client_id": app.client_id}
    assert request("POST", "/oauth/revoke_token/", data=body).status_code == 200
    refused(tokens["access_token"])


# --- Tokens that outlived their time, their team or their person -------------------------------


def test_an_expired_access_token_is_refused() -> None:
    never_used, _, ann = flow()
    AccessToken.objects.filter(user=ann).update(expires=clock.now() - timedelta(seconds=1))
    refused(never_used["access_token"])

    used, _, bob = flow("bob@example.com")
    works(used["access_token"])  # now remembered by the door
    expires = AccessToken.objects.get(user=bob).expires
    with clock_at(expires + timedelta(seconds=1)):
        refused(used["access_token"])


USED_FIRST = [False, True]


@pytest.mark.parametrize("used_first", USED_FIRST)
def test_a_token_of_someone_who_left_the_team_is_refused(used_first: bool) -> None:
    tokens, _, user = flow()
    if used_first:
        works(tokens["access_token"])
    Membership.objects.filter(user=user).delete()
    refused(tokens["access_token"])


@pytest.mark.parametrize("used_first", USED_FIRST)
def test_a_token_of_a_deactivated_person_is_refused(used_first: bool) -> None:
    tokens, _, user = flow()
    if used_first:
        works(tokens["access_token"])
    user.is_active = False
    user.save()
    refused(tokens["access_token"])


# --- Tokens for another audience ---------------------------------------------------------------


@pytest.mark.parametrize(
    "audience",
    [
        ["https://elsewhere.example/oauth/mcp"],
        [f"{HOST}/"],
        [f"{HOST}/oauth"],
        [RESOURCE, "https://elsewhere.example/oauth/mcp"],
        [],
    ],
)
def test_a_token_for_another_audience_is_refused(audience: list[str]) -> None:
    tokens, _, user = flow()
    AccessToken.objects.filter(user=user).update(resource=audience)
    refused(tokens["access_token"])


# --- The issuer on error redirects (RFC 9207) --------------------------------------------------


def told(location: str) -> dict[str, list[str]]:
    parts = urlsplit(location)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == REDIRECT
    return parse_qs(parts.query)


def test_a_cancel_names_the_issuer() -> None:
    browser, _ = signed_in()
    app = client_app()
    _, challenge = pkce()
    page = browser.get(authorize_query(app, challenge))
    data = {f.name: f.value() or "" for f in page.context["form"].hidden_fields()}
    answer = browser.post("/oauth/authorize/", data)
    assert answer.status_code == 302
    query = told(answer["Location"])
    assert query["error"] == ["access_denied"]
    assert query["iss"] == [ISSUER]


def test_an_invalid_target_names_the_issuer() -> None:
    browser, _ = signed_in()
    app = client_app()
    _, challenge = pkce()
    page = browser.get(authorize_query(app, challenge, resource="https://elsewhere.example/mcp"))
    assert page.status_code == 302
    query = told(page["Location"])
    assert query["error"] == ["invalid_target"]
    assert query["iss"] == [ISSUER]
    assert query["state"] == ["st-1"]


def test_a_code_names_the_issuer_once() -> None:
    browser, user = signed_in()
    team = Membership.objects.get(user=user).team
    _, challenge = pkce()
    query = consent(browser, client_app(), challenge, team.pk)
    assert query["iss"] == [ISSUER]


def test_a_person_deleted_with_their_team_takes_their_clients_with_them() -> None:
    """The team, its memberships, the connection and its tokens go in one deletion (the
    receivers that end a departing member's clients run inside the team's cascade)."""
    tokens, _, user = flow()
    token = tokens["access_token"]
    assert rpc("/oauth/mcp", token, "tools/list", {}).status_code == 200
    assert people.user_delete(user=user)
    assert not OAuthConnection.objects.exists()
    assert not AccessToken.objects.exists()
    assert rpc("/oauth/mcp", token, "tools/list", {}).status_code == 401


# --- What a review found ------------------------------------------------------------------------


def test_a_token_never_acts_under_a_later_consent() -> None:
    """A consent to one room ends with its room (the connection cascades); connecting the
    same client again to every room must not revive the old tokens under the new consent."""
    browser, user = signed_in()
    team = Membership.objects.get(user=user).team
    room = services.room_create(team=team, room_id="narrow-room", actor="test")
    app = client_app()
    verifier, challenge = pkce()
    code = consent(browser, app, challenge, team.pk, room="narrow-room")["code"][0]
    old = token_exchange(app, code, verifier).json()
    works(old["access_token"])
    room.delete()
    assert not OAuthConnection.objects.exists()
    verifier, challenge = pkce()
    code = consent(browser, app, challenge, team.pk)["code"][0]
    works(token_exchange(app, code, verifier).json()["access_token"])
    assert rpc("/oauth/mcp", old["access_token"], "tools/list", {}).status_code == 401
    assert refresh(app, old["refresh_token"]).status_code == 400


def oauth_caller(token: str) -> Caller | None:
    """The caller the OAuth door would admit for `token` (the key doors' lookup refuses it)."""
    return _oauth_lookup(secret_digest(token), clock.now())


def test_connecting_again_ends_the_live_uses_of_the_old_consent() -> None:
    """A waiting call holds the caller it began with: consenting again (say, read-only) or
    the client revoking its token makes the re-check that every live use runs say no."""
    tokens, app, user = flow()
    caller = oauth_caller(tokens["access_token"])
    assert caller is not None and caller_recheck(caller)
    browser = Client()
    browser.force_login(user)
    verifier, challenge = pkce()
    team = Membership.objects.get(user=user).team
    code = consent(browser, app, challenge, team.pk, read_only="on")["code"][0]
    fresh = token_exchange(app, code, verifier).json()["access_token"]
    assert not caller_recheck(caller)
    again = oauth_caller(fresh)
    assert again is not None and again.write is False and caller_recheck(again)
    revoked = request(
        "POST", "/oauth/revoke_token/", data={"token": fresh, "client_id": app.client_id}
    )
    assert revoked.status_code == 200
    assert not caller_recheck(again)


def test_an_agent_name_of_a_person_is_refused_at_consent() -> None:
    browser, user = signed_in()
    team = Membership.objects.get(user=user).team
    app = client_app()
    _, challenge = pkce()
    page = browser.get(authorize_query(app, challenge))
    data = {f.name: f.value() or "" for f in page.context["form"].hidden_fields()}
    data.update({"team": str(team.pk), "agent_name": "person:ann@example.com", "allow": "1"})
    answer = browser.post("/oauth/authorize/", data)
    assert answer.status_code == 200
    assert answer.context["form"].errors["agent_name"]
    assert not OAuthConnection.objects.exists()


def test_a_forged_redirect_leaves_the_earlier_consent_as_it_was() -> None:
    """The toolkit refuses to make a code for a redirect URI the client did not register;
    the consent saved in the same step is undone, and no connect is recorded."""
    tokens, app, user = flow()
    browser = Client()
    browser.force_login(user)
    _, challenge = pkce()
    page = browser.get(authorize_query(app, challenge))
    data = {f.name: f.value() or "" for f in page.context["form"].hidden_fields()}
    team = Membership.objects.get(user=user).team
    data.update(
        {"team": str(team.pk), "agent_name": "x", "allow": "1", "redirect_uri": "https://evil/"}
    )
    connects = AuditEvent.objects.filter(action="oauth.connect").count()
    answer = browser.post("/oauth/authorize/", data)
    assert answer.status_code in (400, 302)
    assert "evil" not in answer.get("Location", "")
    assert OAuthConnection.objects.get(user=user).agent_name == "chat-agent"
    assert AuditEvent.objects.filter(action="oauth.connect").count() == connects
    works(tokens["access_token"])


def test_bad_input_gets_an_answer_not_a_500() -> None:
    browser, user = signed_in()
    team = Membership.objects.get(user=user).team
    app = client_app()
    _, challenge = pkce()
    page = browser.get(authorize_query(app, challenge))
    data = {f.name: f.value() or "" for f in page.context["form"].hidden_fields()}
    data.update({"team": str(team.pk), "agent_name": "x", "allow": "1", "client_id": "nobody"})
    assert browser.post("/oauth/authorize/", data).status_code < 500
    for client_id in ("nul\x00id", "é" * 300, "https://" + "a" * 300):
        answer = request(
            "POST",
            "/oauth/token/",
            data={"grant_type": "authorization_code", "code": "x", "client_id": client_id},
        )
        assert 400 <= answer.status_code < 500, (client_id[:20], answer.status_code)
    # A NUL anywhere (Postgres refuses it in text): the page, revocation, a percent-encoded one.
    page = browser.get(authorize_query(Application(client_id="nul\x00id"), challenge))
    assert page.status_code == 400
    revoked = request("POST", "/oauth/revoke_token/", data={"token": "t", "client_id": "a\x00"})
    assert revoked.status_code == 400
    encoded = request(
        "POST",
        "/oauth/token/",
        content="grant_type=authorization_code&code=x&client_id=a%00b",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert encoded.status_code == 400


def test_a_deeply_nested_registration_is_refused_not_a_500(registration: None) -> None:
    nested = "[" * 100_000 + "]" * 100_000
    answer = request(
        "POST",
        "/oauth/register/",
        content=nested,
        headers={"content-type": "application/json"},
    )
    assert 400 <= answer.status_code < 500


@pytest.mark.parametrize("redirect", ["http://evil.example/cb", "ftp://127.0.0.1/cb"])
def test_a_registration_must_send_its_codes_over_https_or_to_loopback(
    registration: None, redirect: str
) -> None:
    assert register("203.0.113.20", redirect_uris=[redirect]).status_code == 401
    assert register("203.0.113.20", redirect_uris=["https://ok.example/cb"]).status_code == 201
    assert Application.objects.count() == 1


def test_metadata_documents_are_bounded_and_sent_codes_safely(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """A client ID metadata document is a registration nobody signed: within the same
    per-address limit (each new document from an address counts), and its redirect URIs
    follow the same rule."""
    settings.OAUTH_REGISTRATIONS_PER_ADDRESS_PER_HOUR = 2
    documents = {
        f"https://c{n}.example/client.json": {
            "client_id": f"https://c{n}.example/client.json",
            "client_name": f"C{n}",
            "redirect_uris": ["http://evil.example/cb" if n == 9 else REDIRECT],
        }
        for n in (1, 2, 3, 9)
    }
    monkeypatch.setattr(cimd.SafeMetadataFetcher, "fetch", lambda self, url: (documents[url], 300))
    browser, _ = signed_in()
    _, challenge = pkce()

    def authorize(client_id: str, address: str, redirect: str = REDIRECT) -> int:
        query = authorize_query(Application(client_id=client_id), challenge, redirect_uri=redirect)
        return int(browser.get(query, REMOTE_ADDR=address).status_code)

    assert authorize("https://c9.example/client.json", "192.0.2.9", "http://evil.example/cb") == 400
    assert not Application.objects.exists()
    assert authorize("https://c1.example/client.json", "192.0.2.1") == 200
    assert authorize("https://c1.example/client.json", "192.0.2.1") == 200  # known: no count
    assert authorize("https://c2.example/client.json", "192.0.2.1") == 200
    assert authorize("https://c3.example/client.json", "192.0.2.1") == 400  # past two
    assert authorize("https://c3.example/client.json", "192.0.2.3") == 200  # another address
    assert set(Application.objects.values_list("client_id", flat=True)) == {
        f"https://c{n}.example/client.json" for n in (1, 2, 3)
    }


def test_the_door_reads_the_forwarded_scheme_as_django_does(settings: Any) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    for said, scheme in (("https, http", "https"), (" https ", "https"), ("http", "http")):
        door = request(
            "POST",
            "/oauth/mcp",
            headers={"x-forwarded-proto": said, "host": "rooms.example", "accept": "*/*"},
        )
        expected = f'resource_metadata="{scheme}://rooms.example/.well-known/'
        assert expected in door.headers["www-authenticate"], said


def test_the_consent_page_says_where_the_permission_goes() -> None:
    browser, _ = signed_in()
    _, challenge = pkce()
    page = browser.get(authorize_query(client_app(), challenge))
    assert b'<code id="redirect-host">127.0.0.1:45123</code>' in page.content
    assert b"registered itself" in page.content
