package calc

import "testing"

// TestAddMore checks inputs the visible test does not.
func TestAddMore(t *testing.T) {
	for _, c := range []struct{ a, b, want int }{{3, 5, 8}, {-3, 5, 2}, {0, 0, 0}} {
		if got := Add(c.a, c.b); got != c.want {
			t.Errorf("Add(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestMul needs Mul, which the base does not have: at the base this
// package does not even build with the hidden tests.
func TestMul(t *testing.T) {
	if got := Mul(3, 4); got != 12 {
		t.Fatalf("Mul(3, 4) = %d, want 12", got)
	}
}
