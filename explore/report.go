package explore

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// TestStatus is one test's result in a report: passed, failed or skipped.
type TestStatus string

// The statuses a report gives a test. An expected failure counts as passed and
// an unexpected success as failed, as the runners themselves count them.
const (
	TestPassed  TestStatus = "passed"
	TestFailed  TestStatus = "failed" // assertion failure or error
	TestSkipped TestStatus = "skipped"
)

// rank orders statuses for merging repeated IDs: failed > skipped > passed.
func (s TestStatus) rank() int {
	switch s {
	case TestFailed:
		return 3
	case TestSkipped:
		return 2
	case TestPassed:
		return 1
	}
	return 0
}

// TestResult is one test case of a report: its ID, status and the first line
// of its failure or skip message.
type TestResult struct {
	// ID is the test's stable identity: "classname::name" for JUnit (just
	// the name when the classname is empty), "package.TestName/sub" for
	// go test -json, the dotted "module.Class.test_method" for unittest.
	ID     string
	Status TestStatus
	// Message is the first line of the failure or skip message, at most
	// maxReportMessage bytes, or "".
	Message string
}

// Report is what a test run reported: its tests in report order, one entry
// per ID (a repeated ID keeps the worst status: failed > skipped > passed).
type Report struct {
	Tests []TestResult
}

// Status returns the status of the test with the given ID and whether the
// report has that test at all.
func (r Report) Status(id string) (TestStatus, bool) {
	for _, t := range r.Tests {
		if t.ID == id {
			return t.Status, true
		}
	}
	return "", false
}

