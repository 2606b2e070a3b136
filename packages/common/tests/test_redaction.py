"""`redact_secrets`: provider keys by their exact shapes, and this process's live secrets
in the forms a leak takes (the security review's attack 8).

The review's finding: an `sk-` key whose first 40 characters hold no digit went through
(the old rule guessed keys from digits), and so did the run's own token in base64, as
`Authorization: Basic base64("x-access-token:" + token)` prints it. Every key below is
made of letters only, where the issuer's format allows it.
"""

from __future__ import annotations

import base64
import json
import pathlib
import re
import string
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from agent_loop_common.github import AppAuth, TokenAuth
from agent_loop_common.model_keys import remember_model_keys
from agent_loop_common.records import Role
from agent_loop_common.redaction import LIVE_SECRETS, REDACTED, redact_secrets
from agent_loop_common.texts import public_text
from agent_loop_testing import GitHubEmulator, emulator_client, emulator_runtime, emulator_settings

LETTERS = (string.ascii_letters * 4)[:160]
"""No digit anywhere: the old heuristic needed one within 40 characters."""

# Made-up values in each issuer's documented format: (fixed prefix, body). Every body is
# letters only where the format allows it (a hex body has a-f).
NO_DIGIT_KEYS = {
    "openai legacy": ("sk-", LETTERS[:48]),
    "openai project": ("sk-proj-", LETTERS[:70] + "_" + LETTERS[70:120] + "-AbC"),
    "openai service account": ("sk-svcacct-", LETTERS[5:80] + "_x-" + LETTERS[:20]),
    "openai admin": ("sk-admin-", LETTERS[3:60]),
    "anthropic": ("sk-ant-api03-", LETTERS[:93] + "AA"),
    "openrouter": ("sk-or-v1-", "abcdef" * 10 + "abcd"),
    "deepseek": ("sk-", "abcdef" * 5 + "ab"),
    "google": ("AIza", LETTERS[:35]),
    "github classic": ("ghp_", LETTERS[:36]),
    "github oauth": ("gho_", LETTERS[1:37]),
    "github user-to-server": ("ghu_", LETTERS[2:38]),
    "github installation": ("ghs_", LETTERS[3:39]),
    "github refresh": ("ghr_", LETTERS[4:80]),
    "github fine-grained": ("github_pat_", LETTERS[:22] + "_" + LETTERS[22:81]),
    "aws access key": ("AKIA", "ABCDEFGHIJKLMNOP"),
    "aws session key": ("ASIA", "QRSTUVWXYZABCDEF"),
    "groq": ("gsk_", LETTERS[:52]),
    "xai": ("xai-", LETTERS[:80]),
    "perplexity": ("pplx-", LETTERS[:48]),
    "together": ("tgp_v1_", LETTERS[:43]),
    "hugging face": ("hf_", LETTERS[:34]),
    "slack bot": ("xoxb-", "abcdefghij-" + LETTERS[:24]),
    "npm": ("npm_", LETTERS[:36]),
}


@pytest.fixture(autouse=True)
def no_live_secrets() -> Iterator[None]:
    LIVE_SECRETS.clear()
    yield
    LIVE_SECRETS.clear()


@pytest.mark.parametrize(("prefix", "body"), NO_DIGIT_KEYS.values(), ids=NO_DIGIT_KEYS.keys())
def test_provider_keys_are_caught_by_their_shape_without_a_digit(prefix: str, body: str) -> None:
    assert not any(c.isdigit() for c in body)
    key = prefix + body
    text = f"FAILED tests/test_x.py::test_leak[{key}] - assert '{key}' == ''"
    out = public_text(text)
    assert key not in out
    assert f"test_leak[{REDACTED}]" in out
    assert redact_secrets(out) == out


def test_the_reviews_key_is_caught() -> None:
    """The review's own example: an `sk-` key with no digit in its first 40 characters."""
    key = "sk-" + "proj-" + "Zq" * 20 + "x7Yw" * 20
    assert not any(c.isdigit() for c in key[:40])
    assert redact_secrets(f"key={key}") == f"key={REDACTED}"


