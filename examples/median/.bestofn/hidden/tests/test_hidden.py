import unittest

from stats import median


class HiddenMedianTest(unittest.TestCase):
    def test_even_other_values(self):
        self.assertEqual(median([10, 2, 8, 4]), 6)

    def test_two_values(self):
        self.assertEqual(median([1, 2]), 1.5)

    def test_single_value(self):
        self.assertEqual(median([5]), 5)
