FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml ./
COPY config ./config
COPY rooms ./rooms
COPY tenants ./tenants
COPY dashboard ./dashboard
COPY mcp_gateway ./mcp_gateway
RUN pip install --no-cache-dir .
COPY . .
RUN python manage.py collectstatic --noinput || true
EXPOSE 8000
CMD ["uvicorn", "config.asgi:application", "--host", "0.0.0.0", "--port", "8000"]