// Failed returns the IDs of the failed tests, in report order (nil if none).
func (r Report) Failed() []string {
	var ids []string
	for _, t := range r.Tests {
		if t.Status == TestFailed {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

// The report formats: the `test_report` config values, minus the junit path.
const (
	// ReportJUnit is a JUnit XML file, as pytest --junitxml, jest-junit,
	// node --test-reporter=junit and Maven Surefire write it.
	ReportJUnit = "junit"
	// ReportGoJSON is the event stream `go test -json` prints on stdout.
	ReportGoJSON = "go-json"
	// ReportUnittest is Python unittest's verbose (-v) text output, stdout
	// and stderr together.
	ReportUnittest = "unittest"
)

// maxReportMessage caps TestResult.Message, in bytes.
const maxReportMessage = 200

// ParseReport parses data, a test run's report in format (ReportJUnit,
// ReportGoJSON or ReportUnittest), into a Report. An error means the data is
// not a report of that format at all (garbage, truncated XML, an unknown
// format); an empty but well-formed report is a Report with no tests and a
// nil error. It reads all of data: callers cap its size.
//
// What each format gives:
//   - junit: one entry per <testcase> at any depth of a <testsuites> or
//     <testsuite> root, failed with a <failure> or <error> child or a
//     failure="..." attribute (node), skipped with a <skipped> child; a
//     <failure> or <error> right inside a <testsuite> fails an entry named
//     after the suite.
//   - go-json: one entry per test ("pkg.TestX/sub"), repeated runs
//     (-count) keeping the worst status; a test that started and never
//     finished is failed ("no result ..."), and so is a package whose run
//     failed without a failed test of its own (build or setup failure,
//     TestMain exit): ID = the package, Message = its "FAIL ... [build
//     failed]" line and the first compiler error. Lines that are not events are skipped; data with no
//     event at all but something else is an error, empty data is not.
//   - unittest: one entry per "name (module.Class.name) ... outcome" line
//     (3.11+, or "name (module.Class)" before), its docstring form on two
//     lines, and failed subtests; every "FAIL:"/"ERROR:"/"UNEXPECTED
//     SUCCESS:" section after the run fails its ID too (setUpClass,
//     setUpModule and unittest.loader._FailedTest entries are kept as
//     reported) and gives its exception line as Message. A test whose
//     outcome never came is failed ("no result ..."). Data with neither a
//     test line nor "Ran N tests" is an error.
func ParseReport(format string, data []byte) (Report, error) {
	switch format {
	case ReportJUnit:
		return parseJUnitReport(data)
	case ReportGoJSON:
		return parseGoJSONReport(data)
	case ReportUnittest:
		return parseUnittestReport(data)
	}
	return Report{}, fmt.Errorf("unknown test report format %q", format)
}

// reportBuilder collects results in first-seen order, merging repeated IDs.
type reportBuilder struct {
	index map[string]int
	tests []TestResult
}

// touch reserves id's place in the report order without giving it a status.
func (b *reportBuilder) touch(id string) *TestResult {
	if b.index == nil {
		b.index = map[string]int{}
	}
	if i, ok := b.index[id]; ok {
		return &b.tests[i]
	}
	b.index[id] = len(b.tests)
	b.tests = append(b.tests, TestResult{ID: id})
	return &b.tests[len(b.tests)-1]
}

// add records a result for id, keeping the worst status; the message goes
// with the status it explains.
func (b *reportBuilder) add(id string, st TestStatus, msg string) {
	t := b.touch(id)
	msg = reportMessage(msg)
	switch {
	case st.rank() > t.Status.rank():
		t.Status, t.Message = st, msg
	case st == t.Status && t.Message == "":
		t.Message = msg
	}
}

// report returns the results; a reserved ID that never got a status is
// failed (it cannot happen with the parsers below, but never passes).
func (b *reportBuilder) report() Report {
	for i := range b.tests {
		if b.tests[i].Status == "" {
			b.tests[i].Status = TestFailed
			b.tests[i].Message = "no result"
		}
	}
	return Report{Tests: b.tests}
}

// reportMessage returns the first non-empty line of s, trimmed, valid UTF-8
// and cut to maxReportMessage bytes.
func reportMessage(s string) string {
	for line := range strings.Lines(s) {
		line, _, _ = strings.Cut(line, "\r")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		line = strings.ToValidUTF8(line, "\uFFFD")
		if len(line) > maxReportMessage {
			n := maxReportMessage
			for n > 0 && !utf8.RuneStart(line[n]) {
				n--
			}
			line = line[:n]
		}
		return line
	}
	return ""
}

// --- JUnit XML -------------------------------------------------------------

// junitCase is the testcase being read.
type junitCase struct {
	id     string
	status TestStatus
	msg    string // from a failure/error/skipped message attribute
	attr   string // node's failure="..." attribute on the testcase
	depth  int    // element depth of <testcase>

	// text collects the character data of the failure, error or skipped
	// child that gave the status but had no message attribute.
	collect    bool
	childDepth int
	text       []byte
}

// maxJUnitText caps how much of a failure's text is kept to find its first line.
const maxJUnitText = 4 << 10

func parseJUnitReport(data []byte) (Report, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	d.CharsetReader = junitCharset
	var (
		b     reportBuilder
		depth int
		root  bool
		tc    *junitCase
		// suites are the open <testsuite>s: element depth and name.
		suites     []int
		suiteNames []string
	)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Report{}, fmt.Errorf("junit report: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			name := t.Name.Local
			if !root {
				if name != "testsuites" && name != "testsuite" {
					return Report{}, fmt.Errorf("junit report: root element is <%s>, not <testsuites> or <testsuite>", name)
				}
				root = true
			}
			switch {
			case tc == nil && name == "testsuite":
				suites = append(suites, depth)
				suiteNames = append(suiteNames, junitAttr(t, "name"))
			case tc == nil && (name == "failure" || name == "error") && len(suites) > 0 && depth == suites[len(suites)-1]+1:
				// A suite-level failure, as of a hook outside any test.
				b.add(suiteNames[len(suiteNames)-1], TestFailed, junitAttr(t, "message"))
			case tc == nil && name == "testcase":
				tc = &junitCase{depth: depth}
				var class, tname string
				for _, a := range t.Attr {
					switch a.Name.Local {
					case "classname":
						class = a.Value
					case "name":
						tname = a.Value
					case "failure":
						tc.status, tc.attr = TestFailed, a.Value
					}
				}
				tc.id = tname
				if class != "" {
					tc.id = class + "::" + tname
				}
			case tc != nil && depth == tc.depth+1:
				st := TestFailed
				switch name {
				case "failure", "error":
				case "skipped":
					st = TestSkipped
				default:
					continue
				}
				if st.rank() < tc.status.rank() || (st == tc.status && tc.msg != "") {
					continue // an earlier child already explains the status
				}
				tc.status, tc.msg, tc.text, tc.collect = st, junitAttr(t, "message"), nil, false
				if reportMessage(tc.msg) == "" {
					tc.collect, tc.childDepth = true, depth
				}
			}
		case xml.CharData:
			if tc != nil && tc.collect && depth == tc.childDepth && len(tc.text) < maxJUnitText {
				n := min(len(t), maxJUnitText-len(tc.text))
				tc.text = append(tc.text, t[:n]...)
			}
		case xml.EndElement:
			if tc != nil && tc.collect && depth == tc.childDepth {
				tc.msg, tc.collect = string(tc.text), false
			}
			if tc != nil && depth == tc.depth {
				st, msg := tc.status, tc.msg
				if st == "" {
					st = TestPassed
				}
				if st == TestFailed && reportMessage(msg) == "" {
					msg = tc.attr
				}
				b.add(tc.id, st, msg)
				tc = nil
			}
			if n := len(suites); n > 0 && depth == suites[n-1] {
				suites, suiteNames = suites[:n-1], suiteNames[:n-1]
			}
			depth--
		}
	}
	if !root {
		return Report{}, errors.New("junit report: no <testsuites> or <testsuite> element")
	}
	return b.report(), nil
}

// junitAttr returns the value of e's attribute with local name name, or "".
func junitAttr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// junitCharset lets reports that declare a Latin-1 or ASCII encoding parse;
// Go's decoder reads only UTF-8 by itself.
func junitCharset(label string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return r, nil
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1", "windows-1252", "cp1252":
		raw, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, len(raw))
		for _, c := range raw {
			out = utf8.AppendRune(out, rune(c))
		}
		return bytes.NewReader(out), nil
	}
	return nil, fmt.Errorf("unsupported encoding %q", label)
}

