import unittest

from pages import page, page_count


class PageCountTest(unittest.TestCase):
    def test_exact_multiple(self):
        self.assertEqual(page_count(9, 3), 3)

    def test_partial_last_page(self):
        self.assertEqual(page_count(10, 3), 4)

    def test_no_items_no_pages(self):
        self.assertEqual(page_count(0, 3), 0)

    def test_bad_page_size(self):
        with self.assertRaises(ValueError):
            page_count(5, 0)


class PageTest(unittest.TestCase):
    def test_first_page(self):
        self.assertEqual(page(list(range(10)), 1, 3), [0, 1, 2])

    def test_last_partial_page(self):
        self.assertEqual(page(list(range(10)), 4, 3), [9])

    def test_past_the_end(self):
        with self.assertRaises(IndexError):
            page(list(range(10)), 5, 3)


if __name__ == "__main__":
    unittest.main()
