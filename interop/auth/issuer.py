"""A local OAuth issuer for the auth interop check (scripts/conformance.sh).

Usage: python interop/auth/issuer.py PORT AUDIENCE OUT_DIR

Generates an EC P-256 signing key with `cryptography`, serves its public
JWK Set at http://127.0.0.1:PORT/jwks (loopback only), and writes access
tokens (RFC 9068: typ at+jwt, signed with PyJWT, iss http://127.0.0.1:PORT)
into OUT_DIR before it starts serving:

  scoped.jwt   scope "mcp:tools", for AUDIENCE
  narrow.jwt   scope "profile", for AUDIENCE (lacks the required scope)
  foreign.jwt  scope "mcp:tools", for another resource
  bound.jwt    scope "mcp:tools", for AUDIENCE, bound to a client's DPoP key
               (cnf.jkt, RFC 9449 §6.1), whose private key is dpop-key.pem

Both libraries come with the Python SDK's own dependencies (PyJWT,
cryptography), pinned in tools/py/requirements.txt: a JOSE implementation
other than wymcp's minting what wymcp verifies. Runs until killed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

KID = "interop-es256"


def thumbprint(public: ec.EllipticCurvePublicKey) -> str:
    """RFC 7638: SHA-256 of the required members, sorted, no whitespace."""
    jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(public))
    canonical = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()


def main(port: int, audience: str, out: Path) -> None:
    issuer = f"http://127.0.0.1:{port}"
    key = ec.generate_private_key(ec.SECP256R1())
    public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    public.update({"kid": KID, "use": "sig", "alg": "ES256"})
    jwks = json.dumps({"keys": [public]}).encode()

    now = int(time.time())

    def mint(scope: str, aud: str, cnf: dict | None = None) -> str:
        claims = {
            "iss": issuer,
            "aud": aud,
            "sub": "interop-user",
            "client_id": "interop-client",
            "scope": scope,
            "iat": now,
            "nbf": now - 5,
            "exp": now + 900,
            "jti": f"{scope}-{aud}",
        }
        if cnf:
            claims["cnf"] = cnf
        return jwt.encode(claims, key, algorithm="ES256", headers={"kid": KID, "typ": "at+jwt"})

    out.mkdir(parents=True, exist_ok=True)
    (out / "scoped.jwt").write_text(mint("mcp:tools", audience))
    (out / "narrow.jwt").write_text(mint("profile", audience))
    (out / "foreign.jwt").write_text(mint("mcp:tools", "https://other.example.com/mcp"))
    # The client's DPoP key: the token is bound to its RFC 7638 thumbprint.
    client_key = ec.generate_private_key(ec.SECP256R1())
    (out / "dpop-key.pem").write_bytes(
        client_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    (out / "bound.jwt").write_text(mint("mcp:tools", audience, {"jkt": thumbprint(client_key.public_key())}))

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server name
            if self.path != "/jwks":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/jwk-set+json")
            self.send_header("Content-Length", str(len(jwks)))
            self.end_headers()
            self.wfile.write(jwks)

        def log_message(self, fmt: str, *args: object) -> None:
            print(f"issuer: {fmt % args}", file=sys.stderr, flush=True)

    server = HTTPServer(("127.0.0.1", port), Handler)
    print(f"issuer {issuer} serving {issuer}/jwks", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: issuer.py PORT AUDIENCE OUT_DIR", file=sys.stderr)
        sys.exit(2)
    main(int(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