// --- go test -json ---------------------------------------------------------

// goTestEvent is one line of `go test -json` (cmd/test2json's TestEvent);
// build-output and build-fail events use ImportPath instead of Package.
type goTestEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
}

type goTestState struct {
	pending bool   // run without pass/fail/skip yet
	located string // first output line like "x_test.go:12: ..." or "panic: ..."
	other   string // first other output line
}

type goPackageState struct {
	tests    bool   // had test events
	failed   bool   // one of its tests failed
	started  bool   // had a start event
	ended    bool   // had its own pass/fail/skip
	lastLine string // last non-empty package-level output line
	ids      []string
}

// Messages of tests and packages that never reported a result.
const (
	noResultTest    = "no result (the test binary exited early?)"
	noResultPackage = "no result (the output ended before the package did)"
)

var goLocatedLine = regexp.MustCompile(`^\s*[^\s:]+\.go:\d+: |^panic: `)

func parseGoJSONReport(data []byte) (Report, error) {
	var (
		b          reportBuilder
		events     int
		tests      = map[string]*goTestState{}
		pkgs       = map[string]*goPackageState{}
		pkgOrder   []string
		buildError = map[string]string{} // ImportPath -> first compiler error line
	)
	pkg := func(name string) *goPackageState {
		p := pkgs[name]
		if p == nil {
			p = &goPackageState{}
			pkgs[name] = p
			pkgOrder = append(pkgOrder, name)
		}
		return p
	}
	// endPending fails the tests of package name that never got a result.
	endPending := func(name string) {
		p := pkg(name)
		for _, id := range p.ids {
			if s := tests[id]; s.pending {
				s.pending = false
				msg := noResultTest
				if strings.HasPrefix(s.located, "panic: ") {
					msg += ": " + s.located // e.g. "panic: test timed out after 1s"
				}
				b.add(id, TestFailed, msg)
				p.failed = true
			}
		}
	}
	for line := range bytes.Lines(data) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue // plain text go prints around the events, e.g. "# pkg"
		}
		var ev goTestEvent
		if json.Unmarshal(line, &ev) != nil || ev.Action == "" {
			continue
		}
		events++
		if ev.Package == "" {
			if ev.Action == "build-output" && ev.ImportPath != "" && buildError[ev.ImportPath] == "" {
				if l := reportMessage(ev.Output); l != "" && !strings.HasPrefix(l, "# ") {
					buildError[ev.ImportPath] = l
				}
			}
			continue
		}
		p := pkg(ev.Package)
		if ev.Test == "" {
			switch ev.Action {
			case "start":
				p.started = true
			case "output":
				if l := strings.TrimSpace(ev.Output); l != "" {
					p.lastLine = l
				}
			case "pass", "fail", "skip":
				p.ended = true
				endPending(ev.Package)
				if ev.Action == "fail" && !p.failed {
					msg := strings.Join(strings.Fields(p.lastLine), " ")
					if e := buildError[ev.FailedBuild]; e != "" {
						msg += ": " + e
					}
					b.add(ev.Package, TestFailed, msg)
					p.failed = true
				}
			}
			continue
		}
		id := ev.Package + "." + ev.Test
		s := tests[id]
		if s == nil {
			s = &goTestState{}
			tests[id] = s
			p.ids = append(p.ids, id)
		}
		p.tests = true
		switch ev.Action {
		case "run":
			b.touch(id)
			*s = goTestState{pending: true}
		case "output":
			l := strings.TrimSpace(ev.Output)
			switch {
			case l == "", strings.HasPrefix(l, "=== "), strings.HasPrefix(l, "--- "):
			case goLocatedLine.MatchString(ev.Output):
				if s.located == "" {
					s.located = l
				}
			case s.other == "":
				s.other = l
			}
		case "pass", "fail", "skip":
			s.pending = false
			msg := s.located
			if msg == "" {
				msg = s.other
			}
			switch ev.Action {
			case "pass":
				b.add(id, TestPassed, "")
			case "fail":
				b.add(id, TestFailed, msg)
				p.failed = true
			case "skip":
				b.add(id, TestSkipped, msg)
			}
		}
	}
	if events == 0 && len(bytes.TrimSpace(data)) > 0 {
		return Report{}, errors.New("go-json report: no `go test -json` event in the output")
	}
	for _, name := range pkgOrder {
		p := pkgs[name]
		if p.ended {
			continue
		}
		endPending(name)
		if p.started && !p.failed {
			b.add(name, TestFailed, noResultPackage)
		}
	}
	return b.report(), nil
}

