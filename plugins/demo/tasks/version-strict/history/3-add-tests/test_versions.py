import unittest

from versions import newest, parse_version


class ParseVersionTest(unittest.TestCase):
    def test_plain(self):
        self.assertEqual(parse_version("10.20.30"), (10, 20, 30))

    def test_leading_v(self):
        self.assertEqual(parse_version("v1.2.3"), (1, 2, 3))

    def test_garbage_refused(self):
        for text in ("1.2", "x1.2.3", "1.2.3.4", "1.2.3beta", "v1.2.3\n", " 1.2.3"):
            with self.subTest(text=text), self.assertRaises(ValueError):
                parse_version(text)


class NewestTest(unittest.TestCase):
    def test_numeric_not_textual(self):
        self.assertEqual(newest(["1.9.0", "1.10.0", "v1.2.3"]), "1.10.0")


if __name__ == "__main__":
    unittest.main()
