from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView
from oauth2_provider import views as oauth_views

from dashboard.views import oauth
from mcp_gateway import hooks, rest, sse
from mcp_gateway import oauth as mcp_oauth
from mcp_gateway.apis import rooms as room_apis

# The toolkit's own URL list would also mount its application-management pages (anyone
# signed in could register a client) and grants this door does not offer: only these.
oauth_patterns = [
    path("authorize/", mcp_oauth.nul_refused(oauth.ConsentView.as_view()), name="authorize"),
    path("token/", mcp_oauth.nul_refused(oauth_views.TokenView.as_view()), name="token"),
    path(
        "revoke_token/",
        mcp_oauth.nul_refused(oauth_views.RevokeTokenView.as_view()),
        name="revoke-token",
    ),
    path(
        "register/",
        mcp_oauth.nul_refused(oauth_views.DynamicClientRegistrationView.as_view()),
        name="dcr-register",
    ),
    path(
        "register/<str:client_id>/",
        mcp_oauth.registration_unmanaged,
        name="dcr-register-management",
    ),
    # What the toolkit reverses to name the issuer in `iss` (the same document).
    path(
        ".well-known/oauth-authorization-server",
        oauth_views.OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers and tools ask for /favicon.ico whatever the page links: the page's SVG icon.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/rooms/<str:room_id>/tools/<str:tool>", rest.tool_door, name="api-room-tool"),
    path("api/v1/tools/<str:tool>", rest.tool_door, name="api-tool"),
    path("api/v1/rooms/<str:room_id>/hooks/<str:client>", hooks.hook_door, name="api-room-hook"),
    path("api/v1/rooms/<str:room_id>/events/stream", sse.event_stream, name="api-room-stream"),
    path("api/v1/", include("mcp_gateway.urls")),
    path("room/<str:room_id>", room_apis.RoomSummaryApi.as_view(), name="room-summary"),
    # The OAuth door's authorization server (mcp_gateway.oauth): issuer <origin>/oauth, its
    # RFC 8414 metadata at the path-inserted location; /oauth/mcp itself is config.asgi's.
    path("oauth/", include((oauth_patterns, "oauth2_provider"))),
    path(
        ".well-known/oauth-authorization-server/oauth",
        oauth_views.OAuthServerMetadataView.as_view(),
        name="oauth-issuer-metadata",
    ),
    path(
        ".well-known/oauth-protected-resource/oauth/mcp",
        oauth_views.OAuthProtectedResourceMetadataView.as_view(),
        name="oauth-resource-metadata",
    ),
    path("", include("dashboard.urls")),
]