// --- unittest -v -----------------------------------------------------------

var (
	// utHeader is a test's line in the run: "name (dotted.id)", then maybe
	// subtest parameters, then " ... outcome" (or nothing, when a docstring
	// line with the " ... " follows).
	utHeader = regexp.MustCompile(`^(\s*)(\S+) \(([^\s()]+)\)(.*)$`)
	// utSummary is a failure's header after a line of '='.
	utSummary = regexp.MustCompile(`^(FAIL|ERROR|UNEXPECTED SUCCESS): (\S+) \(([^\s()]+)\)`)
	utRan     = regexp.MustCompile(`^Ran \d+ tests? in `)
	ansiCode  = regexp.MustCompile("\x1b\\[[0-9;]*m")
)

// utTarget says what an outcome applies to.
type utTarget int

const (
	utNone utTarget = iota
	utMain          // the test itself
	utSub           // one of its subtests
)

// utParser reads unittest's verbose output line by line.
type utParser struct {
	b reportBuilder

	// The test whose line was seen last.
	cur     string
	result  bool     // cur has a status (its own or a failed subtest's)
	waiting utTarget // an outcome for cur may still come on a later line

	// A "name (id)" line without " ... ": a test's line if the next line
	// is its docstring, which ends in " ... ".
	docID     string
	docTarget utTarget

	ran     bool   // saw "Ran N tests"
	summary bool   // the run is over: failure details follow
	prevSep bool   // the previous line was a line of '='
	detail  string // the ID whose failure detail is being read
	dashes  bool   // ... and its traceback has begun
}

