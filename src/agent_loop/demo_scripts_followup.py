"""The replayed model's reviewer and distiller episodes in the demo (see `demo_scripts`).

These episodes are built once the story has reached them, because they quote ids that
exist only then: the owner's review comment (the reviewer's reply answers it by id) and
the run ids the distiller cites as each lesson's evidence.
"""

from __future__ import annotations

from agent_loop import demo_code as code
from agent_loop.demo_model import Episode
from agent_loop.demo_scripts_builder import (
    BUG_PR_TITLE,
    FEATURE_PR_TITLE,
    FORMAT_PR_TITLE,
    done,
    verdict,
)
from agent_loop_common.records import Role
from agent_loop_testing import Turn, call, turn

__all__ = ["distiller_episode", "reviewer_episodes"]


def _reviewed_clean(name: str, title: str, look: Turn, reason: str) -> Episode:
    return Episode(
        name=name,
        role=Role.REVIEWER,
        match=f": {title}",
        agent=[
            look,
            turn(tool_calls=[call("no_changes", reason=reason)]),
            done("Reviewed: no changes needed."),
        ],
    )


def _review_fix(comment_id: int) -> Episode:
    return Episode(
        name="reviewer: fix",
        role=Role.REVIEWER,
        match=f": {FEATURE_PR_TITLE}",
        agent=[
            turn(tool_calls=[call("get_diff").expecting("total_value")]),
            turn(tool_calls=[call("list_feedback").expecting(str(comment_id))]),
            turn(
                tool_calls=[
                    call(
                        "stage_file",
                        path="src/widgets/inventory.py",
                        content=code.INVENTORY_TOTAL_ROUNDED,
                    ).expecting("Staged")
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "stage_file",
                        path="tests/test_inventory.py",
                        content=code.TESTS_TOTAL_ROUNDED,
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "submit_fix",
                        summary=(
                            "total_value() rounds to cents, as the review asked; a new test "
                            "covers 3 x 0.1 = 0.3."
                        ),
                        replies=[
                            {
                                "comment_id": comment_id,
                                "reply": (
                                    "Done: total_value() now rounds the sum to cents, and "
                                    "test_total_value_is_rounded_to_cents checks 3 x 0.1 == 0.3."
                                ),
                            }
                        ],
                    ).expecting("Submitted a fix")
                ]
            ),
            done("Submitted the fix for the review comment."),
        ],
        verifier=[
            turn(tool_calls=[call("read_file", path="tests/test_inventory.py")]),
            verdict(
                True,
                "The comment asked for rounding to cents and a test: total_value() rounds "
                "with round(total, 2) and the new test checks 3 x 0.1; the reply says so "
                "accurately; nothing else changed.",
            ),
        ],
    )


def reviewer_episodes(comment_id: int) -> list[Episode]:
    """The reviewer's runs; `comment_id` is the owner's inline comment on the feature PR.

    Every agent PR gets a review: the commented one a fix and a reply, the others a
    clean review after reading their change.
    """
    return [
        _review_fix(comment_id),
        _reviewed_clean(
            "reviewer: bug PR",
            BUG_PR_TITLE,
            turn(tool_calls=[call("get_diff").expecting("cannot remove")]),
            "Reviewed the fix and its tests: remove() refuses a too-large or unknown removal "
            "before changing the stock, and both refusals are tested. Nothing to change.",
        ),
        _reviewed_clean(
            "reviewer: CSV PR",
            FORMAT_PR_TITLE,
            turn(tool_calls=[call("read_file", path="src/widgets/csv_format.py")]),
            "Reviewed the format module, its tests and the README section: they match the "
            "sub-issue. Nothing to change.",
        ),
    ]


def distiller_episode(*, rejected_run: str, review_fix_run: str) -> Episode:
    """The distiller's pass: two lessons, each backed by the run it was learned from.

    Args:
        rejected_run: The builder run whose first try the tests rejected (an off-by-one).
        review_fix_run: The reviewer run that answered the owner's rounding comment.
    """
    return Episode(
        name="distiller: lessons",
        role=Role.DISTILLER,
        match="",
        agent=[
            turn(tool_calls=[call("read_record", run_id=rejected_run).expecting("REJECTED")]),
            turn(
                tool_calls=[
                    call(
                        "add_lesson",
                        text=(
                            "Test the boundary of every new check (exactly the amount in "
                            "stock, not only more): an off-by-one in remove() failed the tests."
                        ),
                        evidence_run_ids=[rejected_run],
                        roles=["builder"],
                    ).expecting("Added")
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "add_lesson",
                        text=(
                            "Round money sums to cents and test a float case such as "
                            "3 x 0.1; the owner asked for it in review."
                        ),
                        evidence_run_ids=[review_fix_run],
                        roles=[],
                    ).expecting("Added")
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "finish",
                        summary=(
                            "Two lessons: test the boundary of every new check (a first try "
                            "the tests rejected), and money is rounded to cents (a review fix)."
                        ),
                    ).expecting("Finished with 2 edit(s)")
                ]
            ),
            done("Added two lessons."),
        ],
    )
