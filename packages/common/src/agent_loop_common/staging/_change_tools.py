"""Staging tools for a change: plain async functions closed over a `ChangeStage`.

The Agent turns each function's signature and the first paragraph of its docstring into
the tool schema the model sees, so those are written for the model. The names and
arguments are a contract with the builder and reviewer prompts: keep them.

The tools are in-process and deliberately not `@flyte.trace`d: a replayed trace returns
the recorded result without running the body, which would skip the effect on the stage.
A refused call returns a message starting with `REFUSAL_PREFIX` instead of raising, so
the model can correct itself within the same run.

The policy alone sees strings; the tools also look at the base branch through two
read-only lookups, so that a change never replaces a directory with a file (which would
delete everything in it) or a file with a directory. Wire both:

```python
tools = implementation_tools(
    stage,
    policy,
    exists_at_base=snapshot.exists,  # async (path) -> bool: a file at the base?
    is_dir_at_base=directory_lookup(snapshot.paths),  # from the base's file listing
    text_at_base=snapshot.text,  # async (path) -> str | None: for edit_file
)
```
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import Annotated, cast

from pydantic import Field, ValidationError

from agent_loop_common.staging._errors import PolicyViolation, StagingError
from agent_loop_common.staging._fields import (
    REFUSAL_PREFIX,
    REOPENED_NOTE,
    StagingTool,
    checked_text,
    decline_tool,
    refused,
)
from agent_loop_common.staging._paths import ancestors
from agent_loop_common.staging._plans import Reply
from agent_loop_common.staging._policy import StagingPolicy
from agent_loop_common.staging._stages import ChangeStage

__all__ = [
    "ExistsAtBase",
    "IsDirAtBase",
    "StagingTool",
    "TextAtBase",
    "change_tools",
    "directory_lookup",
    "fix_tools",
    "implementation_tools",
]

ExistsAtBase = Callable[[str], Awaitable[bool]]
"""Whether a normalized path is a file on the base branch (a read-only repository lookup)."""

IsDirAtBase = Callable[[str], Awaitable[bool]]
"""Whether a normalized path is a directory on the base branch (a read-only lookup)."""

TextAtBase = Callable[[str], Awaitable[str | None]]
"""A normalized path's text on the base branch; `None` when it is no text file there."""


def directory_lookup(list_files: Callable[[], Awaitable[Iterable[str]]]) -> IsDirAtBase:
    """An `is_dir_at_base` built from the base branch's file listing.

    git stores no empty directories, so the directories of a commit are exactly the
    paths above its files. `list_files` (e.g. a snapshot's cached `paths()`) is awaited
    once, on the first lookup.
    """
    dirs: set[str] | None = None

    async def is_dir_at_base(path: str) -> bool:
        nonlocal dirs
        if dirs is None:
            dirs = {above for file in await list_files() for above in ancestors(file)}
        return path in dirs

    return is_dir_at_base


RepoPath = Annotated[
    str, Field(description="Path relative to the repository root, e.g. 'src/pkg/module.py'.")
]
FileContent = Annotated[
    str, Field(description="The complete new file content (not a diff or an excerpt).")
]
OldText = Annotated[
    str,
    Field(
        description=(
            "The exact text to replace, copied from the file with its whitespace and "
            "indentation, and long enough (a few whole lines) to occur only once."
        )
    ),
]
NewText = Annotated[str, Field(description="The text that replaces it ('' removes it).")]
Title = Annotated[str, Field(description="Pull request title: one line, imperative, specific.")]
Body = Annotated[
    str,
    Field(description="Pull request body in Markdown: what changed and why, how it was tested."),
]
Summary = Annotated[str, Field(description="A few sentences on what changed and why.")]
Replies = Annotated[
    list[Reply],
    Field(description="One entry per feedback comment this fix addresses; [] when there are none."),
]


