"""Interop check: the official Python SDK client (mcp, pinned in
tools/py/requirements.txt) against examples/everything, over Streamable HTTP
(a running server) or over stdio (the client launches `BINARY --stdio`).

Usage: python interop/py/client.py URL|stdio:BINARY MODE
  MODE: 2026-07-28 (adopt the modern revision), legacy (the 2025 handshake)
        or auto (probe server/discover, fall back to initialize)

Prints one `PASS py[MODE] check` (over stdio `py-stdio[MODE]`) or
`FAIL … check: reason` line per check and exits non-zero if any failed.
"""

from __future__ import annotations

import asyncio
import sys

import anyio

from checks import Checks, describe
from mcp import Client, StdioServerParameters, types
from mcp.client import advertise
from mcp.shared.subscriptions import ToolsListChanged

MODES = ("2026-07-28", "legacy", "auto")


class Run(Checks):
    def __init__(self, mode: str, stdio: bool) -> None:
        super().__init__(f"py-stdio[{mode}]" if stdio else f"py[{mode}]")


def first_text(content: list[types.ContentBlock] | None) -> str | None:
    for block in content or []:
        if isinstance(block, types.TextContent):
            return block.text
    return None


async def main(target: str, mode: str) -> int:
    binary = target.removeprefix("stdio:") if target.startswith("stdio:") else None
    run = Run(mode, binary is not None)
    # Over stdio the client launches the server; its stderr (the logs) is ours.
    server = target if binary is None else StdioServerParameters(command=binary, args=["--stdio"])
    via = "SSE" if binary is None else "stdio"
    elicited = 0

    # The MRTR round: the client fulfils the server's embedded elicitation/create
    # through this callback and retries with the answer and the echoed requestState.
    # A form with defaults is accepted as offered (test_elicitation_sep1034_defaults
    # offers `score: 95.5`); any other is answered with a name.
    async def on_elicit(_ctx: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        nonlocal elicited
        elicited += 1
        schema = getattr(params, "requested_schema", None) or {}
        fields = schema.get("properties", {}) if isinstance(schema, dict) else schema.properties
        defaults = {name: field["default"] for name, field in fields.items() if "default" in field}
        return types.ElicitResult(action="accept", content=defaults or {"name": "Alice"})

    sampled = 0

    # Sampling: over MRTR on 2026-07-28; for a 2025 client, a
    # sampling/createMessage request the server sends in the middle of the call.
    async def on_sample(_ctx: object, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        nonlocal sampled
        sampled += 1
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="py-sampled"), model="interop"
        )

    # Every notification the server sent outside a request (a 2025 client's
    # GET stream), by method, in arrival order.
    heard: list[str] = []
    heard_one = anyio.Event()

    async def on_message(message: object) -> None:
        nonlocal heard_one
        method = getattr(getattr(message, "root", message), "method", None)
        if isinstance(method, str) and method.endswith("/list_changed"):
            heard.append(method)
            heard_one.set()

    client = Client(
        server,
        mode=mode,
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        message_handler=on_message,
        read_timeout_seconds=20,
    )
    try:
        async with client:
            version = client.protocol_version
            modern = version == "2026-07-28"

            async def negotiated() -> str | None:
                # auto must find the modern revision: the server offers it.
                want = "2026-07-28" if mode != "legacy" else "2025-"
                return None if version.startswith(want) else f"negotiated {version}, wanted {want}"

            await run.check("connect", negotiated)

            async def list_tools() -> str | None:
                names = [t.name for t in (await client.list_tools()).tools]
                want = ["test_simple_text", "test_error_handling", "test_input_required_result_elicitation"]
                missing = [n for n in want if n not in names]
                return f"missing {missing} in {names}" if missing else None

            await run.check("tools/list", list_tools)

            async def call_simple() -> str | None:
                result = await client.call_tool("test_simple_text", {})
                text = first_text(result.content)
                if result.is_error:
                    return f"isError: {text}"
                return None if text else f"no text content in {result!r}"

            await run.check("tools/call test_simple_text", call_simple)

            async def call_error() -> str | None:
                result = await client.call_tool("test_error_handling", {})
                return None if result.is_error else f"expected isError: true, got {result!r}"

            await run.check("tools/call test_error_handling (isError)", call_error)

            async def read_resource() -> str | None:
                result = await client.read_resource("test://static-text")
                texts = [c.text for c in result.contents if isinstance(c, types.TextResourceContents)]
                return None if texts and texts[0] else f"no text contents in {result!r}"

            await run.check("resources/read test://static-text", read_resource)

            async def get_prompt() -> str | None:
                result = await client.get_prompt("test_prompt_with_arguments", {"arg1": "alpha", "arg2": "beta"})
                dumped = result.model_dump_json()
                return None if "alpha" in dumped and "beta" in dumped else f"arguments not in {dumped}"

            await run.check("prompts/get test_prompt_with_arguments", get_prompt)

            async def progress() -> str | None:
                seen: list[float] = []

                async def on_progress(value: float, _total: float | None, _message: str | None) -> None:
                    seen.append(value)

                result = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
                if result.is_error:
                    return f"isError: {first_text(result.content)}"
                return None if seen == [0, 50, 100] else f"progress seen: {seen}, wanted [0, 50, 100]"

            await run.check(f"progress over {via} (tools/call test_tool_with_progress)", progress)

            if modern:

                async def mrtr() -> str | None:
                    before = elicited
                    result = await client.call_tool("test_input_required_result_elicitation", {})
                    if elicited == before:
                        return "the elicitation callback was never asked"
                    text = first_text(result.content)
                    if result.is_error:
                        return f"isError: {text}"
                    return None if text else f"no text content after the round: {result!r}"

                await run.check("MRTR round (elicitation) tools/call test_input_required_result_elicitation", mrtr)

                async def defaults() -> str | None:
                    before = elicited
                    result = await client.call_tool("test_elicitation_sep1034_defaults", {})
                    if elicited == before:
                        return "the elicitation callback was never asked"
                    text = first_text(result.content) or ""
                    if result.is_error:
                        return f"isError: {text}"
                    ok = '"score":95.5' in text and "action=accept" in text
                    return None if ok else f"the defaults are not in the answer: {text}"

                await run.check(
                    "MRTR round accepting the defaults (95.5) tools/call test_elicitation_sep1034_defaults", defaults
                )

                async def listen() -> str | None:
                    # subscriptions/listen: acknowledged, then a tools list_changed
                    # once a tool call changes the tool list at run time.
                    async with client.listen(tools_list_changed=True) as sub:
                        await client.call_tool("test_trigger_tool_change", {})
                        with anyio.move_on_after(10):
                            event = await sub.__anext__()
                            return None if isinstance(event, ToolsListChanged) else f"unexpected event {event!r}"
                    return "no event on the listen stream within 10 s of the tool list change"

                await run.check("subscriptions/listen list_changed after test_trigger_tool_change", listen)
            elif binary is None:
                # A 2025 client over HTTP: the server sends elicitation/create and
                # sampling/createMessage on the call's own SSE stream, the SDK
                # answers through the callbacks with a POST, and the call answers.

                async def mid_call_elicitation() -> str | None:
                    before = elicited
                    result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
                    if elicited == before:
                        return "the elicitation callback was never asked"
                    text = first_text(result.content) or ""
                    if result.is_error:
                        return f"isError: {text}"
                    return None if "action=accept" in text and "Alice" in text else f"unexpected answer: {text}"

                await run.check("mid-call elicitation/create (2025) tools/call test_elicitation", mid_call_elicitation)

                async def mid_call_sampling() -> str | None:
                    before = sampled
                    result = await client.call_tool("test_sampling", {"prompt": "Say something"})
                    if sampled == before:
                        return "the sampling callback was never asked"
                    text = first_text(result.content) or ""
                    if result.is_error:
                        return f"isError: {text}"
                    return None if "py-sampled" in text else f"unexpected answer: {text}"

                await run.check("mid-call sampling/createMessage (2025) tools/call test_sampling", mid_call_sampling)

            if not modern:
                # The 2025 standalone stream. Over HTTP the SDK opened its GET
                # stream after `initialized`, and a change made through another
                # connection (another client, maybe another replica) reaches it.
                # Over stdio the connection is the stream; a second connection
                # would be a second process, sharing no bus, so the change is
                # made through this one.
                async def get_stream(tool: str, method: str) -> str | None:
                    nonlocal heard_one
                    heard.clear()
                    heard_one = anyio.Event()
                    started = anyio.current_time()
                    if binary is None:
                        async with Client(server, mode=mode, read_timeout_seconds=20) as other:
                            started = anyio.current_time()
                            result = await other.call_tool(tool, {})
                    else:
                        result = await client.call_tool(tool, {})
                    if result.is_error:
                        return f"{tool}: isError: {first_text(result.content)}"
                    with anyio.move_on_after(10):
                        while method not in heard:
                            await heard_one.wait()
                            heard_one = anyio.Event()
                        took = anyio.current_time() - started
                        print(f"NOTE {run.tag} {method} heard {took * 1000:.0f} ms after {tool} was called", flush=True)
                        return None
                    return f"no {method} on the {'GET stream' if binary is None else 'connection'} within 10 s (heard {heard})"

                for tool, method in (
                    ("test_trigger_tool_change", "notifications/tools/list_changed"),
                    ("test_trigger_prompt_change", "notifications/prompts/list_changed"),
                ):
                    label = (
                        f"GET stream (2025) {method} after {tool} through another connection"
                        if binary is None
                        else f"stdio (2025) {method} after {tool} on the same connection"
                    )
                    await run.check(label, lambda tool=tool, method=method: get_stream(tool, method))
    except Exception as err:  # noqa: BLE001 - a failed connect or close is one more FAIL line
        run.failed += 1
        print(f"FAIL {run.tag} session: {describe(err)}", flush=True)

    # Capabilities are JSON objects whose values may be any JSON value (schema.ts
    # `JSONValue`): a fraction and a null in an extension's settings, sent in every
    # 2026 request's _meta (and in a 2025 client's initialize).
    async def extended() -> str | None:
        settings = {"ratio": 0.5, "since": None}
        ext = [advertise("com.example/wymcp-interop", settings)]
        async with Client(server, mode=mode, extensions=ext, read_timeout_seconds=20) as other:
            # auto falls back to the 2025 handshake when server/discover is
            # refused, where these capabilities would prove nothing.
            version = other.protocol_version
            if mode != "legacy" and version != "2026-07-28":
                return f"negotiated {version}, wanted 2026-07-28"
            result = await other.call_tool("test_simple_text", {})
            text = first_text(result.content)
            if result.is_error:
                return f"isError: {text}"
            return None if text else f"no text content in {result!r}"

    await run.check("capabilities with a fraction and a null (extensions), tools/call test_simple_text", extended)
    return 0 if run.failed == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in MODES:
        print(f"usage: client.py URL|stdio:BINARY {'|'.join(MODES)}", file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
