import sys
import unittest

from calc import add


class AddMoreTest(unittest.TestCase):
    def test_add_negative(self):
        self.assertEqual(add(-2, -3), -5)

    @unittest.skipUnless(sys.platform == "darwin", "macOS only")
    def test_add_macos(self):
        self.assertEqual(add(1, 1), 2)
