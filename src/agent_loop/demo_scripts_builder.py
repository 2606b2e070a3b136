"""The replayed model's builder episodes in the demo, and the helpers every episode uses.

See `demo_scripts` for what the episodes are and why they look the way they do.
"""

from __future__ import annotations

import json

from agent_loop import demo_code as code
from agent_loop.demo_model import Episode
from agent_loop.demo_project import BUG, FEATURE, SPEC
from agent_loop_common.records import Role
from agent_loop_testing import Turn, call, turn

__all__ = [
    "BUG_PR_TITLE",
    "FEATURE_PR_TITLE",
    "FORMAT_PR_TITLE",
    "SUB_ISSUES",
    "builder_episodes",
    "done",
    "verdict",
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


def verdict(verified: bool, notes: str, checked: str = "") -> Turn:
    """A verifier's final answer: optional prose, then the JSON verdict."""
    verdict = json.dumps({"verified": verified, "notes": notes})
    return turn(f"{checked}\n\n{verdict}".strip())


def done(text: str) -> Turn:
    """An agent's short final message after submitting."""
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
            done("Submitted the implementation of total_value() for verification."),
        ],
        verifier=[
            turn(tool_calls=[call("read_file", path="src/widgets/inventory.py")]),
            verdict(
                True,
                "total_value() sums quantity x unit price with a 0.0 start, so an empty "
                "inventory gives 0.0; both cases are tested; the README example is right "
                "(7 x 0.25 = 1.75).",
                "Checked the method against the issue and the existing Item fields.",
            ),
        ],
    )


def _bug() -> Episode:
    body = (
        "`Inventory.remove()` now refuses to take out more than is in stock, and an "
        "unknown item raises a `ValueError` naming it; the stock is unchanged in both "
        "cases.\n\nTested in `tests/test_inventory.py`: removing too many keeps the "
        "stock, removing all of it leaves zero, removing an unknown item names it."
    )
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
                        content=code.INVENTORY_NO_NEGATIVE_OFF_BY_ONE,
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "stage_file", path="tests/test_inventory.py", content=code.TESTS_NO_NEGATIVE
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title=BUG_PR_TITLE,
                        body=body,
                        summary="remove() checks the stock first; tests for each case.",
                    )
                ]
            ),
            done("Submitted the fix with tests."),
            # Try 2: the tests rejected try 1 (the verifier was not asked); the failing
            # test and its output came back as the notes. The staged files are kept.
            turn(
                tool_calls=[
                    call(
                        "stage_file",
                        path="src/widgets/inventory.py",
                        content=code.INVENTORY_NO_NEGATIVE,
                    )
                ],
                expect_in_messages=["test_remove_all_of_it", "only 2 'bolt' in stock"],
            ),
            turn(
                tool_calls=[
                    call("run_tests", args=["-k", "remove"]).expecting(
                        "Tests on your staged change: exit 0"
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title=BUG_PR_TITLE,
                        body=body,
                        summary="remove() checks the stock first; tests for each case.",
                    ).expecting("Submitted 2 path(s)")
                ]
            ),
            done("Fixed the boundary: removing exactly what is in stock works again."),
        ],
        verifier=[
            turn(
                tool_calls=[call("read_file", path="tests/test_inventory.py")],
                expect_in_messages=["Checked by the pipeline", "Fail-to-pass"],
            ),
            verdict(
                True,
                "remove() checks for an unknown item and for too large a quantity before "
                "changing anything; the three new tests fail on the base and pass now, "
                "and the old ones still pass.",
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
            done("Submitted a decomposition into three sub-issues."),
        ],
        verifier=[
            verdict(
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
            done("Submitted the CSV format module."),
        ],
        verifier=[
            verdict(
                True,
                "COLUMNS and check_header match the issue; a good and a bad header are "
                "tested; the README documents the format.",
            ),
        ],
    )


def builder_episodes() -> list[Episode]:
    """The builder's runs: feature, bug (rejected once), spec, and the first sub-issue."""
    return [_feature(), _bug(), _spec(), _csv_format()]
