. ./calc.sh
[ "$(add 3 5)" = 8 ] || { echo "FAIL: add 3 5 = $(add 3 5), want 8"; exit 1; }
[ "$(add -3 5)" = 2 ] || { echo "FAIL: add -3 5 = $(add -3 5), want 2"; exit 1; }
echo "ok: add more"
