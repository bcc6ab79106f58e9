. ./calc.sh
[ "$(add 7 0)" = 7 ] || { echo "FAIL: add 7 0 = $(add 7 0), want 7"; exit 1; }
echo "ok: add 7 0"
