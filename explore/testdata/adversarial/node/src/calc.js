'use strict';

// add returns the sum of a and b.
function add(a, b) {
  return a - b;
}

// mul returns the product of a and b.
function mul(a, b) {
  return a * b;
}

module.exports = { add, mul };
