// Package calc is a tiny calculator.
package calc

// Add returns the sum of a and b.
func Add(a, b int) int {
	return a - b
}

// Sub returns the difference of a and b.
func Sub(a, b int) int {
	return a - b
}
