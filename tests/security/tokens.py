"""An OpenID Connect issuer for tests: signing keys, their JWKS, and tokens it signs (PyJWT)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

ISSUER = "https://issuer.lanes.test"
AUDIENCE = "lanes"


class Issuer:
    """Signing keys (RSA and EC, each with a ``kid``) and the JWKS that publishes them."""

    def __init__(self) -> None:
        self.keys: dict[str, Any] = {
            "rsa-1": rsa.generate_private_key(public_exponent=65537, key_size=2048),
            "ec-1": ec.generate_private_key(ec.SECP256R1()),
        }

    def add_key(self, kid: str) -> None:
        self.keys[kid] = ec.generate_private_key(ec.SECP256R1())

    def jwks(self) -> str:
        """The public keys as a JSON Web Key Set."""
        published = []
        for kid, key in self.keys.items():
            algorithm = (
                jwt.algorithms.RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else jwt.algorithms.ECAlgorithm
            )
            jwk = json.loads(algorithm.to_jwk(key.public_key()))
            published.append({**jwk, "kid": kid, "use": "sig"})
        return json.dumps({"keys": published})

    def write_jwks(self, path: Path) -> Path:
        temporary = path.with_suffix(".tmp")
        temporary.write_text(self.jwks())
        temporary.replace(path)
        return path

    def token(self, subject: str, *, kid: str = "rsa-1", lifetime_s: float = 3600, **claims: Any) -> str:
        """A token for ``subject``, valid for ``lifetime_s`` (negative: expired), with ``claims``
        overriding the issuer's, audience and times."""
        now = int(time.time())
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + int(lifetime_s), **claims}
        algorithm = "RS256" if isinstance(self.keys[kid], rsa.RSAPrivateKey) else "ES256"
        return jwt.encode(body, self.keys[kid], algorithm=algorithm, headers={"kid": kid})
