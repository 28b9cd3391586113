from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Teams and access"

    def ready(self) -> None:
        from tenants.purges import receivers_connect

        receivers_connect()
