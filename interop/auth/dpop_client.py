"""DPoP interop check: the official Python SDK client (mcp, pinned in
tools/py/requirements.txt), its HTTP client given an `Auth` that makes a
DPoP proof (RFC 9449) for every request with `cryptography` and PyJWT,
against examples/everything --dpop required serving tokens of
interop/auth/issuer.py (bound.jwt, bound to dpop-key.pem).

Usage: python interop/auth/dpop_client.py URL TOKENS_DIR

Over plain HTTP on loopback for now. TODO(tls): when in-process TLS lands,
scripts/conformance.sh passes an https URL and a CA bundle (SSL_CERT_FILE);
nothing here depends on the scheme (the proof's htu is the URL given).

Prints one `PASS py-dpop check` or `FAIL py-dpop check: reason` line per
check; exits non-zero if any failed.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sys
import time
import uuid
from pathlib import Path

import httpx2
import jwt
from cryptography.hazmat.primitives import serialization

from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

TAG = "py-dpop"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class DpopAuth(httpx2.Auth):
    """`Authorization: DPoP <token>` and a fresh proof on every request;
    once more with the server's nonce when it asks for one (§8)."""

    def __init__(self, token: str, key, sent: list) -> None:
        self.token = token
        self.key = key
        self.public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
        self.nonce: str | None = None
        self.sent = sent

    def proof(self, method: str, url: str) -> str:
        htu = url.split("?", 1)[0].split("#", 1)[0]
        claims = {
            "htm": method,
            "htu": htu,
            "iat": int(time.time()),
            "jti": str(uuid.uuid4()),
            "ath": b64(hashlib.sha256(self.token.encode()).digest()),
        }
        if self.nonce:
            claims["nonce"] = self.nonce
        return jwt.encode(claims, self.key, algorithm="ES256", headers={"typ": "dpop+jwt", "jwk": self.public})

    def auth_flow(self, request):
        request.headers["Authorization"] = f"DPoP {self.token}"
        request.headers["DPoP"] = self.proof(request.method, str(request.url))
        self.sent.append((request.method, str(request.url), dict(request.headers), request.content))
        response = yield request
        if response.status_code == 401 and "use_dpop_nonce" in response.headers.get("www-authenticate", ""):
            self.nonce = response.headers.get("dpop-nonce")
            request.headers["DPoP"] = self.proof(request.method, str(request.url))
            yield request


async def main(url: str, tokens: Path) -> int:
    failed = 0

    def report(name: str, why: str | None) -> None:
        nonlocal failed
        if why:
            failed += 1
            print(f"FAIL {TAG} {name}: {why}", flush=True)
        else:
            print(f"PASS {TAG} {name}", flush=True)

    token = (tokens / "bound.jwt").read_text()
    key = serialization.load_pem_private_key((tokens / "dpop-key.pem").read_bytes(), password=None)
    sent: list = []

    # 1. The SDK client, every request with its proof: list tools, call one.
    try:
        http = create_mcp_http_client(auth=DpopAuth(token, key, sent))
        async with http:
            client = Client(streamable_http_client(url, http_client=http), mode="2026-07-28", read_timeout_seconds=20)
            async with client:
                tools = await client.list_tools()
                names = {t.name for t in tools.tools}
                result = await client.call_tool("test_simple_text", {})
                text = next((b.text for b in result.content or [] if isinstance(b, types.TextContent)), None)
        why = None
        if "test_simple_text" not in names:
            why = f"tools/list named {sorted(names)[:5]}…"
        elif not text:
            why = "no text content"
    except Exception as err:  # noqa: BLE001
        why = f"{type(err).__name__}: {err}"
    report("tools/list and tools/call test_simple_text with a DPoP-bound token and a proof per request", why)

    async with httpx2.AsyncClient() as raw:
        # 2. A request replayed as it was sent, proof and all: refused.
        posts = [s for s in sent if s[0] == "POST"]
        if not posts:
            report("a replayed request is refused invalid_dpop_proof", "no request was sent")
        else:
            method, target, headers, body = posts[-1]
            answer = await raw.request(method, target, headers=headers, content=body)
            challenge = answer.headers.get("www-authenticate", "")
            why = None
            if answer.status_code != 401 or 'DPoP error="invalid_dpop_proof"' not in challenge or "already used" not in challenge:
                why = f"answered {answer.status_code} {challenge!r}"
            report("a replayed request (same proof) is refused 401 DPoP invalid_dpop_proof", why)

            # 3. The bound token as Bearer, the proof dropped: refused.
            bearer = {k: v for k, v in headers.items() if k.lower() not in ("dpop", "authorization")}
            bearer["Authorization"] = f"Bearer {token}"
            answer = await raw.request(method, target, headers=bearer, content=body)
            challenge = answer.headers.get("www-authenticate", "")
            why = None
            if answer.status_code != 401 or 'DPoP error="invalid_token"' not in challenge or 'algs="' not in challenge:
                why = f"answered {answer.status_code} {challenge!r}"
            report("the bound token sent as Bearer is refused 401 DPoP invalid_token with algs", why)

        # 4. The RFC 9728 document says DPoP is required.
        metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        try:
            doc = (await raw.get(metadata_url)).json()
            why = None
            if doc.get("dpop_bound_access_tokens_required") is not True or "ES256" not in doc.get(
                "dpop_signing_alg_values_supported", []
            ):
                why = f"metadata {doc}"
        except Exception as err:  # noqa: BLE001
            why = f"{type(err).__name__}: {err}"
        report("protected-resource metadata advertises dpop_bound_access_tokens_required and ES256", why)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: dpop_client.py URL TOKENS_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(main(sys.argv[1], Path(sys.argv[2]))))
