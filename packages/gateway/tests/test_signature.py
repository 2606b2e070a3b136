"""`X-Hub-Signature-256`: GitHub's example, tampering, and everything malformed."""

from __future__ import annotations

import pytest

from agent_loop_gateway import signature_for, verify_signature
from agent_loop_testing import sign_payload

# The example in GitHub's docs ("Validating webhook deliveries").
DOCS_SECRET = b"It's a Secret to Everybody"
DOCS_BODY = b"Hello, World!"
DOCS_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_githubs_documented_example() -> None:
    assert signature_for(DOCS_SECRET, DOCS_BODY) == DOCS_SIGNATURE
    assert verify_signature(DOCS_SECRET, DOCS_BODY, DOCS_SIGNATURE)
    assert sign_payload(DOCS_SECRET.decode(), DOCS_BODY) == DOCS_SIGNATURE  # the emulator agrees


@pytest.mark.parametrize(
    ("body", "header"),
    [
        (DOCS_BODY + b" ", DOCS_SIGNATURE),  # tampered body
        (DOCS_BODY, DOCS_SIGNATURE[:-1] + "0"),  # tampered signature
        (DOCS_BODY, None),  # missing
        (DOCS_BODY, ""),
        (DOCS_BODY, DOCS_SIGNATURE.removeprefix("sha256=")),  # no algorithm
        (DOCS_BODY, "sha1=" + DOCS_SIGNATURE.removeprefix("sha256=")),
        (DOCS_BODY, "sha256=ünïcode"),
        (DOCS_BODY, signature_for(b"another secret", DOCS_BODY)),
    ],
)
def test_anything_else_fails(body: bytes, header: str | None) -> None:
    assert not verify_signature(DOCS_SECRET, body, header)


def test_an_empty_secret_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        verify_signature(b"", DOCS_BODY, DOCS_SIGNATURE)
