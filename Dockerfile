# The service's image: its own packages only (no test tools), run as an unprivileged user.
FROM python:3.11.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 STATIC_ROOT=/app/staticfiles
WORKDIR /app
COPY pyproject.toml ./
COPY config ./config
COPY rooms ./rooms
COPY tenants ./tenants
COPY calls ./calls
COPY dashboard ./dashboard
COPY mcp_gateway ./mcp_gateway
RUN pip install --no-cache-dir .
COPY . .
# (A SECRET_KEY of its own: without one, settings would make and keep one in the image.)
RUN SECRET_KEY=collectstatic-only-not-a-secret-0123456789 python manage.py collectstatic --noinput \
    && groupadd --gid 10001 roomservice \
    && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin roomservice
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health')"
# X-Forwarded-* believed only from the proxies named in FORWARDED_ALLOW_IPS (uvicorn reads
# it; unset: loopback alone), never from any peer: docker-compose.yml names Caddy's address.
CMD ["uvicorn", "config.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--proxy-headers", \
     "--timeout-graceful-shutdown", "10"]
