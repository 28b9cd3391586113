"""Conventions observed over every call the run made, so they run last."""

from __future__ import annotations

from conformance.kit import Ctx, check, expect


@check("object results are also the structuredContent (judged over every call)", source="ours")
async def structured_content(ctx: Ctx) -> str:
    """docs/protocol.md: where the result is an object, the same object is the structuredContent,
    so a client that reads structured output sees what the text says (roomd answers text
    only, which MCP allows)."""
    seen = ctx.conn_a.tally.unstructured
    for how in ("missing", "differs"):
        tools = sorted(tool for tool, said in seen.items() if said == how)
        expect(not tools, f"structuredContent {how} (vs the JSON text) from: " + ", ".join(tools))
    return f"{len(ctx.conn_a.tally.called)} tools seen"
