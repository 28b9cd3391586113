from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from tenants import apis

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/", include("tenants.urls")),
    path("room/<str:room_id>", apis.RoomSummaryApi.as_view(), name="room-summary"),
    path("", include("dashboard.urls")),
]
