import unittest

from durations import format_duration


class FormatDurationTest(unittest.TestCase):
    def test_minutes(self):
        self.assertEqual(format_duration(185), "3:05")

    def test_rounds_to_nearest_second(self):
        self.assertEqual(format_duration(185.4), "3:05")
        self.assertEqual(format_duration(185.6), "3:06")

    def test_rounding_up_to_a_whole_minute(self):
        self.assertEqual(format_duration(239.7), "4:00")
        self.assertEqual(format_duration(59.6), "1:00")

    def test_hours(self):
        self.assertEqual(format_duration(3725), "1:02:05")

    def test_rounding_up_to_a_whole_hour(self):
        self.assertEqual(format_duration(3599.6), "1:00:00")


if __name__ == "__main__":
    unittest.main()
