package explore

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// The files in testdata/reports are real outputs of the tools on the dev
// machine (go 1.26, node 20, CPython 3.11 unittest, Debian's pytest 7.2),
// except jest-style-nested.xml and unittest-v-py310.txt, which are
// hand-written (each says so or is described here) from the formats.

func readReport(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "reports", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseReportFiles(t *testing.T) {
	type r = TestResult
	const (
		P = TestPassed
		F = TestFailed
		S = TestSkipped
	)
	tests := map[string]struct {
		format string
		file   string
		want   []TestResult
	}{
		"GoPassFailSkip": {ReportGoJSON, "go-json-pass-fail-skip.jsonl", []r{
			{"example.com/mix.TestPass", P, ""},
			{"example.com/mix.TestFail", F, "mix_test.go:12: got 1, want 2"},
			{"example.com/mix.TestSkip", S, "mix_test.go:15: not on this machine"},
			{"example.com/mix.TestTable", F, ""},
			{"example.com/mix.TestTable/good", P, ""},
			{"example.com/mix.TestTable/bad_case", F, "mix_test.go:19: boom"},
			{"example.com/mix.TestTable/skipped", S, "mix_test.go:20: later"},
			{"example.com/mix.TestParallel", P, ""},
			{"example.com/mix.TestParallel/a", P, ""},
			{"example.com/mix.TestParallel/b", P, ""},
			{"example.com/mix/sub.TestSubPass", P, ""},
		}},
		"GoBuildFailed": {ReportGoJSON, "go-json-build-failed.jsonl", []r{
			{"example.com/build/broken", F, "FAIL example.com/build/broken [build failed]: broken/broken_test.go:6:17: cannot use Add(1, 2) (value of type int) as string value in variable declaration"},
			{"example.com/build/ok.TestOK", P, ""},
		}},
		// GODEBUG=gotestjsonbuildtext=1, 2>&1: build errors as plain text.
		"GoBuildFailedText": {ReportGoJSON, "go-json-build-text.jsonl", []r{
			{"example.com/build/broken", F, "FAIL example.com/build/broken [build failed]"},
			{"example.com/build/ok.TestOK", P, ""},
		}},
		// TestMain calls os.Exit(0) without m.Run: go says ok, no test ran.
		"GoTestMainExit0": {ReportGoJSON, "go-json-testmain-exit0.jsonl", nil},
		// a: a test calls os.Exit(3); b: a test panics; c: setup failed.
		"GoExitPanicSetup": {ReportGoJSON, "go-json-exit-panic.jsonl", []r{
			{"example.com/exit/c", F, "FAIL example.com/exit/c [setup failed]: c/c_test.go:6:2: no required module provides package example.com/nonexistent/pkg; to add it:"},
			{"example.com/exit/a.TestBefore", P, ""},
			{"example.com/exit/a.TestExits", F, "no result (the test binary exited early?)"},
			{"example.com/exit/b.TestPanics", F, "panic: assignment to entry in nil map [recovered, repanicked]"},
		}},
		// -count=2, TestFlaky fails the second time.
		"GoCount2": {ReportGoJSON, "go-json-count2.jsonl", []r{
			{"example.com/flaky.TestFlaky", F, "flaky_test.go:10: failed on the second run"},
			{"example.com/flaky.TestSteady", P, ""},
		}},
		"GoTimeout": {ReportGoJSON, "go-json-timeout.jsonl", []r{
			{"example.com/slow.TestQuick", P, ""},
			{"example.com/slow.TestSlow", F, "no result (the test binary exited early?): panic: test timed out after 1s"},
		}},
		"NodeJUnit": {ReportJUnit, "node-junit.xml", []r{
			{"test::/tmp/rep/node/test/broken.test.js", F, "test failed"},
			{"test::adds numbers", P, ""},
			{"test::subtracts numbers", F, "subtraction is off2 !== 1"},
			{"test::skipped test", S, "not implemented"},
			{"test::todo test", S, "true"},
			{"test::handles odd length", P, ""},
			{"test::handles <even> & &quot;quoted&quot; length", F, "boomsecond line"},
			{"test::deep pass", P, ""},
		}},
		"PytestJUnit": {ReportJUnit, "pytest-junit.xml", []r{
			{"tests.test_calc::test_pass", P, ""},
			{"tests.test_calc::test_fail", F, "AssertionError: math is broken"},
			{"tests.test_calc::test_fixture_error", F, `failed on setup with "RuntimeError: fixture exploded"`},
			{"tests.test_calc::test_skip", S, "not today"},
			{"tests.test_calc::test_xfail", S, "known bug"},
			{"tests.test_calc::test_xpass", P, ""},
			{"tests.test_calc::test_param[1]", P, ""},
			{"tests.test_calc::test_param[2]", F, "assert 2 == 1"},
			{"tests.test_calc.TestGroup::test_method", P, ""},
		}},
		"PytestCollectionError": {ReportJUnit, "pytest-junit-collection-error.xml", []r{
			{"tests.test_broken", F, "collection failure"},
		}},
		"JestStyleNested": {ReportJUnit, "jest-style-nested.xml", []r{
			{"com.example.CalcTest::testAdd", F, "failed when run again"},
			{"com.example.CalcTest::testDivide", F, "expected: <2> but was: <3>"},
			{"com.example.CalcTest::testNull", F, `java.lang.NullPointerException: Cannot invoke "String.length()" because "s" is null`},
			{"com.example.CalcTest::testDisabled", S, "@Disabled: flaky on CI"},
			{"com.example.CalcTest::testFlaky", P, ""},
			{"median handles odd length::median handles odd length", P, ""},
			{"median handles even length::median handles even length", F, "Error: expect(received).toBe(expected) // Object.is equality"},
			{"median todo::median todo", S, ""},
			{"median nested deep::median nested deep", P, ""},
		}},
		"Unittest": {ReportUnittest, "unittest-v.txt", []r{
			{"tests.test_stats.MedianTest.test_empty", F, "ValueError: median of empty list"},
			{"tests.test_stats.MedianTest.test_even_length", F, "AssertionError: 3 != 2.5"},
			{"tests.test_stats.MedianTest.test_fixed_bug", F, "unexpected success"},
			{"tests.test_stats.MedianTest.test_known_bug", P, ""},
			{"tests.test_stats.MedianTest.test_odd_length", P, ""},
			{"tests.test_stats.MedianTest.test_prints", P, ""},
			{"tests.test_stats.MedianTest.test_skipped", S, "not ready"},
			{"tests.test_stats.MedianTest.test_subtests", F, "AssertionError: 2 not less than 2"},
			{"tests.test_stats.SkippedClassTest.test_a", S, "whole class skipped"},
		}},
		"UnittestDocstring": {ReportUnittest, "unittest-v-docstring.txt", []r{
			{"tests.test_doc.DocTest.test_documented", P, ""},
			{"tests.test_doc.DocTest.test_documented_fail", F, "AssertionError: 1 != 2"},
			{"tests.test_doc.DocTest.test_documented_prints", P, ""},
			{"tests.test_doc.DocTest.test_documented_skip", S, "docs later"},
			{"tests.test_doc.DocTest.test_documented_subtests", F, "AssertionError: 1 != 0"},
			{"tests.test_doc.DocTest.test_plain", P, ""},
		}},
		"UnittestImportError": {ReportUnittest, "unittest-import-error.txt", []r{
			{"unittest.loader._FailedTest.tests.test_hidden", F, "ImportError: Failed to import test module: tests.test_hidden"},
			{"tests.test_module_setup.setUpModule", F, "OSError: no fixtures"},
			{"tests.test_ok.BrokenSetupTest.setUpClass", F, "RuntimeError: database unavailable"},
			{"tests.test_ok.OkTest.test_fine", P, ""},
		}},
		// Hand-written in the pre-3.11 format: "name (module.Class)", and a
		// failed subtest leaves its line open for the next test's.
		"UnittestPy310": {ReportUnittest, "unittest-v-py310.txt", []r{
			{"tests.test_stats.MedianTest.test_empty", F, "ValueError: median of empty list"},
			{"tests.test_stats.MedianTest.test_even_length", F, "AssertionError: 3 != 2.5"},
			{"tests.test_stats.MedianTest.test_fixed_bug", F, "unexpected success"},
			{"tests.test_stats.MedianTest.test_known_bug", P, ""},
			{"tests.test_stats.MedianTest.test_documented", P, ""},
			{"tests.test_stats.MedianTest.test_odd_length", P, ""},
			{"tests.test_stats.MedianTest.test_skipped", S, "not ready"},
			{"tests.test_stats.MedianTest.test_subtests", F, "AssertionError: 2 not less than 2"},
			{"tests.test_stats.SkippedClassTest.test_a", S, "whole class skipped"},
			{"unittest.loader._FailedTest.tests.test_hidden", F, "ImportError: Failed to import test module: tests.test_hidden"},
		}},
		"UnittestNoTests": {ReportUnittest, "unittest-no-tests.txt", nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rep, err := ParseReport(tc.format, readReport(t, tc.file))
			if err != nil {
				t.Fatalf("ParseReport: %v", err)
			}
			if !reflect.DeepEqual(rep.Tests, tc.want) {
				t.Errorf("got %d tests:\n%s\nwant %d:\n%s", len(rep.Tests), dumpResults(rep.Tests), len(tc.want), dumpResults(tc.want))
			}
		})
	}
}

