package explore

import (
	"errors"
	"reflect"
	"testing"
	"testing/fstest"
	"time"
)

func TestParseConfig(t *testing.T) {
	py := fstest.MapFS{"pyproject.toml": {Data: []byte("[project]\n")}}
	tests := map[string]struct {
		file    string
		tree    fstest.MapFS
		check   func(t *testing.T, c Config)
		unknown []string
		invalid int
	}{
		"NoFileGo": {
			tree: fstest.MapFS{"go.mod": {Data: []byte("module x\n")}},
			check: func(t *testing.T, c Config) {
				if c.Ecosystem != "go" || c.Test != "go test -json ./..." || c.Attempts != 5 || c.Label != "bestofn" {
					t.Errorf("defaults = %+v", c)
				}
				if !reflect.DeepEqual(c.Hints, DefaultHints) {
					t.Errorf("hints = %q", c.Hints)
				}
			},
		},
		"NoFilePython": {
			tree: py,
			check: func(t *testing.T, c Config) {
				if c.Ecosystem != "python" || c.Test != "python3 -m pytest -q --junitxml=/bestofn/report.xml" {
					t.Errorf("defaults = %+v", c)
				}
			},
		},
		"Values": {
			file: "attempts: 3\nlabel: ai-fix\nagent: ./agent.sh\nagent_timeout: 90\ntest_timeout: 2m\n" +
				"tests: [\"spec/**\"]\nprotected: [\".github/**\"]\nhidden_tests: .bestofn/hidden/\nhints: [a, b]\nsetup: ''\nselect: fewest-files\n",
			tree: py,
			check: func(t *testing.T, c Config) {
				want := Config{Attempts: 3, Label: "ai-fix", Agent: "./agent.sh", AgentTimeout: 90 * time.Second,
					TestTimeout: 2 * time.Minute, Tests: []string{"spec/**"}, Protected: []string{".github/**"},
					HiddenTests: ".bestofn/hidden", Hints: []string{"a", "b"}, Select: SelectFewestFiles}
				got := Config{Attempts: c.Attempts, Label: c.Label, Agent: c.Agent, AgentTimeout: c.AgentTimeout,
					TestTimeout: c.TestTimeout, Tests: c.Tests, Protected: c.Protected, HiddenTests: c.HiddenTests,
					Hints: c.Hints, Select: c.Select}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %+v\nwant %+v", got, want)
				}
				if c.Setup != "" {
					t.Errorf("setup = %q, want empty (explicitly cleared)", c.Setup)
				}
				if c.Hint(3) != "a" {
					t.Errorf("hint 3 = %q, want hints to repeat", c.Hint(3))
				}
			},
		},
		"UnknownKeysAllNamed":   {file: "attempt: 3\ntimeout: 5\nlabel: x\n", unknown: []string{"attempt", "timeout"}},
		"BadValuesAllNamed":     {file: "attempts: 51\nagent_timeout: soon\ntests: 3\nselect: random\nhidden_tests: ../x\n", invalid: 5},
		"UnknownAndBad":         {file: "attempts: 0\nfoo: 1\n", unknown: []string{"foo"}, invalid: 1},
		"EmptyFile":             {file: "\n# nothing\n", check: func(t *testing.T, c Config) {}},
		"NotAMapping":           {file: "- a\n- b\n", invalid: 1},
		"AttemptsWrongType":     {file: "attempts: many\n", invalid: 1},
		"EmptyAgentRefused":     {file: "agent: ''\n", invalid: 1},
		"HiddenTestsAbsolute":   {file: "hidden_tests: /etc\n", invalid: 1},
		"GlobWithBadCharacters": {file: "tests: ['[']\n", invalid: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.file), tc.tree)
			if tc.unknown == nil && tc.invalid == 0 {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				tc.check(t, c)
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *ConfigError", err)
			}
			if !reflect.DeepEqual(ce.Unknown, tc.unknown) {
				t.Errorf("unknown = %q, want %q", ce.Unknown, tc.unknown)
			}
			if len(ce.Invalid) != tc.invalid {
				t.Errorf("invalid = %q, want %d messages", ce.Invalid, tc.invalid)
			}
		})
	}
}

func TestParseConfigSyntaxError(t *testing.T) {
	if _, err := ParseConfig([]byte("attempts: [1,\n"), nil); err == nil {
		t.Fatal("no error for broken YAML")
	}
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		glob, path string
		want       bool
	}{
		{"**/conftest.py", "conftest.py", true},
		{"**/conftest.py", "a/b/conftest.py", true},
		{"**/conftest.py", "a/conftest.pyc", false},
		{"tests/**", "tests/test_x.py", true},
		{"tests/**", "tests/a/b.py", true},
		{"tests/**", "tests", false},
		{"tests/**", "src/tests/x.py", false},
		{"pytest.ini", "pytest.ini", true},
		{"pytest.ini", "sub/pytest.ini", false},
		{"**/test_*.py", "pkg/test_a.py", true},
		{"**/test_*.py", "pkg/a_test.py", false},
		{".github/**", ".github/workflows/ci.yml", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
	}
	for _, tc := range tests {
		if got := MatchGlob(tc.glob, tc.path); got != tc.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", tc.glob, tc.path, got, tc.want)
		}
	}
}