async def _unchanged(stage: ChangeStage, text_at_base: TextAtBase | None) -> str | None:
    """A refusal when every staged file already has its base content (submitting would
    commit nothing: a pull request with no change), else `None`. Without a base lookup,
    or with a deletion staged (`delete_file` checked the file exists), it is a change."""
    if text_at_base is None or not stage.files:
        return None
    for path, content in stage.files.items():
        if content is None or await text_at_base(path) != content:
            return None
    return (
        f"{REFUSAL_PREFIX}every staged file is identical to the base branch "
        f"({', '.join(sorted(stage.files))}): submitting would change nothing. Stage the "
        "change, or, if nothing needs changing, decline and say why."
    )


def change_tools(
    stage: ChangeStage,
    policy: StagingPolicy,
    *,
    exists_at_base: ExistsAtBase | None = None,
    is_dir_at_base: IsDirAtBase | None = None,
    text_at_base: TextAtBase | None = None,
) -> list[StagingTool]:
    """`stage_file`, `edit_file`, `unstage_file` and `delete_file` over `stage`, checked
    by `policy`.

    `edit_file` stages a whole file too: the file (the staged version, else the base
    branch's) with one exact, unique piece of text replaced. A small change to a large
    file then costs the model a few lines of output instead of the whole file, and the
    conversation does not carry the whole file in every later turn; the stage, the
    verifier and the commit see the complete content as with `stage_file`.

    Args:
        stage: Where the staged files accumulate; the pipeline reads it afterwards.
        policy: Path and content limits.
        exists_at_base: Optional lookup of the files on the base branch. `delete_file`
            refuses a path that does not exist (a commit deleting a missing path fails),
            and `stage_file` refuses a path below an existing file (that would replace
            the file with a directory) unless the file's deletion is staged.
        is_dir_at_base: Optional lookup of the directories on the base branch (see
            `directory_lookup`): `stage_file` and `delete_file` refuse a directory, as a
            file written there would replace, and a deletion remove, everything in it.
            `None` skips the lookup while staging; protected trees are still refused by
            the policy, and `GitHub.commit_files` still refuses such a change when it is
            applied, but only after the agent and the verifier spent their work on it.
        text_at_base: Optional reader of a file's text on the base branch, for
            `edit_file` on a file not staged yet; `None`: only staged files can be edited.
    """

    async def base_conflict(norm: str) -> str | None:
        """Why `norm` cannot be a file given the base branch, or `None`."""
        if is_dir_at_base is not None and await is_dir_at_base(norm):
            return (
                f"{REFUSAL_PREFIX}'{norm}' is a directory on the base branch; a file there "
                "would replace everything in it. Stage or delete the files inside it one "
                "by one."
            )
        if exists_at_base is not None:
            for above in ancestors(norm):
                if stage.files.get(above, "") is not None and await exists_at_base(above):
                    return (
                        f"{REFUSAL_PREFIX}'{above}' is a file on the base branch, so "
                        f"'{norm}' cannot be created inside it. Choose another path."
                    )
        return None

    async def stage_file(path: RepoPath, content: FileContent) -> str:
        """Stage the complete new content of one file, creating it or replacing it. Call it once per file; staging the same path again replaces the earlier content. Nothing is written to the repository until the change is submitted and verified."""
        return await put(path, content, "Staged")

    async def put(path: str, content: str, verb: str) -> str:
        was = stage.status
        try:
            norm = policy.check_write(path, content, stage.files)
        except StagingError as exc:
            return refused(exc)
        conflict = await base_conflict(norm)
        if conflict is not None:
            return conflict
        stage.put(norm, content)
        size = len(content.encode("utf-8"))
        note = REOPENED_NOTE if was != "open" else ""
        return f"{verb} {norm} ({size} bytes). {len(stage.files)} path(s) staged.{note}"

    async def edit_file(path: RepoPath, old_text: OldText, new_text: NewText) -> str:
        """Change part of an existing file: replace one exact occurrence of old_text in it (your staged version if the file is staged, else the base branch's) with new_text, and stage the whole result. Use it instead of stage_file for a change to part of a file; read_file first and copy old_text exactly."""
        try:
            norm = policy.check_path(path)
        except StagingError as exc:
            return refused(exc)
        if norm in stage.files:
            current, origin = stage.files[norm], "your staged version"
            if current is None:
                return f"{REFUSAL_PREFIX}'{norm}' is staged for deletion; unstage_file it first."
        else:
            current, origin = (
                (await text_at_base(norm) if text_at_base else None),
                "the base branch",
            )
            if current is None:
                return (
                    f"{REFUSAL_PREFIX}'{norm}' is not a text file on the base branch or in "
                    "your stage; create a file with stage_file."
                )
        if not old_text:
            return f"{REFUSAL_PREFIX}old_text is empty; copy the lines to replace from read_file."
        found = current.count(old_text)
        if found != 1:
            why = (
                "does not occur in it; read_file shows the exact text (copy it with its "
                "whitespace and indentation)"
                if found == 0
                else f"occurs {found} times in it; include more of the surrounding lines "
                "so that it occurs once"
            )
            return f"{REFUSAL_PREFIX}old_text {why} ({norm}, {origin}). Nothing was staged."
        removed, added = old_text.count("\n") + 1, new_text.count("\n") + 1 if new_text else 0
        done = await put(norm, current.replace(old_text, new_text, 1), "Staged")
        if done.startswith(REFUSAL_PREFIX):
            return done
        return f"Edited {norm} ({origin}): {removed} line(s) replaced by {added}. {done}"

    async def unstage_file(path: RepoPath) -> str:
        """Drop one path from the stage (a staged file or a staged deletion), so the change leaves that file as it is on the base branch."""
        was = stage.status
        try:
            norm = policy.check_path(path)
        except StagingError as exc:
            return refused(exc)
        if not stage.remove(norm):
            staged = ", ".join(sorted(stage.files)) or "nothing"
            return f"{REFUSAL_PREFIX}'{norm}' is not staged. Staged paths: {staged}."
        note = REOPENED_NOTE if was != "open" else ""
        return f"Unstaged {norm}. {len(stage.files)} path(s) staged.{note}"

    async def delete_file(path: RepoPath) -> str:
        """Stage the deletion of one existing file from the repository."""
        was = stage.status
        try:
            norm = policy.check_delete(path, stage.files)
        except StagingError as exc:
            return refused(exc)
        if is_dir_at_base is not None and await is_dir_at_base(norm):
            return (
                f"{REFUSAL_PREFIX}'{norm}' is a directory on the base branch; delete the "
                "files inside it one by one."
            )
        if exists_at_base is not None and not await exists_at_base(norm):
            if stage.files.get(norm) is not None:
                stage.remove(norm)
                return f"Unstaged new file {norm}: it does not exist on the base branch, so nothing is left to delete."
            return f"{REFUSAL_PREFIX}'{norm}' does not exist on the base branch; there is nothing to delete."
        stage.delete(norm)
        note = REOPENED_NOTE if was != "open" else ""
        return f"Staged deletion of {norm}. {len(stage.files)} path(s) staged.{note}"

    return [stage_file, edit_file, unstage_file, delete_file]


