"""Ref-name rules of the emulated GitHub (`git check-ref-format` plus GitHub's own).

The claim protocol creates refs outside `refs/heads` and `refs/tags` (for example
`refs/agent-loop/claims/issue-7`). GitHub's REST API allows that: the documented rule for
`POST /repos/{o}/{r}/git/refs` is only "starts with `refs` and has at least two slashes",
on top of git's own ref-name format. The emulator applies exactly those rules, so a name
it accepts is one GitHub accepts, and a name it rejects fails the same way on GitHub.

GitHub additionally blocks new branch and tag names that begin with `refs/`
(`refs/heads/refs/...`) since March 2023 because they are ambiguous.
"""

from __future__ import annotations

__all__ = ["is_valid_ref_name", "qualify_ref"]

_FORBIDDEN_CHARS = frozenset(" ~^:?*[\\")


def _valid_component(component: str) -> bool:
    return bool(component) and not component.startswith(".") and not component.endswith(".lock")


def is_valid_ref_name(name: str) -> bool:
    """True when `name` is a fully qualified ref GitHub's API would create.

    Rules (git-check-ref-format(1) and GitHub's REST docs): begins with `refs/` and has
    at least two slashes; no empty component, no component starting with `.` or ending
    with `.lock`; no `..`, no `@{`, no control characters, space, `~ ^ : ? * [ \\`; does
    not end with `/` or `.`; is not `@`. Branches and tags may not start with `refs/`.
    """
    if not name.startswith("refs/") or name.count("/") < 2:
        return False
    if ".." in name or "@{" in name or name.endswith((".", "/")) or name == "@":
        return False
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F or ch in _FORBIDDEN_CHARS for ch in name):
        return False
    if not all(_valid_component(part) for part in name.split("/")):
        return False
    return not name.startswith(("refs/heads/refs/", "refs/tags/refs/"))


def qualify_ref(ref: str) -> str:
    """The full ref name for a path-style ref (`heads/main` -> `refs/heads/main`).

    GitHub's `GET /git/ref/{ref}` and `PATCH /git/refs/{ref}` take the name without the
    leading `refs/`; a caller that passes it anyway (`refs/heads/main`) does not find the
    ref on GitHub, which this mirrors by producing `refs/refs/heads/main`.
    """
    return f"refs/{ref}"
