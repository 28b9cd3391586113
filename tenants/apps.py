from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Teams and access"

    def ready(self) -> None:
        from config import telemetry
        from tenants.purges import receivers_connect
        from tenants.webhooks import WebhookQueue

        receivers_connect()
        telemetry.scraped_add(WebhookQueue())
