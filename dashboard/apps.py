from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The operators' pages (server-rendered, htmx); they arrive with the dashboard issue."""

    name = "dashboard"
    verbose_name = "Operator dashboard"
