import sys
import unittest

# sub() is what the issue asks for: at the base this import fails, so the
# baseline sees this module only as an import error.
from calc import sub


class SubCases:
    """Cases shared by every sub() test class (a mixin, not run by itself)."""

    def test_sub_zero(self):
        self.assertEqual(sub(4, 0), 4)


class SubTest(SubCases, unittest.TestCase):
    def test_sub(self):
        self.assertEqual(sub(5, 3), 2)

    def test_sub_negative(self):
        self.assertEqual(sub(3, 5), -2)

    @unittest.skipUnless(sys.platform == "darwin", "macOS only")
    def test_sub_macos(self):
        self.assertEqual(sub(1, 1), 0)
