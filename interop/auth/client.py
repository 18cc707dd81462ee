"""Auth interop check: the official Python SDK client (mcp, pinned in
tools/py/requirements.txt) against examples/everything serving as an OAuth
resource server for tokens of interop/auth/issuer.py.

Usage: python interop/auth/client.py URL ISSUER TOKENS_DIR

The server requires the scope mcp:tools. Prints one `PASS py-auth check`
or `FAIL py-auth check: reason` line per check; exits non-zero if any
failed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx2

from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

TAG = "py-auth"
SCOPE = "mcp:tools"


def describe(err: BaseException) -> str:
    while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
        err = err.exceptions[0]
    return f"{type(err).__name__}: {err}"


async def session(url: str, token: str | None, answers: list[tuple[int, str]]) -> str | None:
    """Connects with `token` and calls test_simple_text; the text, or None.

    Every HTTP answer's status and WWW-Authenticate is appended to `answers`.
    """

    async def record(response: httpx2.Response) -> None:
        answers.append((response.status_code, response.headers.get("www-authenticate", "")))

    headers = {"Authorization": f"Bearer {token}"} if token else None
    http = create_mcp_http_client(headers=headers)
    http.event_hooks = {"response": [record]}
    async with http:
        client = Client(streamable_http_client(url, http_client=http), mode="2026-07-28", read_timeout_seconds=20)
        async with client:
            result = await client.call_tool("test_simple_text", {})
            for block in result.content or []:
                if isinstance(block, types.TextContent):
                    return block.text
    return None


async def refused(url: str, token: str | None) -> tuple[str | None, list[tuple[int, str]]]:
    """Connects and expects the SDK to fail: (an error if it did not, answers)."""
    answers: list[tuple[int, str]] = []
    try:
        text = await session(url, token, answers)
    except Exception:  # noqa: BLE001 - the refusal is the expected outcome
        return None, answers
    return f"the call went through: {text!r}", answers


async def main(url: str, issuer: str, tokens: Path) -> int:
    failed = 0
    metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")

    def report(name: str, why: str | None) -> None:
        nonlocal failed
        if why:
            failed += 1
            print(f"FAIL {TAG} {name}: {why}", flush=True)
        else:
            print(f"PASS {TAG} {name}", flush=True)

    # 1. The token the local issuer minted with the scope: the call works.
    try:
        answers: list[tuple[int, str]] = []
        text = await session(url, (tokens / "scoped.jwt").read_text(), answers)
        why = None if text else f"no text content; answers {answers}"
    except Exception as err:  # noqa: BLE001
        why = describe(err)
    report("tools/call test_simple_text with a token minted by the local issuer (ES256, typ at+jwt)", why)

    # 2. No token: 401, the challenge points at the metadata and names no error.
    why, answers = await refused(url, None)
    first = answers[0] if answers else (0, "")
    if why is None:
        challenge = first[1]
        if first[0] != 401:
            why = f"first answer {first}"
        elif f'resource_metadata="{metadata_url}"' not in challenge or "error=" in challenge:
            why = f"challenge {challenge!r}"
    report("no token: 401 with the resource_metadata challenge and no error", why)

    # 3. A token without the scope: 403 insufficient_scope naming the scope.
    why, answers = await refused(url, (tokens / "narrow.jwt").read_text())
    first = answers[0] if answers else (0, "")
    if why is None:
        want = f'Bearer error="insufficient_scope", scope="{SCOPE}", resource_metadata="{metadata_url}"'
        if first != (403, want):
            why = f"first answer {first}, wanted (403, {want!r})"
    report(f'a token without {SCOPE}: 403 with the step-up challenge error="insufficient_scope", scope="{SCOPE}"', why)

    # 4. A token minted for another resource: 401 invalid_token.
    why, answers = await refused(url, (tokens / "foreign.jwt").read_text())
    first = answers[0] if answers else (0, "")
    if why is None:
        if first[0] != 401 or 'error="invalid_token"' not in first[1] or "another audience" not in first[1]:
            why = f"first answer {first}"
    report("a token for another resource (aud): 401 invalid_token", why)

    # 5. The RFC 9728 document names the resource and the local issuer.
    try:
        async with httpx2.AsyncClient() as http:
            doc = (await http.get(metadata_url)).json()
        why = None
        if doc.get("resource") != url or issuer not in doc.get("authorization_servers", []):
            why = f"metadata {doc}"
        elif SCOPE not in doc.get("scopes_supported", []):
            why = f"scopes_supported in {doc}"
    except Exception as err:  # noqa: BLE001
        why = describe(err)
    report("protected-resource metadata names the resource, the issuer and the scope", why)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: client.py URL ISSUER TOKENS_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))))
