from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from mcp_gateway import hooks, rest, sse
from mcp_gateway.apis import rooms as room_apis

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
    path("", include("dashboard.urls")),
]
