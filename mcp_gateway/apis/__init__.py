"""The REST API under /api/v1/ (DRF), bearer-authenticated like /mcp: one module per
resource; mcp_gateway/urls.py names each view by its module.

Thin doors: each view parses input, resolves the caller (BearerAuthentication), calls one
service or selector, and formats the result. Errors are `DomainError`s mapped by
`base.exception_handler` to `{message, code, extra}` with their status.

base      bearer authentication, the error mapping, BearerView, the documented errors
teams     /me (who this bearer is) and a new team with its first key
keys      the team's keys
rooms     rooms: create, list, archive, restore, delete, export, import, GET /room/<id>
invites   a room's invites
webhooks  a room's webhooks and their deliveries
"""
