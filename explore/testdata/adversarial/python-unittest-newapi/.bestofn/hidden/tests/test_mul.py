import unittest

import calc


# Written the way optional features are often tested: skipped while mul()
# does not exist, which is the case on the base.
@unittest.skipUnless(hasattr(calc, "mul"), "mul() is not there yet")
class MulTest(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(calc.mul(3, 4), 12)