def implementation_tools(
    stage: ChangeStage,
    policy: StagingPolicy,
    *,
    exists_at_base: ExistsAtBase | None = None,
    is_dir_at_base: IsDirAtBase | None = None,
    text_at_base: TextAtBase | None = None,
    include_skip: bool = True,
) -> list[StagingTool]:
    """The builder's change tools: `change_tools` plus `submit_implementation` and `skip_issue`.

    `exists_at_base`, `is_dir_at_base` and `text_at_base` are the base-branch lookups of
    `change_tools`.
    Pass `include_skip=False` when `skip_issue` comes from `decomposition_tools` instead
    (an agent may offer both toolsets, but a tool name can be registered once).
    """

    async def submit_implementation(title: Title, body: Body, summary: Summary) -> str:
        """Submit the staged files as the implementation of the issue, with the pull request title, body and a short summary. Call it once, after every file is staged; then reply with a short final message."""
        if (unchanged := await _unchanged(stage, text_at_base)) is not None:
            return unchanged
        try:
            plan = stage.submit(
                title=checked_text("title", title, policy.max_title_chars, single_line=True),
                body=checked_text("body", body, policy.max_body_chars, required=False),
                summary=checked_text("summary", summary, policy.max_body_chars),
            )
        except StagingError as exc:
            return refused(exc)
        return (
            f"Submitted {len(plan.files)} path(s): {', '.join(sorted(plan.files))}. It goes to "
            "verification next. Reply with a short final message; do not call more tools."
        )

    tools = [
        *change_tools(
            stage,
            policy,
            exists_at_base=exists_at_base,
            is_dir_at_base=is_dir_at_base,
            text_at_base=text_at_base,
        ),
        submit_implementation,
    ]
    if include_skip:
        tools.append(decline_tool(stage, policy, "skip_issue"))
    return tools


