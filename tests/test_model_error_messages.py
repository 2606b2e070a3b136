"""A failed model call says what the provider said, without the model library's noise.

Before: `InternalServerError: litellm.InternalServerError: InternalServerError:
OpenAIException - Connection error. Handle with `litellm.InternalServerError`.`, object
reprs, and a host name that did not resolve called an internal server error.
"""

from __future__ import annotations

from agent_loop_common.llm import ErrorKind, ModelCallFailed


class InternalServerError(Exception):
    """Shaped like litellm's (only the class name and the text matter here)."""


def test_the_provider_message_loses_the_library_noise() -> None:
    cause = InternalServerError(
        "litellm.InternalServerError: InternalServerError: OpenAIException - Missing "
        "credentials. Please pass an `api_key`. Handle with `litellm.InternalServerError`."
    )
    failed = ModelCallFailed("openai/x", ErrorKind.TRANSIENT, 4, cause)
    assert str(failed) == (
        "model call to 'openai/x' failed (still failing after 4 attempts): "
        "InternalServerError: Missing credentials. Please pass an `api_key`."
    )


def test_an_object_repr_is_dropped() -> None:
    cause = InternalServerError("Error <litellm.llms.Foo object at 0x7f3a2b1c> broke")
    assert "object at" not in str(ModelCallFailed("m", ErrorKind.UNKNOWN, 1, cause))


def test_a_dns_failure_is_named_a_connection_failure() -> None:
    cause = InternalServerError(
        "litellm.InternalServerError: InternalServerError: OpenAIException - Connection "
        "error: [Errno -2] Name or service not known"
    )
    text = str(ModelCallFailed("openai/x", ErrorKind.TRANSIENT, 4, cause))
    assert ": connection failure: the model server's host name did not resolve" in text
    assert "InternalServerError" not in text
