from django.apps import AppConfig


class CallsConfig(AppConfig):
    name = "calls"
    verbose_name = "Tool calls and hooks"
