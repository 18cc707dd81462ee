"""Interop check: the official Python SDK client (mcp, pinned in
tools/py/requirements.txt) against examples/notes over Streamable HTTP,
sending `Authorization: Bearer` (an httpx2 client with the header, handed to
`streamable_http_client`). What the handler API promises a client, in the era
MODE negotiates:
  * the reader token's tools/list lacks the write tools, the writer's has them;
  * a bad argument to add_note is a result with isError: true whose text names
    the JSON pointer of the argument;
  * a good add_note answers structuredContent with the id, and the same value
    as JSON in a text block beside it.

Usage: python interop/py/notes.py URL MODE READER_TOKEN WRITER_TOKEN
  MODE: 2026-07-28 (adopt the modern revision), legacy (the 2025 handshake)
        or auto (probe server/discover, fall back to initialize)

Prints one `PASS py-notes[MODE] check` or `FAIL … check: reason` line per
check and exits non-zero if any failed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
from checks import Checks, describe
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

MODES = ("2026-07-28", "legacy", "auto")
WRITE_TOOLS = ["add_note", "delete_note"]


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


class Run(Checks):
    def __init__(self, url: str, mode: str) -> None:
        super().__init__(f"py-notes[{mode}]")
        self.url = url
        self.mode = mode

    @asynccontextmanager
    async def connect(self, token: str) -> AsyncIterator[Client]:
        """A client holding `token`, in the era MODE must reach."""
        # The SDK's own defaults: 30 s, and 300 s to read a response stream.
        timeout = httpx2.Timeout(30, read=300)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
            transport = streamable_http_client(self.url, http_client=http)
            async with Client(transport, mode=self.mode, read_timeout_seconds=20) as client:
                # auto must find the modern revision: the server offers it.
                want = "2025-" if self.mode == "legacy" else "2026-07-28"
                if not client.protocol_version.startswith(want):
                    raise RuntimeError(f"negotiated {client.protocol_version}, wanted {want}")
                yield client


async def main(url: str, mode: str, reader_token: str, writer_token: str) -> int:
    run = Run(url, mode)

    async def reader_list() -> str | None:
        async with run.connect(reader_token) as reader:
            names = [t.name for t in (await reader.list_tools()).tools]
        if "search_notes" not in names:
            return f"search_notes missing in {names}"
        listed = [n for n in WRITE_TOOLS if n in names]
        return f"listed {listed} to a reader: {names}" if listed else None

    await run.check("reader token tools/list lacks add_note and delete_note", reader_list)

    async def writer_checks() -> None:
        async with run.connect(writer_token) as writer:

            async def writer_list() -> str | None:
                names = [t.name for t in (await writer.list_tools()).tools]
                missing = [n for n in [*WRITE_TOOLS, "search_notes"] if n not in names]
                return f"missing {missing} in {names}" if missing else None

            await run.check("writer token tools/list has add_note and delete_note", writer_list)

            async def bad_argument() -> str | None:
                result = await writer.call_tool("add_note", {"text": 5})
                if not result.is_error:
                    return f"expected isError: true, got {result!r}"
                text = " ".join(texts(result))
                return None if "/text" in text else f"the text names no /text: {text!r}"

            await run.check("add_note with text a number is isError naming /text", bad_argument)

            async def structured() -> str | None:
                result = await writer.call_tool("add_note", {"text": "buy milk"})
                if result.is_error:
                    return f"isError: {texts(result)}"
                value = result.structured_content
                note_id = value.get("id") if isinstance(value, dict) else None
                if not isinstance(note_id, int) or value.get("uri") != f"notes://{note_id}":
                    return f"structuredContent is not {{id, uri: notes://id}}: {value!r}"
                parsed = []
                for text in texts(result):
                    try:
                        parsed.append(json.loads(text))
                    except ValueError:
                        continue
                return None if value in parsed else f"no text block holds {value!r}: {texts(result)}"

            await run.check("add_note answers structuredContent with the id, and its text block", structured)

    try:
        await writer_checks()
    except Exception as err:  # noqa: BLE001 - a failed connect or close is one more FAIL line
        run.failed += 1
        print(f"FAIL {run.tag} writer session: {describe(err)}", flush=True)
    return 0 if run.failed == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[2] not in MODES:
        print(f"usage: notes.py URL {'|'.join(MODES)} READER_TOKEN WRITER_TOKEN", file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(main(*sys.argv[1:])))
