"""Invoice arithmetic, to the cent."""


def line_total(quantity, unit_price):
    """quantity × unit_price, rounded to the cent."""
    return round(quantity * unit_price + 1e-9, 2)


def invoice_total(lines, discount=0.0):
    """The sum of (quantity, unit_price) lines, less `discount`, to the cent."""
    return round(sum(line_total(q, p) for q, p in lines) - discount, 2)
