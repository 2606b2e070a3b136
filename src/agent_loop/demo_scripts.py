"""The replayed model's part in the demo: one episode per agent run, as a model would act.

Each episode is what a capable model does with the real agent's tools: read what it
needs, stage complete files (or sub-issues), submit, and end with a short message; each
verifier reads what it wants to check and ends with its JSON verdict. The bug fix shows
a verifier rejection: the first try has no test, the verifier says so, and the second
try (which starts from the staged fix) adds one.

Tool names and arguments are the agents' contract (`agent_loop_common.staging`, the
builder's and reviewer's read tools, the distiller's lesson tools); the strict
`ScriptedModel` under each episode fails the run if a tool is not offered or a result
does not say what the script expects.
"""

from __future__ import annotations

import json

from agent_loop import demo_code as code
from agent_loop.demo_model import Episode
from agent_loop.demo_project import BUG, FEATURE, SPEC
from agent_loop_common.records import Role
from agent_loop_common.testing import Turn, call, turn

__all__ = [
    "BUG_PR_TITLE",
    "FEATURE_PR_TITLE",
    "FORMAT_PR_TITLE",
    "SUB_ISSUES",
    "builder_episodes",
    "distiller_episode",
    "reviewer_episodes",
]

FEATURE_PR_TITLE = "Add Inventory.total_value()"
BUG_PR_TITLE = "Refuse to remove more stock than there is"
FORMAT_PR_TITLE = "Add the inventory CSV format module"

SUB_ISSUES: dict[str, tuple[str, str, list[str]]] = {
    "csv-format": (
        "Define the inventory CSV format",
        "Add `widgets.csv_format` with the column names `name,quantity,unit_price` in "
        "order and a `check_header(row)` that raises `ValueError` naming line 1 when the "
        "header is wrong. Document the format in the README.\n\n"
        "Acceptance: tests for the columns and for a good and a bad header.",
        [],
    ),
    "csv-export": (
        "Export an inventory to CSV",
        "Add `Inventory.to_csv() -> str` writing the header and one row per item, "
        "sorted by name, in the format of `widgets.csv_format`.\n\n"
        "Acceptance: a round-trip test with two items; an empty inventory is just the header.",
        ["csv-format"],
    ),
    "csv-import": (
        "Import an inventory from CSV",
        "Add `Inventory.from_csv(text) -> Inventory` reading the format of "
        "`widgets.csv_format`; a bad row raises `ValueError` naming its line number.\n\n"
        "Acceptance: tests for a good file, a bad header, a non-numeric quantity.",
        ["csv-format"],
    ),
}
"""The spec's sub-issues: key -> (title, body, depends on)."""


def _verdict(verified: bool, notes: str, checked: str = "") -> Turn:
    verdict = json.dumps({"verified": verified, "notes": notes})
    return turn(f"{checked}\n\n{verdict}".strip())


def _done(text: str) -> Turn:
    return turn(text)


def _feature() -> Episode:
    return Episode(
        name="builder: feature",
        role=Role.BUILDER,
        match=f"Title: {FEATURE.title}",
        agent=[
            turn(
                tool_calls=[
                    call("read_file", path="src/widgets/inventory.py").expecting("class Inventory")
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "stage_file", path="src/widgets/inventory.py", content=code.INVENTORY_TOTAL
                    ).expecting("Staged")
                ]
            ),
            turn(
                tool_calls=[
                    call("stage_file", path="tests/test_inventory.py", content=code.TESTS_TOTAL)
                ]
            ),
            turn(tool_calls=[call("stage_file", path="README.md", content=code.README_TOTAL)]),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title=FEATURE_PR_TITLE,
                        body=(
                            "Adds `Inventory.total_value()`: the sum of quantity x unit price "
                            "over all items, `0.0` for an empty inventory.\n\n"
                            "Tested in `tests/test_inventory.py` (mixed items, empty "
                            "inventory); the README example shows it."
                        ),
                        summary="New Inventory.total_value() with tests and a README example.",
                    ).expecting("Submitted 3 path(s)")
                ]
            ),
            _done("Submitted the implementation of total_value() for verification."),
        ],
        verifier=[
            turn(tool_calls=[call("read_file", path="src/widgets/inventory.py")]),
            _verdict(
                True,
                "total_value() sums quantity x unit price with a 0.0 start, so an empty "
                "inventory gives 0.0; both cases are tested; the README example is right "
                "(7 x 0.25 = 1.75).",
                "Checked the method against the issue and the existing Item fields.",
            ),
        ],
    )