func dumpResults(rs []TestResult) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString("\t" + r.ID + " " + string(r.Status) + " " + r.Message + "\n")
	}
	return b.String()
}

func TestParseReportInline(t *testing.T) {
	type r = TestResult
	long := strings.Repeat("é", 150) // 300 bytes
	gojson := string(readReport(t, "go-json-pass-fail-skip.jsonl"))
	unittest := string(readReport(t, "unittest-v.txt"))
	tests := map[string]struct {
		format string
		data   string
		want   []TestResult
	}{
		"JUnitEmptySuites":  {ReportJUnit, `<testsuites/>`, nil},
		"JUnitEmptySuite":   {ReportJUnit, `<?xml version="1.0"?><testsuite name="x" tests="0"></testsuite>`, nil},
		"JUnitNoClassname":  {ReportJUnit, `<testsuite><testcase name="a"/><testcase classname="" name="b"/></testsuite>`, []r{{"a", TestPassed, ""}, {"b", TestPassed, ""}}},
		"JUnitFailureAttr":  {ReportJUnit, `<testsuites><testcase classname="c" name="n" failure="bad&#10;more"/></testsuites>`, []r{{"c::n", TestFailed, "bad"}}},
		"JUnitSkipThenFail": {ReportJUnit, `<testsuites><testcase name="n"><skipped message="s"/><failure message="f"/></testcase></testsuites>`, []r{{"n", TestFailed, "f"}}},
		"JUnitRepeatWorst": {ReportJUnit, `<testsuites><testcase name="n"/><testcase name="n"><skipped message="s"/></testcase><testcase name="n"/></testsuites>`,
			[]r{{"n", TestSkipped, "s"}}},
		"JUnitNamespaced": {ReportJUnit, `<j:testsuites xmlns:j="urn:x"><j:testcase name="n"><j:error message="e"/></j:testcase></j:testsuites>`, []r{{"n", TestFailed, "e"}}},
		"JUnitLatin1":     {ReportJUnit, "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><testsuite><testcase name=\"caf\xe9\"/></testsuite>", []r{{"café", TestPassed, ""}}},
		"JUnitBOM":        {ReportJUnit, "\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"UTF-8\"?><testsuites><testcase name=\"n\"/></testsuites>", []r{{"n", TestPassed, ""}}},
		"JUnitHTMLEntity": {ReportJUnit, `<testsuites><testcase name="a&nbsp;b"/></testsuites>`, []r{{"a\u00a0b", TestPassed, ""}}},
		"JUnitLongMessage": {ReportJUnit, `<testsuites><testcase name="n"><failure message="` + long + `"/></testcase></testsuites>`,
			[]r{{"n", TestFailed, strings.Repeat("é", 100)}}},
		// A failure outside any testcase fails the suite (e.g. a hook).
		"JUnitSuiteLevelError": {ReportJUnit, `<testsuites><testsuite name="s"><testcase name="a"/><error message="afterAll hook failed"/></testsuite><testsuite name="t"><failure/></testsuite></testsuites>`,
			[]r{{"a", TestPassed, ""}, {"s", TestFailed, "afterAll hook failed"}, {"t", TestFailed, ""}}},
		"JUnitNestedTestcase": {ReportJUnit, `<testsuites><testcase name="outer"><testcase name="inner"><failure/></testcase></testcase></testsuites>`,
			[]r{{"outer", TestPassed, ""}}},

		"GoEmpty":      {ReportGoJSON, "", nil},
		"GoWhitespace": {ReportGoJSON, "\n  \n", nil},
		"GoNoTestFiles": {ReportGoJSON, `{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Output":"?   \tp\t[no test files]\n"}
{"Action":"skip","Package":"p","Elapsed":0}
`, nil},
		// The output was cut off in the middle of TestFail.
		"GoTruncated": {ReportGoJSON, gojson[:strings.Index(gojson, `"Output":"some output`)], []r{
			{"example.com/mix.TestPass", TestPassed, ""},
			{"example.com/mix.TestFail", TestFailed, "no result (the test binary exited early?)"},
		}},
		// Every test passed but the package failed (e.g. TestMain exit 1
		// after m.Run): the package is failed too.
		"GoPackageFailsAfterPasses": {ReportGoJSON, `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"leaked goroutines\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}
{"Action":"fail","Package":"p"}
`, []r{{"p.TestA", TestPassed, ""}, {"p", TestFailed, "FAIL p 0.01s"}}},
		// A package that started and never ended, all its tests passed.
		"GoPackageNeverEnded": {ReportGoJSON, `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
`, []r{{"p.TestA", TestPassed, ""}, {"p", TestFailed, "no result (the output ended before the package did)"}}},
		"GoCRLF": {ReportGoJSON, "{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"TestA\"}\r\n{\"Action\":\"fail\",\"Package\":\"p\",\"Test\":\"TestA\"}\r\n", []r{{"p.TestA", TestFailed, ""}}},

		"UnittestRanZero": {ReportUnittest, "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK\n", nil},
		// Cut off while test_prints runs: it has no result.
		"UnittestTruncated": {ReportUnittest, unittest[:strings.Index(unittest, "noise to stderr")], []r{
			{"tests.test_stats.MedianTest.test_empty", TestFailed, ""},
			{"tests.test_stats.MedianTest.test_even_length", TestFailed, ""},
			{"tests.test_stats.MedianTest.test_fixed_bug", TestFailed, "unexpected success"},
			{"tests.test_stats.MedianTest.test_known_bug", TestPassed, ""},
			{"tests.test_stats.MedianTest.test_odd_length", TestPassed, ""},
			{"tests.test_stats.MedianTest.test_prints", TestFailed, "no result (the test run ended early?)"},
		}},
		// A failing test prints "ok" on a line of its own: the summary
		// still says FAIL, and the worst status wins.
		"UnittestFakeOK": {ReportUnittest, `test_a (m.C.test_a) ... 
ok
FAIL
test_b (m.C.test_b) ... ok

======================================================================
FAIL: test_a (m.C.test_a)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "m.py", line 3, in test_a
AssertionError: real failure

----------------------------------------------------------------------
Ran 2 tests in 0.001s

FAILED (failures=1)
`, []r{{"m.C.test_a", TestFailed, "AssertionError: real failure"}, {"m.C.test_b", TestPassed, ""}}},
		// Output that looks like a docstring line's header but is not.
		"UnittestNotAHeader": {ReportUnittest, "test_a (m.C.test_a) ... value (x.y)\nmore output\nok\n", []r{{"m.C.test_a", TestPassed, ""}}},
		// A test prints "name (dotted)", which looks like a docstring test's
		// first line; the next line is a test's own, not a docstring.
		"UnittestBogusDocstringHeader": {ReportUnittest, "test_a (m.C.test_a) ... ok\nvalue (x.y)\ntest_b (m.C.test_b) ... ok\n",
			[]r{{"m.C.test_a", TestPassed, ""}, {"m.C.test_b", TestPassed, ""}}},
		"UnittestANSIAndCRLF": {ReportUnittest, "test_a (m.C.test_a) ... \x1b[32mok\x1b[0m\r\ntest_b (m.C.test_b) ... \x1b[31mFAIL\x1b[0m\r\n",
			[]r{{"m.C.test_a", TestPassed, ""}, {"m.C.test_b", TestFailed, ""}}},
		"UnittestSkipDoubleQuotes": {ReportUnittest, `test_a (m.C.test_a) ... skipped "it's later"` + "\n", []r{{"m.C.test_a", TestSkipped, "it's later"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rep, err := ParseReport(tc.format, []byte(tc.data))
			if err != nil {
				t.Fatalf("ParseReport: %v", err)
			}
			if !reflect.DeepEqual(rep.Tests, tc.want) {
				t.Errorf("got:\n%s\nwant:\n%s", dumpResults(rep.Tests), dumpResults(tc.want))
			}
		})
	}
}

func TestParseReportErrors(t *testing.T) {
	node := string(readReport(t, "node-junit.xml"))
	tests := map[string]struct {
		format string
		data   string
	}{
		"UnknownFormat":       {"tap", "ok 1\n"},
		"JUnitEmpty":          {ReportJUnit, ""},
		"JUnitGarbage":        {ReportJUnit, "hello world\n"},
		"JUnitBinary":         {ReportJUnit, "\x00\x01\x02\xff"},
		"JUnitTruncated":      {ReportJUnit, node[:len(node)/2]},
		"JUnitWrongRoot":      {ReportJUnit, "<html><body>500</body></html>"},
		"JUnitGoJSON":         {ReportJUnit, string(readReport(t, "go-json-pass-fail-skip.jsonl"))},
		"JUnitUnclosed":       {ReportJUnit, "<testsuites><testcase name='a'>"},
		"JUnitDefinedEntity":  {ReportJUnit, `<!DOCTYPE t [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><testsuites><testcase name="&b;"/></testsuites>`},
		"JUnitExternalEntity": {ReportJUnit, `<!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]><testsuites><testcase name="&x;"/></testsuites>`},
		"JUnitUnknownCharset": {ReportJUnit, `<?xml version="1.0" encoding="EBCDIC-US"?><testsuites/>`},
		"GoGarbage":           {ReportGoJSON, "hello\nworld\n"},
		"GoJSONNotEvents":     {ReportGoJSON, "{}\n[1,2]\nnull\n{\"Package\":\"p\"}\n"},
		"GoPlainTestOutput":   {ReportGoJSON, "=== RUN   TestA\n--- PASS: TestA (0.00s)\nPASS\nok  \tp\t0.01s\n"},
		"GoJUnit":             {ReportGoJSON, node},
		"UnittestEmpty":       {ReportUnittest, ""},
		"UnittestGarbage":     {ReportUnittest, "hello world\n"},
		"UnittestPytestOut":   {ReportUnittest, ".F.s                                                  [100%]\n1 failed, 3 passed in 0.01s\n"},
		"UnittestCrash":       {ReportUnittest, "Traceback (most recent call last):\n  File \"<string>\", line 1\nModuleNotFoundError: No module named 'x'\n"},
		"UnittestGoJSON":      {ReportUnittest, string(readReport(t, "go-json-pass-fail-skip.jsonl"))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rep, err := ParseReport(tc.format, []byte(tc.data))
			if err == nil {
				t.Fatalf("ParseReport: nil error, want one (got %d tests:\n%s)", len(rep.Tests), dumpResults(rep.Tests))
			}
			if len(rep.Tests) != 0 {
				t.Errorf("tests with an error: %v", rep.Tests)
			}
		})
	}
}

