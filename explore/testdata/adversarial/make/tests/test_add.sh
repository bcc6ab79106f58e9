. ./calc.sh
[ "$(add 2 2)" = 4 ] || { echo "FAIL: add 2 2 = $(add 2 2), want 4"; exit 1; }
echo "ok: add 2 2"
