package explore

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

var (
	goTestFunc  = regexp.MustCompile(`^func (Test[A-Z0-9_]\w*|Test)\(\w+ \*testing\.T\)`)
	goModule    = regexp.MustCompile(`(?m)^module\s+(\S+)`)
	pyClass     = regexp.MustCompile(`^class (\w+)\b(.*)`)
	pyMethod    = regexp.MustCompile(`^\s+(?:async\s+)?def (test\w*)\(`)
	pyTopLevel  = regexp.MustCompile(`^(?:async\s+)?def (test\w*)\(`)
	pySkip      = regexp.MustCompile(`^\s*@(?:unittest\.)?(?:skip|expectedFailure)|^\s*@pytest\.mark\.(?:skip|skipif|xfail)`)
	pyDecorator = regexp.MustCompile(`^\s*@`)
	unittestBad = "unittest.loader._FailedTest."
)

// hiddenContainer is one hidden test file: the name its module or package
// has in reports, and the test IDs its source declares.
type hiddenContainer struct {
	names []string // how a load or build failure of the file is reported
	ids   []string
}

// staticHiddenTests reads the hidden test files' sources for the tests they
// declare (Go: func TestX(t *testing.T); Python: test_ methods of classes and
// test_ functions; a test under a skip decorator is left out, since it may
// skip itself), with IDs in the report format's terms. The grader needs
// them when a hidden file cannot even load or build on the base, so that the
// baseline names its module or package instead of its tests.
func staticHiddenTests(format string, hidden []byte, baseDir string) []hiddenContainer {
	var out []hiddenContainer
	tr := tar.NewReader(bytes.NewReader(hidden))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) || err != nil {
			return out
		}
		if h.Typeflag != tar.TypeReg || h.Size > 4<<20 {
			continue
		}
		name := strings.TrimPrefix(h.Name, "./")
		src, err := io.ReadAll(tr)
		if err != nil {
			return out
		}
		switch {
		case format == ReportGoJSON && strings.HasSuffix(name, "_test.go"):
			pkg := goImportPath(baseDir, path.Dir(name))
			if pkg == "" {
				continue
			}
			c := hiddenContainer{names: []string{pkg}}
			eachLine(src, func(line string) {
				if m := goTestFunc.FindStringSubmatch(line); m != nil {
					c.ids = append(c.ids, pkg+"."+m[1])
				}
			})
			out = append(out, c)
		case (format == ReportUnittest || format == ReportJUnit) && strings.HasSuffix(name, ".py"):
			mod := strings.ReplaceAll(strings.TrimSuffix(name, ".py"), "/", ".")
			c := hiddenContainer{names: []string{mod, unittestBad + path.Base(strings.TrimSuffix(name, ".py")), unittestBad + mod}}
			class := ""
			skipNext := false // a skip decorator stands above the next def
			eachLine(src, func(line string) {
				if pySkip.MatchString(line) {
					skipNext = true
					return
				}
				if pyDecorator.MatchString(line) {
					return
				}
				skip := skipNext
				skipNext = false
				if m := pyClass.FindStringSubmatch(line); m != nil {
					// Only classes the runner collects: unittest runs
					// TestCase subclasses, pytest classes named Test*.
					// A mixin's tests run under the names of the classes
					// that use it, which the source does not say.
					class = ""
					if format == ReportUnittest && strings.Contains(m[2], "TestCase") ||
						format == ReportJUnit && strings.HasPrefix(m[1], "Test") {
						class = m[1]
					}
					return
				}
				if m := pyTopLevel.FindStringSubmatch(line); m != nil {
					class = ""
					if format == ReportJUnit && !skip {
						c.ids = append(c.ids, mod+"::"+m[1])
					}
					return
				}
				if line != "" && line[0] != ' ' && line[0] != '\t' && line[0] != '#' && line[0] != '@' {
					class = ""
				}
				if m := pyMethod.FindStringSubmatch(line); m != nil && class != "" && !skip && !strings.HasPrefix(line, "        ") {
					if format == ReportJUnit {
						c.ids = append(c.ids, mod+"."+class+"::"+m[1])
					} else {
						c.ids = append(c.ids, mod+"."+class+"."+m[1])
					}
				}
			})
			out = append(out, c)
		}
	}
}

func eachLine(src []byte, f func(string)) {
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f(sc.Text())
	}
}

// goImportPath is the import path of the package in dir (slash path
// relative to the repository root): the nearest go.mod's module path plus
// the rest of dir; "" without a go.mod.
func goImportPath(baseDir, dir string) string {
	for d := dir; ; d = path.Dir(d) {
		data, err := os.ReadFile(filepath.Join(baseDir, filepath.FromSlash(d), "go.mod"))
		if err == nil {
			m := goModule.FindSubmatch(data)
			if m == nil {
				return ""
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(dir, d), "/")
			if rel == "" || rel == "." {
				return string(m[1])
			}
			return string(m[1]) + "/" + rel
		}
		if d == "." || d == "/" || d == "" {
			return ""
		}
	}
}
