#!/usr/bin/env bash
# room.sh — call a Roomservice tool over plain HTTP.
#   room.sh <tool> ['<json arguments>']     e.g. room.sh read_plan
#   room.sh tools                           list the tools
# Needs: ROOMSERVICE_URL, ROOMSERVICE_KEY, ROOM (curl; jq is optional, for pretty output).
set -euo pipefail

: "${ROOMSERVICE_URL:?set ROOMSERVICE_URL, e.g. http://127.0.0.1:8000}"
: "${ROOMSERVICE_KEY:?set ROOMSERVICE_KEY (a team key or an invite)}"

tool="${1:?usage: room.sh <tool> [json arguments] | room.sh tools}"
args="${2:-{\}}"

pretty() { if command -v jq >/dev/null 2>&1; then jq .; else cat; echo; fi; }

if [ "$tool" = "tools" ]; then
  curl -fsS "$ROOMSERVICE_URL/api/v1/schema/?format=json" \
    | grep -o '"operationId": *"tool_[a-z_]*"' | sed 's/.*"tool_\(.*\)"/\1/' | sort -u
  exit 0
fi

if [ "$tool" = "list_rooms" ] || [ "$tool" = "list_templates" ]; then
  url="$ROOMSERVICE_URL/api/v1/tools/$tool"
else
  : "${ROOM:?set ROOM to the room id}"
  url="$ROOMSERVICE_URL/api/v1/rooms/$ROOM/tools/$tool"
fi

response=$(mktemp)
trap 'rm -f "$response"' EXIT
status=$(curl -sS -o "$response" -w '%{http_code}' -X POST "$url" \
  -H "Authorization: Bearer $ROOMSERVICE_KEY" \
  -H "Content-Type: application/json" \
  --data "$args")
pretty < "$response"
case "$status" in
  2??) exit 0 ;;
  *) echo "room.sh: HTTP $status" >&2; exit 1 ;;
esac
