import unittest

from stats import mean, summary


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertAlmostEqual(mean([1, 2, 4]), 7 / 3)

    def test_no_values_no_mean(self):
        self.assertIsNone(mean([]))


class SummaryTest(unittest.TestCase):
    def test_a_day_with_readings(self):
        self.assertEqual(summary([1, 2, 4]), "n=3 mean=2.33 max=4")

    def test_a_day_without_readings(self):
        self.assertEqual(summary([]), "n=0 mean=n/a max=n/a")


if __name__ == "__main__":
    unittest.main()
