import copy
import json
import os
import tempfile
import unittest

import config
from config import merge


class MergeTest(unittest.TestCase):
    def test_top_level(self):
        self.assertEqual(merge({"a": 1, "b": 2}, {"b": 3}), {"a": 1, "b": 3})

    def test_nested_sections_merge(self):
        merged = merge({"db": {"host": "h", "port": 1}}, {"db": {"port": 2}})
        self.assertEqual(merged, {"db": {"host": "h", "port": 2}})

    def test_deeply_nested(self):
        merged = merge({"a": {"b": {"c": 1, "d": 2}}}, {"a": {"b": {"d": 3}}})
        self.assertEqual(merged, {"a": {"b": {"c": 1, "d": 3}}})

    def test_non_section_replaces(self):
        self.assertEqual(merge({"p": ["x"], "s": {"k": 1}}, {"p": ["y"], "s": 0}), {"p": ["y"], "s": 0})

    def test_inputs_unchanged(self):
        defaults = {"db": {"host": "h", "port": 1}}
        overrides = {"db": {"port": 2}}
        before = copy.deepcopy((defaults, overrides))
        merge(defaults, overrides)
        self.assertEqual((defaults, overrides), before)


class LoadTest(unittest.TestCase):
    def load(self, data):
        fd, path = tempfile.mkstemp(suffix=".json")
        self.addCleanup(os.unlink, path)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        return config.load(path)

    def test_only_the_port(self):
        settings = self.load({"database": {"port": 6543}})
        self.assertEqual(settings["database"]["host"], "localhost")
        self.assertEqual(settings["database"]["port"], 6543)

    def test_defaults_survive_a_load(self):
        self.load({"database": {"options": {"timeout": 30}}})
        self.assertEqual(self.load({})["database"]["options"]["timeout"], 5)


if __name__ == "__main__":
    unittest.main()
