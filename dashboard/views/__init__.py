"""The operators' pages, one module per page family; dashboard/urls.py names each view by
its module. Function views, thin: resolve the viewer, call one service or selector, render.
Every room, key, invite and share link is fetched through a scoped selector, so another
team's URL is a 404.

accounts  landing, sign-up, sign-in, the first run's link, sign-out, the account
team      members and roles, joining, switching team, acting for agents, keys, audit
rooms     the room list, a room's live page, actions, status, events, a task, a context
          entry, export and report
connect   the Connect page and its hook script, invites (guest agents)
shares    share links and the read-only page a link opens
webhooks  a room's webhooks and their deliveries
common    what they share: the public URL, the viewer's room, its RoomRef, an expiry
"""
