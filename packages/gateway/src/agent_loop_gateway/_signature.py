"""GitHub's `X-Hub-Signature-256`: the HMAC-SHA256 of the raw body under the shared secret.

Checked on the exact bytes received, before anything parses them, and compared in
constant time, so neither a forged body nor the timing of the comparison tells an
attacker anything. A missing, malformed or wrong header fails the same way.
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["SignatureCheck", "signature_for", "verify_signature"]

_PREFIX = "sha256="


def signature_for(secret: bytes, body: bytes) -> str:
    """The header value GitHub sends for `body` (`sha256=<hex digest>`)."""
    return _PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


class SignatureCheck:
    """The HMAC of a body computed as it streams in, checked once it is complete.

    The gateway feeds each chunk as it arrives, so the verdict is ready the moment the
    last byte is, and nothing is computed over a whole buffer afterwards.
    """

    def __init__(self, secret: bytes) -> None:
        if not secret:
            raise ValueError("the webhook secret is empty")
        self._mac = hmac.new(secret, digestmod=hashlib.sha256)

    def update(self, chunk: bytes) -> None:
        """Feed the next bytes of the body, in order."""
        self._mac.update(chunk)

    def matches(self, header: str | None) -> bool:
        """Whether `header` (`X-Hub-Signature-256`) is the signature of what was fed."""
        if header is None or not header.startswith(_PREFIX):
            return False
        expected = (_PREFIX + self._mac.hexdigest()).encode()
        return hmac.compare_digest(expected, header.strip().encode("ascii", "replace"))


def verify_signature(secret: bytes, body: bytes, header: str | None) -> bool:
    """Whether `header` is GitHub's signature of `body` under `secret`.

    Args:
        secret: The webhook secret (must not be empty).
        body: The request body exactly as received.
        header: The `X-Hub-Signature-256` header, or None when it is missing.
    """
    check = SignatureCheck(secret)
    check.update(body)
    return check.matches(header)