func parseUnittestReport(data []byte) (Report, error) {
	var p utParser
	for raw := range bytes.Lines(data) {
		line := string(raw)
		if strings.IndexByte(line, 0x1b) >= 0 {
			line = ansiCode.ReplaceAllString(line, "")
		}
		p.line(strings.TrimRight(line, "\r\n"))
	}
	p.finish()
	if len(p.b.tests) == 0 && !p.ran {
		return Report{}, errors.New("unittest report: no test lines and no \"Ran N tests\" line (not unittest -v output?)")
	}
	return p.b.report(), nil
}

func (p *utParser) line(line string) {
	trimmed := strings.TrimSpace(line)
	if utRan.MatchString(line) {
		p.ran, p.summary, p.detail = true, true, ""
		p.finish()
		return
	}
	if len(trimmed) >= 20 && strings.Trim(trimmed, "=") == "" {
		p.prevSep = true
		return
	}
	if p.prevSep {
		p.prevSep = false
		if m := utSummary.FindStringSubmatch(line); m != nil {
			p.summary = true
			p.finish()
			id := utID(m[2], m[3])
			p.detail, p.dashes = id, false
			msg := ""
			if m[1] == "UNEXPECTED SUCCESS" {
				msg, p.detail = "unexpected success", "" // it has no traceback
			}
			p.b.add(id, TestFailed, msg)
			return
		}
	}
	if p.summary {
		// The failure's message: the first unindented line of its
		// traceback section that is not "Traceback (...):".
		switch {
		case p.detail == "":
		case len(trimmed) >= 20 && strings.Trim(trimmed, "-") == "":
			p.dashes = true
		case p.dashes && trimmed != "" && line[0] != ' ' && line[0] != '\t' && trimmed != "Traceback (most recent call last):":
			// It says more than the run's "no result" or nothing.
			p.b.touch(p.detail).Message = reportMessage(trimmed)
			p.detail = ""
		}
		return
	}
	if p.docID != "" {
		id, target := p.docID, p.docTarget
		p.docID = ""
		if _, isTest := parseUTLine(line); !isTest {
			if i := utDots(line); i >= 0 {
				p.start(id, target)
				p.rest(target, line[i+4:], 0)
				return
			}
		}
		// It was not a test's line after all: read this one as usual.
	}
	if p.header(line, 0) {
		return
	}
	if p.cur != "" && p.waiting != utNone {
		if st, msg, ok := utOutcome(trimmed); ok {
			p.apply(p.waiting, st, msg)
		}
	}
}

// utLine is a test's line: "name (dotted)", maybe subtest parameters, then
// " ... " and what follows it, or nothing when a docstring line follows.
type utLine struct {
	id     string
	target utTarget
	dots   bool
	after  string
}

