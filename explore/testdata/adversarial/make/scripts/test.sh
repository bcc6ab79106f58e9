#!/bin/sh
# Runs every test script under tests/, stopping at the first failure.
set -e
for t in tests/test_*.sh; do
	sh "$t"
done
echo "all tests passed"