func TestParseReportDeepXML(t *testing.T) {
	const n = 200000
	data := strings.Repeat("<testsuite>", n) + `<testcase name="deep"><failure message="m"/></testcase>` + strings.Repeat("</testsuite>", n)
	rep, err := ParseReport(ReportJUnit, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Failed(); !reflect.DeepEqual(got, []string{"deep"}) {
		t.Errorf("Failed() = %v", got)
	}
}

func TestReportStatusFailed(t *testing.T) {
	rep, err := ParseReport(ReportGoJSON, readReport(t, "go-json-pass-fail-skip.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[string]struct {
		status TestStatus
		found  bool
	}{
		"example.com/mix.TestPass":           {TestPassed, true},
		"example.com/mix.TestTable/bad_case": {TestFailed, true},
		"example.com/mix.TestSkip":           {TestSkipped, true},
		"example.com/mix.TestMissing":        {"", false},
		"TestPass":                           {"", false},
	}
	for id, want := range statuses {
		t.Run(id, func(t *testing.T) {
			st, ok := rep.Status(id)
			if st != want.status || ok != want.found {
				t.Errorf("Status(%q) = %q, %v; want %q, %v", id, st, ok, want.status, want.found)
			}
		})
	}
	want := []string{"example.com/mix.TestFail", "example.com/mix.TestTable", "example.com/mix.TestTable/bad_case"}
	if got := rep.Failed(); !reflect.DeepEqual(got, want) {
		t.Errorf("Failed() = %v, want %v", got, want)
	}
	if got := (Report{}).Failed(); got != nil {
		t.Errorf("empty Failed() = %v", got)
	}
}

// FuzzParseReport checks that no input makes ParseReport panic and that
// what it returns keeps the Report invariants. `go test` runs only the
// seeds; fuzz with go test -run XXX -fuzz FuzzParseReport ./explore/.
func FuzzParseReport(f *testing.F) {
	formats := []string{ReportJUnit, ReportGoJSON, ReportUnittest}
	files, err := filepath.Glob(filepath.Join("testdata", "reports", "*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for i := range formats {
			f.Add(uint8(i), data)
		}
	}
	f.Add(uint8(0), []byte(`<testsuites><testcase name="n" failure=""><failure/><skipped/></testcase></testsuites>`))
	f.Add(uint8(2), []byte("test_a (m.C.test_a)\ndoc ... test_b (m.C.test_b) (i=1) ... FAIL\n"))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		rep, err := ParseReport(formats[int(which)%len(formats)], data)
		if err != nil {
			if len(rep.Tests) != 0 {
				t.Fatalf("tests with an error: %v", rep.Tests)
			}
			return
		}
		seen := map[string]bool{}
		for _, r := range rep.Tests {
			if seen[r.ID] {
				t.Fatalf("ID %q twice", r.ID)
			}
			seen[r.ID] = true
			if r.Status != TestPassed && r.Status != TestFailed && r.Status != TestSkipped {
				t.Fatalf("%q: status %q", r.ID, r.Status)
			}
			if len(r.Message) > maxReportMessage || strings.ContainsAny(r.Message, "\r\n") || !utf8.ValidString(r.Message) {
				t.Fatalf("%q: bad message %q", r.ID, r.Message)
			}
			if st, ok := rep.Status(r.ID); !ok || st != r.Status {
				t.Fatalf("Status(%q) = %q, %v", r.ID, st, ok)
			}
		}
	})
}
