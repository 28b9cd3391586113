"""Celery: webhook deliveries and the periodic sweeps, and the background processes
(worker, scheduler, relay) whose heartbeats /health asks for."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_str
from config.settings.redis import REDIS_CLUSTER, REDIS_URL
from config.settings.rooms import CLAIM_SWEEP_SECONDS, ROOM_ARCHIVE_SWEEP_SECONDS

# Default: the same Redis (a unix socket URL becomes Celery's redis+socket form).
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or (
    "redis+socket://" + REDIS_URL[len("unix://") :]
    if REDIS_URL.startswith("unix://")
    else REDIS_URL
)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
if REDIS_CLUSTER and not env_str("CELERY_BROKER_URL") and not CELERY_TASK_ALWAYS_EAGER:
    raise ImproperlyConfigured(
        "REDIS_CLUSTER=true: Celery cannot use a Redis Cluster as its broker. Set "
        "CELERY_BROKER_URL to a plain Redis or RabbitMQ (webhook deliveries and the periodic "
        "clean-ups run there), or CELERY_TASK_ALWAYS_EAGER=true to run them in the web process."
    )
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    # Claims whose lease ran out go back to pending (rooms.services.claims_sweep).
    "claims-sweep": {"task": "claims.sweep", "schedule": float(CLAIM_SWEEP_SECONDS)},
    # Idle rooms move to Postgres before Redis would drop them (tenants.archives).
    "archives-sweep": {"task": "archives.sweep", "schedule": float(ROOM_ARCHIVE_SWEEP_SECONDS)},
    # Redis clean-ups of deleted rows that could not run at the time (tenants.purges).
    "purges-retry": {"task": "purges.retry", "schedule": 60.0},
    # Webhook deliveries owed (deferred, or a worker died holding them), and old records.
    "webhooks-resume": {"task": "webhooks.resume", "schedule": 60.0},
    "webhooks-prune": {"task": "webhooks.prune", "schedule": 3600.0},
}
# Beat's scheduler writes its heartbeat as it ticks (config/celery.py).
CELERY_BEAT_SCHEDULER = "config.celery:Scheduler"
# How often the worker, the scheduler and the relay write their heartbeat; /health calls
# one stale after three of these (and gives a web process that long after its start).
PROCESS_HEARTBEAT_SECONDS = env_int("PROCESS_HEARTBEAT_SECONDS", 10)
if PROCESS_HEARTBEAT_SECONDS < 1:
    raise ImproperlyConfigured("PROCESS_HEARTBEAT_SECONDS must be at least 1")
# The background processes /health requires (not checked while Celery runs eager); empty
# for none, e.g. a deployment that delivers no webhooks and runs no relay.
HEALTH_PROCESSES = env_list("HEALTH_PROCESSES", "worker,scheduler,relay")
if set(HEALTH_PROCESSES) - {"worker", "scheduler", "relay"}:
    raise ImproperlyConfigured(
        "HEALTH_PROCESSES: a comma-separated subset of worker,scheduler,relay"
    )