@pytest.mark.parametrize(
    "text",
    [
        "scikit-learn and task-force, disk-usage",
        "sk-learn-is-not-a-key-at-all-really",
        "sk-short",
        "the ghp_ prefix and AKIA alone, xai-grok and hf_hub",
        "pip install --disk-usage-report-detailed-but-hyphenated-words",
    ],
)
def test_words_near_a_shape_are_kept(text: str) -> None:
    assert redact_secrets(text) == text


# A key with no fixed shape (Mistral's, a proxy's): only the live-secret net sees it.
SHAPELESS = "Qm9vTXlzdGVyeUtleUZvclRlc3Rz"


def _encoded_leaks(secret: str) -> dict[str, str]:
    raw = secret.encode()
    basic = base64.b64encode(b"x-access-token:" + raw).decode()
    wrapped = base64.b64encode(b"prefix-" + raw + b"-suffix").decode()
    return {
        "as written": f"token={secret}",
        "base64": base64.b64encode(raw).decode(),
        "base64 url-safe": base64.urlsafe_b64encode(b"\xff" + raw).decode(),
        "basic auth": f"Authorization: Basic {basic}",
        "base64 inside a longer text, wrapped": wrapped[:10] + "\n" + wrapped[10:],
        "split by concatenation": f'"{secret[:9]}" + "{secret[9:20]}" + "{secret[20:]}"',
        "split over lines": secret[:14] + "\n" + secret[14:],
        "reversed": secret[::-1],
        "hex": raw.hex(),
    }


@pytest.mark.parametrize("form", list(_encoded_leaks(SHAPELESS)))
def test_a_live_secret_is_caught_in_the_forms_a_leak_takes(form: str) -> None:
    leak = _encoded_leaks(SHAPELESS)[form]
    assert redact_secrets(leak) == leak  # not a known shape: unknown until registered
    LIVE_SECRETS.add(SHAPELESS)
    out = redact_secrets(f"before {leak} after")
    assert REDACTED in out
    for piece in (SHAPELESS, SHAPELESS[:14], base64.b64encode(SHAPELESS.encode()).decode()[4:20]):
        assert piece not in out
    assert redact_secrets(out) == out


def test_short_values_are_never_live_secrets() -> None:
    LIVE_SECRETS.add("no-key")
    LIVE_SECRETS.add("")
    LIVE_SECRETS.add(None)
    assert len(LIVE_SECRETS) == 0
    assert redact_secrets("no-key here") == "no-key here"


async def test_the_runs_github_token_is_live_from_its_first_use() -> None:
    """A token with no shape (a GHES token, a proxy's) given to the facade."""
    emu = GitHubEmulator()
    emu.seed_files({"README.md": "hi\n"})
    token = emu.add_user("shapeless-owner-token-user", permission="admin")
    gh = emulator_client(emu, token=token)
    await gh.repository()
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    assert basic not in redact_secrets(f"Authorization: Basic {basic}")
    assert token not in public_text(f"the token is {token}")


async def test_an_apps_installation_token_is_live_once_minted() -> None:
    """The App's installation token exists in no setting: it is seen on the wire."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    emu = GitHubEmulator()
    emu.seed_files({"README.md": "hi\n"})
    emu.register_app(4242, public, slug="builder-bot")
    minted: list[str] = []
    wire = emu.transport()

    class Minted(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response = await wire.handle_async_request(request)
            if request.url.path.endswith("/access_tokens"):
                await response.aread()
                minted.append(response.json()["token"])
            return response

    gh = emulator_client(emu, auth=AppAuth(4242, private), transport=Minted())
    await gh.viewer()
    (token,) = minted
    assert token.startswith("ghs_")  # too short for the shape: the live net must see it
    assert token not in redact_secrets(token)
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    out = redact_secrets(f"remote: Authorization: Basic {basic}")
    assert basic not in out
    assert REDACTED in out


async def test_a_runs_model_key_is_live(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, emulator: GitHubEmulator
) -> None:
    """The run's model key, read where the runtime opens (a Mistral key has no shape)."""
    monkeypatch.setenv("MISTRAL_API_KEY", SHAPELESS)
    settings = emulator_settings(emulator, tmp_path / "home", model="mistral/mistral-large")
    async with emulator_runtime(settings, emulator, Role.BUILDER, memory_root=str(tmp_path)):
        pass
    leak = base64.b64encode(SHAPELESS.encode()).decode()
    assert leak not in redact_secrets(f"key: {leak}")


