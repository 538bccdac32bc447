import unittest

from invoice import invoice_total, line_total


class LineTotalTest(unittest.TestCase):
    def test_whole_cents(self):
        self.assertEqual(line_total(3, 1.25), 3.75)

    def test_half_cents_round_up(self):
        self.assertEqual(line_total(1, 2.675), 2.68)
        self.assertEqual(line_total(1, 1.005), 1.01)
        self.assertEqual(line_total(1, 0.125), 0.13)

    def test_refunds_mirror_sales(self):
        self.assertEqual(line_total(-1, 2.675), -2.68)

    def test_result_is_a_float(self):
        self.assertIsInstance(line_total(2, 0.5), float)


class InvoiceTotalTest(unittest.TestCase):
    def test_sum_of_lines(self):
        self.assertEqual(invoice_total([(1, 2.675), (2, 1.50)]), 5.68)

    def test_discount(self):
        self.assertEqual(invoice_total([(1, 10.0)], discount=2.5), 7.5)


if __name__ == "__main__":
    unittest.main()
