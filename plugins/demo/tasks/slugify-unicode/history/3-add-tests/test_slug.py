import unittest

from slug import slugify, unique_slug


class SlugifyTest(unittest.TestCase):
    def test_plain_title(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_accents_are_kept_as_plain_letters(self):
        self.assertEqual(slugify("Café Crème"), "cafe-creme")
        self.assertEqual(slugify("Ångström units"), "angstrom-units")
        self.assertEqual(slugify("naïve résumé"), "naive-resume")

    def test_emoji_dropped(self):
        self.assertEqual(slugify("Party 🎉 time"), "party-time")

    def test_always_ascii(self):
        self.assertTrue(slugify("Über Straße Ørsted").isascii())


class UniqueSlugTest(unittest.TestCase):
    def test_free(self):
        self.assertEqual(unique_slug("Hello", set()), "hello")

    def test_taken(self):
        self.assertEqual(unique_slug("Hello", {"hello", "hello-2"}), "hello-3")


if __name__ == "__main__":
    unittest.main()
