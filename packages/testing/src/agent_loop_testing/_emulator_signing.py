"""Commit signatures, verified the way GitHub verifies them.

A signed commit carries a real `gpgsig` header (so the signature is part of its sha, as
in git) whose body names the key that made it. Every emulated user has one signing key
registered to their account (its id derives from the account's id); GitHub's own key
signs what GitHub commits itself: merges and squashes made on the server, and
`createCommitOnBranch` commits, whose committer is then `GitHub <noreply@github.com>`
(the `web-flow` account).

GitHub calls a signature verified (`valid`) only when its key is registered to an account
and the commit's **committer** email is one of that account's verified emails; a key
whose owner is not the committer is `bad_email`, a key nobody registered `unknown_key`.
`verified` therefore says "the committer's own key signed this"; it says nothing about
the author field, which stays whatever the commit's creator wrote. GraphQL names the
signer (`signature.signer`: the key's account) and whether GitHub itself signed
(`wasSignedByGitHub`); REST's `verification` object says only `verified` and `reason`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from dulwich.objects import Commit

from agent_loop_testing._emulator_git import Identity, person_of
from agent_loop_testing._emulator_state import State, UserRec

__all__ = [
    "GITHUB_EMAIL",
    "GITHUB_KEY_ID",
    "WEB_FLOW",
    "Verification",
    "armored",
    "key_id",
    "key_of",
    "verify",
    "web_flow_identity",
]

GITHUB_KEY_ID = "B5690EEEBB952194"
"""The id of the key GitHub signs its own commits with (github.com's web-flow key)."""
GITHUB_EMAIL = "noreply@github.com"
"""The committer email of the commits GitHub makes itself."""

WEB_FLOW = UserRec("web-flow", 19864447, "User", "none", datetime(2016, 6, 13, tzinfo=UTC))
"""The account GitHub shows as the committer of the commits it makes itself; no member
of any repository (never in `State.users`)."""


def web_flow_identity(st: State) -> Identity:
    """The committer of a commit GitHub makes itself."""
    return Identity("GitHub", GITHUB_EMAIL, st.now)


def key_id(user: UserRec) -> str:
    """The id of the signing key registered to `user`'s account."""
    return f"E{user.id:015X}"


def armored(key: str) -> bytes:
    """A `gpgsig` header's value: an armored signature naming the key that made it."""
    return (
        f"-----BEGIN PGP SIGNATURE-----\n\nwsBcBAABCAAQBQJemulated{key}\n"
        "=EMUL\n-----END PGP SIGNATURE-----\n"
    ).encode()


def key_of(signature: bytes | str | None) -> str:
    """The id of the key an armored signature names ("" when none)."""
    if not signature:
        return ""
    text = signature if isinstance(signature, str) else signature.decode("ascii", "replace")
    marker = "emulated"
    start = text.find(marker)
    return text[start + len(marker) : start + len(marker) + 16] if start >= 0 else ""


@dataclass(frozen=True)
class Verification:
    """What GitHub says about a commit's signature."""

    verified: bool
    reason: str
    """REST's reason: `valid`, `unsigned`, `bad_email`, `unknown_key`."""
    signature: str | None
    payload: str | None
    verified_at: datetime | None
    signer: UserRec | None
    """The key's account (GraphQL `signer`): `WEB_FLOW` for GitHub's own key."""
    by_github: bool
    """GraphQL `wasSignedByGitHub`."""
    email: str
    """The email of the signing key (GraphQL `signature.email`)."""

    @property
    def state(self) -> str:
        """GraphQL's `GitSignatureState`."""
        return self.reason.upper()


def verify(st: State, commit: Commit) -> Verification:
    """GitHub's verdict on `commit`'s signature."""
    signature = commit.gpgsig
    if not signature:
        return Verification(False, "unsigned", None, None, None, None, False, "")
    payload = commit.raw_without_sig().decode("utf-8", "replace")
    text = signature.decode("ascii", "replace")
    key = key_of(signature)
    _, committer = person_of(commit.committer)
    if key == GITHUB_KEY_ID:
        owner, email, by_github = WEB_FLOW, GITHUB_EMAIL, True
    else:
        found = next((u for u in st.users.values() if key_id(u) == key), None)
        if found is None:
            return Verification(False, "unknown_key", text, payload, None, None, False, "")
        owner, email, by_github = found, found.email, False
    if committer != email:
        return Verification(False, "bad_email", text, payload, None, owner, by_github, email)
    when = datetime.fromtimestamp(commit.commit_time, tz=UTC)
    return Verification(True, "valid", text, payload, when, owner, by_github, email)