def fix_tools(
    stage: ChangeStage,
    policy: StagingPolicy,
    *,
    exists_at_base: ExistsAtBase | None = None,
    is_dir_at_base: IsDirAtBase | None = None,
    text_at_base: TextAtBase | None = None,
    known_comment_ids: Collection[int] | None = None,
) -> list[StagingTool]:
    """The reviewer's tools: `change_tools` plus `submit_fix` and `no_changes`.

    Args:
        stage: Where the fix accumulates.
        policy: Path, content and text limits.
        exists_at_base: See `change_tools`.
        is_dir_at_base: See `change_tools`.
        text_at_base: See `change_tools`.
        known_comment_ids: When given, replies may only answer these comment ids (the
            feedback shown to the model), so a reply cannot land anywhere else.
    """

    async def submit_fix(summary: Summary, replies: Replies) -> str:
        """Submit the staged files as the fix for this pull request, with a summary and one reply per feedback comment addressed (comment_id and reply text). Call it once, after every file is staged; then reply with a short final message."""
        if (unchanged := await _unchanged(stage, text_at_base)) is not None:
            return unchanged
        try:
            checked = _checked_replies(replies, policy, known_comment_ids)
            plan = stage.submit(
                summary=checked_text("summary", summary, policy.max_body_chars),
                replies=checked,
            )
        except StagingError as exc:
            return refused(exc)
        return (
            f"Submitted a fix touching {len(plan.files)} path(s) with {len(plan.replies)} "
            "reply(ies). It goes to verification next. Reply with a short final message; do "
            "not call more tools."
        )

    return [
        *change_tools(
            stage,
            policy,
            exists_at_base=exists_at_base,
            is_dir_at_base=is_dir_at_base,
            text_at_base=text_at_base,
        ),
        submit_fix,
        decline_tool(stage, policy, "no_changes"),
    ]


def _checked_replies(
    replies: object, policy: StagingPolicy, known: Collection[int] | None
) -> list[Reply]:
    if not isinstance(replies, list):
        raise PolicyViolation(
            "replies must be a list of {comment_id, reply} objects; use [] for none."
        )
    out: list[Reply] = []
    seen: set[int] = set()
    for raw in cast(list[object], replies):
        try:
            item = Reply.model_validate(raw)
        except ValidationError as exc:
            raise PolicyViolation(
                f"each reply needs an integer comment_id and a reply text: {exc.errors()[0]['msg']}."
            ) from None
        if item.comment_id in seen:
            raise PolicyViolation(
                f"comment {item.comment_id} has two replies; merge them into one."
            )
        if known is not None and item.comment_id not in known:
            ids = ", ".join(str(i) for i in sorted(known)) or "none"
            raise PolicyViolation(
                f"comment_id {item.comment_id} is not one of the feedback comments shown to you (ids: {ids})."
            )
        seen.add(item.comment_id)
        text = checked_text(
            f"the reply to comment {item.comment_id}", item.reply, policy.max_body_chars
        )
        out.append(Reply(comment_id=item.comment_id, reply=text))
    return out
