"""Invoice arithmetic, to the cent."""


def line_total(quantity, unit_price):
    """quantity × unit_price, rounded to the cent."""
    return round(quantity * unit_price, 2)