// parseUTLine reads a test's line; it reports false if line is not one.
func parseUTLine(line string) (utLine, bool) {
	m := utHeader.FindStringSubmatch(line)
	if m == nil {
		return utLine{}, false
	}
	indent, name, dotted, tail := m[1], m[2], m[3], m[4]
	h := utLine{id: utID(name, dotted), target: utMain}
	params := tail
	if i := utDots(tail); i >= 0 {
		params, h.after, h.dots = tail[:i], tail[i+4:], true
	}
	params = strings.TrimSpace(params)
	if params != "" {
		// A subtest's line: "  name (id) (i=1) ... FAIL" (Python 3.11+).
		if params[0] != '(' && params[0] != '[' {
			return utLine{}, false
		}
		h.target = utSub
	} else if indent != "" {
		return utLine{}, false
	}
	return h, true
}

// header handles line if it is a test's line, and reports whether it was.
func (p *utParser) header(line string, depth int) bool {
	h, ok := parseUTLine(line)
	if !ok {
		return false
	}
	if !h.dots {
		p.docID, p.docTarget = h.id, h.target
		return true
	}
	p.start(h.id, h.target)
	p.rest(h.target, h.after, depth)
	return true
}

// start makes id the current test, unless it is a subtest of the current one.
func (p *utParser) start(id string, target utTarget) {
	if target == utSub && p.cur == id {
		return
	}
	p.finish()
	p.cur, p.result, p.waiting = id, false, utNone
	p.b.touch(id)
}

// rest reads what follows " ... " on a test's line: its outcome, nothing
// yet, the test's own output, or another test's line (Python < 3.11 left
// the line open after a failed subtest).
func (p *utParser) rest(target utTarget, after string, depth int) {
	after = strings.TrimSpace(after)
	if st, msg, ok := utOutcome(after); ok {
		p.apply(target, st, msg)
		return
	}
	p.waiting = target
	if after != "" && depth < 2 {
		p.header(after, depth+1)
	}
}

// apply records an outcome of the current test or of one of its subtests;
// only a subtest's failure counts, the test's own outcome follows.
func (p *utParser) apply(target utTarget, st TestStatus, msg string) {
	if target == utSub {
		if st == TestFailed {
			p.b.add(p.cur, st, msg)
			p.result = true
		}
		p.waiting = utMain
		return
	}
	p.b.add(p.cur, st, msg)
	p.result, p.waiting = true, utNone
}

// finish fails the current test if it never got an outcome.
func (p *utParser) finish() {
	if p.cur != "" && !p.result {
		p.b.add(p.cur, TestFailed, "no result (the test run ended early?)")
	}
	p.cur, p.result, p.waiting, p.docID = "", false, utNone, ""
}

// utID is a test's ID from "name (dotted)": dotted, with name appended
// unless it already ends with it (Python 3.11+ prints module.Class.name,
// older ones module.Class).
func utID(name, dotted string) string {
	if dotted == name || strings.HasSuffix(dotted, "."+name) {
		return dotted
	}
	return dotted + "." + name
}

// utDots returns the index of " ..." that ends s or is followed by a space,
// or -1.
func utDots(s string) int {
	for off := 0; ; {
		i := strings.Index(s[off:], " ...")
		if i < 0 {
			return -1
		}
		i += off
		if i+4 == len(s) || s[i+4] == ' ' {
			return i
		}
		off = i + 4
	}
}

// utOutcome reads the outcome unittest prints after " ... ".
func utOutcome(s string) (TestStatus, string, bool) {
	switch s {
	case "ok", "expected failure":
		return TestPassed, "", true
	case "FAIL", "ERROR":
		return TestFailed, "", true
	case "unexpected success":
		return TestFailed, "unexpected success", true
	}
	if reason, ok := strings.CutPrefix(s, "skipped"); ok && (reason == "" || reason[0] == ' ') {
		reason = strings.TrimSpace(reason)
		if len(reason) >= 2 && (reason[0] == '\'' || reason[0] == '"') && reason[len(reason)-1] == reason[0] {
			reason = reason[1 : len(reason)-1]
		}
		return TestSkipped, reason, true
	}
	return "", "", false
}
