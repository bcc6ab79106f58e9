import calc


def test_add_negative():
    assert calc.add(-3, 5) == 2


def test_add_large():
    assert calc.add(10**12, 10**12) == 2 * 10**12
