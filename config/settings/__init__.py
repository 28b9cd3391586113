"""Every knob of Roomservice, one module per concern, each read from the environment with a
safe default through config/env.py. DJANGO_SETTINGS_MODULE=config.settings is all of them.

With nothing set, the service runs on SQLite and the embedded Redis that
`config.embedded_redis` starts (the `serve` command and the test suite start it and export
REDIS_URL before Django reads these modules). A configuration that would be unsafe or
contradictory refuses to start (ImproperlyConfigured). The suite's are tests/settings.py.
"""

# isort: off
# In this order (not sorted): a bad configuration is refused in the order read here.
from config.settings.base import *  # noqa: F403
from config.settings.security import *  # noqa: F403
from config.settings.database import *  # noqa: F403
from config.settings.people import *  # noqa: F403
from config.settings.redis import *  # noqa: F403
from config.settings.rooms import *  # noqa: F403
from config.settings.quotas import *  # noqa: F403
from config.settings.access import *  # noqa: F403
from config.settings.oauth import *  # noqa: F403
from config.settings.jobs import *  # noqa: F403
from config.settings.webhooks import *  # noqa: F403
from config.settings.telemetry import *  # noqa: F403
# isort: on
