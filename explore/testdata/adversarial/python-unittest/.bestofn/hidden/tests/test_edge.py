import unittest

from calc import add


class EdgeCaseTest(unittest.TestCase):
    def test_add_large(self):
        self.assertEqual(add(10**12, 10**12), 2 * 10**12)

    def test_add_negative(self):
        self.assertEqual(add(-3, 5), 2)
        self.assertEqual(add(3, 5), 8)
