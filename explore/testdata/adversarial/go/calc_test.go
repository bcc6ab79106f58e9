package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 2); got != 4 {
		t.Fatalf("Add(2, 2) = %d, want 4", got)
	}
}

func TestAddZero(t *testing.T) {
	if got := Add(7, 0); got != 7 {
		t.Fatalf("Add(7, 0) = %d, want 7", got)
	}
}

func TestSub(t *testing.T) {
	if got := Sub(5, 3); got != 2 {
		t.Fatalf("Sub(5, 3) = %d, want 2", got)
	}
}
