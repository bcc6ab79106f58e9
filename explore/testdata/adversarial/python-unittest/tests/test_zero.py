import unittest

from calc import add, mul


class ZeroTest(unittest.TestCase):
    def test_mul_zero(self):
        self.assertEqual(mul(7, 0), 0)

    def test_add_zero(self):
        self.assertEqual(add(7, 0), 7)
