"""The demo's sample project: a tiny Python package with a test, and its owner's issues.

`acme/widgets` holds a small stock inventory. The owner files three issues, one of each
kind the builder handles: a feature request, a bug report, and a specification too big
for one pull request. Later the owner reviews the feature PR with one inline comment.
The replayed model's scripts (`demo_scripts`) answer exactly these texts, and the code
they stage is real: each PR's tests pass at its head.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BUG",
    "FEATURE",
    "FILES",
    "REVIEW_COMMENT",
    "SPEC",
    "SeedIssue",
]


@dataclass(frozen=True)
class SeedIssue:
    """An issue the owner files."""

    key: str
    title: str
    body: str


FILES: dict[str, str] = {
    "README.md": """\
# widgets

A tiny stock inventory.

```python
from widgets import Inventory

stock = Inventory()
stock.add("bolt", 10, unit_price=0.25)
stock.remove("bolt", 3)
stock.count("bolt")  # 7
```

Run the tests with `python -m pytest`.
""",
    "pyproject.toml": """\
[project]
name = "widgets"
version = "0.1.0"
requires-python = ">=3.11"

[tool.pytest.ini_options]
pythonpath = ["src"]
""",
    "src/widgets/__init__.py": '''\
"""widgets: a tiny stock inventory."""

from widgets.inventory import Inventory, Item

__all__ = ["Inventory", "Item"]
''',
    "src/widgets/inventory.py": '''\
"""A stock inventory: item names mapped to quantities and unit prices."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Item:
    """One kind of item in stock."""

    name: str
    quantity: int
    unit_price: float


@dataclass
class Inventory:
    """Items in stock, by name."""

    items: dict[str, Item] = field(default_factory=dict)

    def add(self, name: str, quantity: int, unit_price: float) -> None:
        """Add stock; a known item keeps its price and gains quantity."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        if name in self.items:
            self.items[name].quantity += quantity
        else:
            self.items[name] = Item(name, quantity, unit_price)

    def remove(self, name: str, quantity: int) -> None:
        """Take stock out."""
        self.items[name].quantity -= quantity

    def count(self, name: str) -> int:
        """How many of `name` are in stock (0 for an unknown item)."""
        item = self.items.get(name)
        return item.quantity if item else 0
''',
    "tests/test_inventory.py": """\
from widgets import Inventory


def test_add_and_count():
    stock = Inventory()
    stock.add("bolt", 10, unit_price=0.25)
    stock.add("bolt", 5, unit_price=0.25)
    assert stock.count("bolt") == 15
    assert stock.count("nut") == 0


def test_remove():
    stock = Inventory()
    stock.add("bolt", 10, unit_price=0.25)
    stock.remove("bolt", 3)
    assert stock.count("bolt") == 7
""",
}
"""The default branch of `acme/widgets` at the start of the demo."""

FEATURE = SeedIssue(
    key="feature",
    title="Add Inventory.total_value()",
    body="""\
As a shop owner I want to know what my stock is worth.

Add `Inventory.total_value()` that returns the sum of quantity x unit price over all
items, and `0.0` for an empty inventory. Please add tests.
""",
)

BUG = SeedIssue(
    key="bug",
    title="Inventory.remove() lets stock go negative",
    body="""\
Steps: `stock.add("bolt", 2, unit_price=0.1)` then `stock.remove("bolt", 5)`.

Expected: a `ValueError`, and the stock stays at 2.
Actual: `stock.count("bolt")` is -3.

Removing an unknown item raises a bare `KeyError` today; it should be a `ValueError`
that names the item as well.
""",
)

SPEC = SeedIssue(
    key="spec",
    title="Spec: CSV import and export",
    body="""\
We want to move inventories in and out of spreadsheets.

- A documented CSV format: a header row `name,quantity,unit_price`, one item per row.
- Export: `Inventory` -> CSV text in that format, items sorted by name.
- Import: CSV text -> `Inventory`; a bad row is rejected with a `ValueError` naming its
  line number.

This is too big for one pull request: split it into sub-issues that can be reviewed
one at a time (export and import can be built in parallel once the format exists).
""",
)

REVIEW_COMMENT = (
    "total_value() returns 0.30000000000000004 for 3 items at 0.1. Please round the "
    "result to cents and add a test for it."
)
"""The owner's inline review comment on the feature PR (the first line the PR adds to the test file)."""
