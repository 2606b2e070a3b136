"""The code the replayed model stages in the demo: complete files, as a model would send.

Kept apart from the scripts so the scripts read as the conversation (which tool, why)
and this module as the work (what the files say). Every version is real code: at each
PR's head the sample project's tests pass, and the one first try that breaks a test
(`INVENTORY_NO_NEGATIVE_OFF_BY_ONE`) is caught by running them.
"""

from __future__ import annotations

from agent_loop.demo_project import FILES

__all__ = [
    "CSV_FORMAT",
    "CSV_FORMAT_TESTS",
    "INVENTORY_NO_NEGATIVE",
    "INVENTORY_NO_NEGATIVE_OFF_BY_ONE",
    "INVENTORY_TOTAL",
    "INVENTORY_TOTAL_ROUNDED",
    "README_CSV",
    "README_TOTAL",
    "TESTS_NO_NEGATIVE",
    "TESTS_TOTAL",
    "TESTS_TOTAL_ROUNDED",
]

_INVENTORY = FILES["src/widgets/inventory.py"]
_TESTS = FILES["tests/test_inventory.py"]
_README = FILES["README.md"]

_COUNT = '''
    def count(self, name: str) -> int:
        """How many of `name` are in stock (0 for an unknown item)."""
        item = self.items.get(name)
        return item.quantity if item else 0
'''

INVENTORY_TOTAL = _INVENTORY.replace(
    _COUNT,
    _COUNT
    + '''
    def total_value(self) -> float:
        """What the stock is worth: quantity x unit price, summed over every item."""
        return sum((item.quantity * item.unit_price for item in self.items.values()), 0.0)
''',
)

INVENTORY_TOTAL_ROUNDED = INVENTORY_TOTAL.replace(
    '''        """What the stock is worth: quantity x unit price, summed over every item."""
        return sum((item.quantity * item.unit_price for item in self.items.values()), 0.0)
''',
    '''        """What the stock is worth in cents-rounded currency: quantity x unit price, summed."""
        total = sum((item.quantity * item.unit_price for item in self.items.values()), 0.0)
        return round(total, 2)
''',
)

TESTS_TOTAL = (
    _TESTS
    + """

def test_total_value():
    stock = Inventory()
    stock.add("bolt", 10, unit_price=0.25)
    stock.add("nut", 4, unit_price=0.5)
    assert stock.total_value() == 4.5


def test_total_value_of_an_empty_inventory():
    assert Inventory().total_value() == 0.0
"""
)

TESTS_TOTAL_ROUNDED = (
    TESTS_TOTAL
    + """

def test_total_value_is_rounded_to_cents():
    stock = Inventory()
    stock.add("washer", 3, unit_price=0.1)
    assert stock.total_value() == 0.3
"""
)

README_TOTAL = _README.replace(
    'stock.count("bolt")  # 7\n',
    'stock.count("bolt")  # 7\nstock.total_value()  # 1.75: quantity x unit price over all items\n',
)

INVENTORY_NO_NEGATIVE = _INVENTORY.replace(
    '''    def remove(self, name: str, quantity: int) -> None:
        """Take stock out."""
        self.items[name].quantity -= quantity
''',
    '''    def remove(self, name: str, quantity: int) -> None:
        """Take stock out; never more than is in stock (the stock is then unchanged)."""
        item = self.items.get(name)
        if item is None:
            raise ValueError(f"no {name!r} in stock")
        if quantity > item.quantity:
            raise ValueError(f"only {item.quantity} {name!r} in stock, cannot remove {quantity}")
        item.quantity -= quantity
''',
)

INVENTORY_NO_NEGATIVE_OFF_BY_ONE = INVENTORY_NO_NEGATIVE.replace(
    "if quantity > item.quantity:", "if quantity >= item.quantity:"
)
"""The bug fix's first try: it also refuses to take out exactly what is in stock."""

TESTS_NO_NEGATIVE = (
    _TESTS.replace(
        "from widgets import Inventory\n", "import pytest\n\nfrom widgets import Inventory\n"
    )
    + """

def test_remove_more_than_in_stock_is_refused():
    stock = Inventory()
    stock.add("bolt", 2, unit_price=0.1)
    with pytest.raises(ValueError, match="only 2"):
        stock.remove("bolt", 5)
    assert stock.count("bolt") == 2


def test_remove_all_of_it():
    stock = Inventory()
    stock.add("bolt", 2, unit_price=0.1)
    stock.remove("bolt", 2)
    assert stock.count("bolt") == 0


def test_remove_unknown_item_names_it():
    with pytest.raises(ValueError, match="'nut'"):
        Inventory().remove("nut", 1)
"""
)

CSV_FORMAT = '''\
"""The inventory CSV format: a header row, then one item per row.

```text
name,quantity,unit_price
bolt,10,0.25
```

`name` is text, `quantity` a whole number above zero, `unit_price` a decimal number.
"""

from __future__ import annotations

COLUMNS: tuple[str, ...] = ("name", "quantity", "unit_price")
"""The header row, in order."""


def check_header(row: list[str]) -> None:
    """Raise `ValueError` unless `row` is exactly the header."""
    if tuple(cell.strip() for cell in row) != COLUMNS:
        raise ValueError(f"line 1: expected the header {','.join(COLUMNS)}, got {','.join(row)}")
'''

CSV_FORMAT_TESTS = """\
import pytest

from widgets.csv_format import COLUMNS, check_header


def test_columns():
    assert COLUMNS == ("name", "quantity", "unit_price")


def test_check_header_accepts_the_header():
    check_header(["name", " quantity", "unit_price "])


def test_check_header_names_line_1():
    with pytest.raises(ValueError, match="line 1"):
        check_header(["name", "qty"])
"""

README_CSV = _README + (
    "\n## CSV format\n\n"
    "Inventories move in and out of spreadsheets as CSV: a header row "
    "`name,quantity,unit_price`, then one item per row (see `widgets.csv_format`).\n"
)
