import unittest
from datetime import date

from dates import days_between, parse_date


class ParseDateTest(unittest.TestCase):
    def test_iso(self):
        self.assertEqual(parse_date("2024-03-05"), date(2024, 3, 5))

    def test_day_first(self):
        self.assertEqual(parse_date("05/03/2024"), date(2024, 3, 5))
        self.assertEqual(parse_date("25/12/2024"), date(2024, 12, 25))

    def test_spaces_ignored(self):
        self.assertEqual(parse_date("  2024-03-05 "), date(2024, 3, 5))

    def test_garbage(self):
        with self.assertRaises(ValueError):
            parse_date("next tuesday")


class DaysBetweenTest(unittest.TestCase):
    def test_nights(self):
        self.assertEqual(days_between("30/12/2024", "2025-01-02"), 3)


if __name__ == "__main__":
    unittest.main()