def test_remember_model_keys_reads_the_override_variable() -> None:
    env = {"AGENT_LOOP_MODEL_KEY_ENV": "MY_PROXY_KEY", "MY_PROXY_KEY": SHAPELESS}
    remember_model_keys(["openai/gpt-5"], env)
    assert SHAPELESS not in redact_secrets(SHAPELESS)


def test_a_token_in_settings_is_live() -> None:
    TokenAuth(token=SHAPELESS)
    assert redact_secrets(SHAPELESS[::-1]) == REDACTED


def _escaped_contexts(key: str) -> dict[str, str]:
    """Where a key sits right after an escape sequence, not a word boundary: the
    re-audit's shapes (a JSON or Python string in a test's failure output, colored
    output)."""
    return {
        "json after an escaped newline": json.dumps({"log": "connecting\n" + key + "\nok"}),
        "repr after an escaped tab": repr(f"token:\t{key}"),
        "after an escaped carriage return": f"'\\r{key}'",
        "after a \\u escape": f'"\\u00e9{key}"',
        "colored output": f"\x1b[31m{key}\x1b[0m",
        "bold colored output": f"\x1b[1;31m{key}\x1b[0m",
    }


@pytest.mark.parametrize(("prefix", "body"), NO_DIGIT_KEYS.values(), ids=NO_DIGIT_KEYS.keys())
def test_a_key_right_after_an_escape_sequence_is_caught(prefix: str, body: str) -> None:
    """Re-audit of issue 30, item 8: a shape starts where a word does, so `\\nsk-...` in
    a JSON string (the `n` of the escape is a letter) went through."""
    key = prefix + body
    for where, text in _escaped_contexts(key).items():
        out = redact_secrets(text)
        assert key not in out, where
        assert body[-16:] not in out, where
        assert REDACTED in out, where


def test_an_aws_secret_with_escaped_slashes_is_caught() -> None:
    """Some JSON encoders write `/` as `\\/`."""
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    text = json.dumps({"aws_secret_access_key": secret}).replace("/", "\\/")
    assert "\\/" in text
    out = redact_secrets(text)
    assert "bPxRfiCY" not in out
    assert REDACTED in out


# A shapeless secret whose base64 holds `/` and `+` at every alignment.
SLASHED = "~~~shapeless?key>>>with~~~odd?bytes>>>"


def test_a_live_secret_is_caught_in_escaped_and_percent_encoded_forms() -> None:
    """Re-audit of issue 30, item 8: the live secret in a URL's userinfo percent-encoded
    in full or in lower-case hex, its base64 in JSON with `\\/` escapes, and split over
    lines inside a JSON string (the breaks are `\\n` escapes, not whitespace)."""
    LIVE_SECRETS.add(SLASHED)
    LIVE_SECRETS.add(SHAPELESS)
    raw = SLASHED.encode()
    basic = base64.b64encode(b"x-access-token:" + raw).decode()
    assert "/" in basic
    leaks = {
        "userinfo, every byte encoded": "https://x:"
        + "".join(f"%{b:02X}" for b in raw)
        + "@git.example/r",
        "userinfo, lower-case hex": "https://x:" + "".join(f"%{b:02x}" for b in raw) + "@h/r",
        "userinfo, quote() with lower-case hex": "https://u:"
        + re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(SLASHED, safe=""))
        + "@h",
        "base64 with escaped slashes": json.dumps({"auth": f"Basic {basic}"}).replace("/", "\\/"),
        "json string wrapped over lines": json.dumps(
            SHAPELESS[:9] + "\n" + SHAPELESS[9:18] + "\n" + SHAPELESS[18:]
        ),
    }
    for form, leak in leaks.items():
        out = redact_secrets(f"before {leak} after")
        assert REDACTED in out, form
        for piece in (SLASHED[3:14], SHAPELESS[9:18], basic[24:40]):
            assert piece not in out, (form, out)
        assert out.startswith("before "), form
        assert out.endswith(" after"), form
