'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { add } = require('../src/calc');

test('add handles negatives', () => {
  assert.strictEqual(add(-3, 5), 2);
});

test('add handles other inputs', () => {
  assert.strictEqual(add(3, 5), 8);
});
