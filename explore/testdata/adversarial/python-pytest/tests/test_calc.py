import calc


def test_add():
    assert calc.add(2, 2) == 4


def test_mul():
    assert calc.mul(3, 4) == 12


def test_add_zero():
    assert calc.add(7, 0) == 7
