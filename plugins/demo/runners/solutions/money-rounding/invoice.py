"""Invoice arithmetic, to the cent.

Amounts are computed in Decimal from each float's shortest repr, so 2.675 means 2.675 and
not the binary float just below it; rounding is half up (away from zero) to the cent.
"""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def _cents(amount):
    return float(amount.quantize(CENT, rounding=ROUND_HALF_UP))


def _decimal(number):
    return Decimal(str(number))


def line_total(quantity, unit_price):
    """quantity × unit_price, rounded half up to the cent."""
    return _cents(_decimal(quantity) * _decimal(unit_price))


def invoice_total(lines, discount=0.0):
    """The sum of (quantity, unit_price) lines, less `discount`, to the cent."""
    total = sum((_decimal(line_total(q, p)) for q, p in lines), Decimal(0))
    return _cents(total - _decimal(discount))