def _bug() -> Episode:
    return Episode(
        name="builder: bug",
        role=Role.BUILDER,
        match=f"Title: {BUG.title}",
        agent=[
            turn(tool_calls=[call("read_file", path="src/widgets/inventory.py")]),
            turn(
                tool_calls=[
                    call(
                        "stage_file",
                        path="src/widgets/inventory.py",
                        content=code.INVENTORY_NO_NEGATIVE,
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title=BUG_PR_TITLE,
                        body=(
                            "`Inventory.remove()` now refuses to take out more than is in "
                            "stock, and an unknown item raises a `ValueError` naming it; "
                            "the stock is unchanged in both cases."
                        ),
                        summary="remove() checks the stock before taking items out.",
                    )
                ]
            ),
            _done("Submitted the fix."),
            # Try 2: the verifier asked for tests; the staged fix is still there.
            turn(
                tool_calls=[
                    call(
                        "stage_file", path="tests/test_inventory.py", content=code.TESTS_NO_NEGATIVE
                    )
                ],
                expect_in_messages="no test",
            ),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title=BUG_PR_TITLE,
                        body=(
                            "`Inventory.remove()` now refuses to take out more than is in "
                            "stock, and an unknown item raises a `ValueError` naming it; "
                            "the stock is unchanged in both cases.\n\n"
                            "Tested in `tests/test_inventory.py`: removing too many keeps "
                            "the stock, removing an unknown item names it."
                        ),
                        summary="remove() checks the stock first; tests for both refusals.",
                    ).expecting("Submitted 2 path(s)")
                ]
            ),
            _done("Submitted the fix with tests."),
        ],
        verifier=[
            _verdict(
                False,
                "The fix in src/widgets/inventory.py is right, but there is no test for it: "
                "add tests in tests/test_inventory.py for removing more than is in stock "
                "(the count must stay 2) and for removing an unknown item.",
            ),
            turn(tool_calls=[call("read_file", path="tests/test_inventory.py")]),
            _verdict(
                True,
                "remove() checks for an unknown item and for too large a quantity before "
                "changing anything; both refusals are tested, including the unchanged count.",
            ),
        ],
    )


def _spec() -> Episode:
    staging = [
        turn(
            tool_calls=[
                call("stage_issue", key=key, title=title, body=body, depends_on=deps).expecting(
                    "Staged sub-issue"
                )
            ]
        )
        for key, (title, body, deps) in SUB_ISSUES.items()
    ]
    return Episode(
        name="builder: spec",
        role=Role.BUILDER,
        match=f"Title: {SPEC.title}",
        agent=[
            turn(tool_calls=[call("list_files")]),
            *staging,
            turn(
                tool_calls=[
                    call(
                        "submit_decomposition",
                        summary=(
                            "First the format, then export and import in parallel: both "
                            "only need the format."
                        ),
                    ).expecting("Submitted 3 sub-issue(s)")
                ]
            ),
            _done("Submitted a decomposition into three sub-issues."),
        ],
        verifier=[
            _verdict(
                True,
                "The three sub-issues cover the format, export and import; each is one "
                "reviewable PR with acceptance criteria; export and import depend only on "
                "the format, so they can run in parallel.",
            ),
        ],
    )


def _csv_format() -> Episode:
    title = SUB_ISSUES["csv-format"][0]
    return Episode(
        name="builder: sub-issue",
        role=Role.BUILDER,
        match=f"Title: {title}",
        agent=[
            turn(tool_calls=[call("list_files", directory="src/widgets")]),
            turn(
                tool_calls=[
                    call("stage_file", path="src/widgets/csv_format.py", content=code.CSV_FORMAT)
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "stage_file", path="tests/test_csv_format.py", content=code.CSV_FORMAT_TESTS
                    )
                ]
            ),
            turn(tool_calls=[call("stage_file", path="README.md", content=code.README_CSV)]),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title=FORMAT_PR_TITLE,
                        body=(
                            "Adds `widgets.csv_format`: the column names and a header "
                            "check that names line 1. The README documents the format.\n\n"
                            "Tested in `tests/test_csv_format.py`."
                        ),
                        summary="The CSV format as a module, documented and tested.",
                    )
                ]
            ),
            _done("Submitted the CSV format module."),
        ],
        verifier=[
            _verdict(
                True,
                "COLUMNS and check_header match the issue; a good and a bad header are "
                "tested; the README documents the format.",
            ),
        ],
    )


def builder_episodes() -> list[Episode]:
    """The builder's runs: feature, bug (rejected once), spec, and the first sub-issue."""
    return [_feature(), _bug(), _spec(), _csv_format()]


def _reviewed_clean(name: str, title: str, look: Turn, reason: str) -> Episode:
    return Episode(
        name=name,
        role=Role.REVIEWER,
        match=f": {title}",
        agent=[
            look,
            turn(tool_calls=[call("no_changes", reason=reason)]),
            _done("Reviewed: no changes needed."),
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
            _done("Submitted the fix for the review comment."),
        ],
        verifier=[
            turn(tool_calls=[call("read_file", path="tests/test_inventory.py")]),
            _verdict(
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
        rejected_run: The builder run whose first try the verifier rejected (no test).
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
                            "Stage the tests together with the change whenever behaviour "
                            "changes: the verifier rejects a fix that comes without a test."
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
                            "Two lessons: tests come with every behaviour change (a "
                            "rejected first try), and money is rounded to cents (a review fix)."
                        ),
                    ).expecting("Finished with 2 edit(s)")
                ]
            ),
            _done("Added two lessons."),
        ],
    )
