'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { add, mul } = require('../src/calc');

test('add adds', () => {
  assert.strictEqual(add(2, 2), 4);
});

test('mul multiplies', () => {
  assert.strictEqual(mul(3, 4), 12);
});

test('add zero', () => {
  assert.strictEqual(add(7, 0), 7);
});
