package explore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ConfigPath is where a repository keeps its bestofn configuration.
const ConfigPath = ".github/bestofn.yml"

// MaxAttempts is the largest number of attempts one run may have (design doc:
// "default 5, at most 10").
const MaxAttempts = 10

// DefaultHints are the five approach hints of the design seed, one per
// attempt, repeated in order when there are more attempts than hints.
var DefaultHints = []string{
	"Make the smallest change that fixes the bug.",
	"Write a failing test first, then fix the code.",
	"Read every caller before changing the function.",
	"Find the root cause, even if the fix touches two files.",
	"",
}

// TestConfigGlobs are the protected paths whose change is reported as
// "changed test config" rather than "touched protected path": files that
// configure how the tests run (design doc, "Grading").
var TestConfigGlobs = []string{
	"**/conftest.py", "pytest.ini", "setup.cfg", "pyproject.toml", "tox.ini", "noxfile.py",
	"jest.config.*", "vitest.config.*", ".mocharc*", "karma.conf.*",
}

// DefaultProtected are the protected globs used when the configuration names
// none: the test configuration files and CI.
var DefaultProtected = append(append([]string{}, TestConfigGlobs...), ".github/**")

// Config is a repository's effective configuration: the file's values over
// the defaults of the detected ecosystem. Durations are wall time.
type Config struct {
	Attempts     int           `yaml:"attempts" json:"attempts"`
	Label        string        `yaml:"label" json:"label"`
	Agent        string        `yaml:"agent" json:"agent"`
	AgentTimeout time.Duration `yaml:"agent_timeout" json:"agent_timeout"`
	Setup        string        `yaml:"setup" json:"setup"`
	SetupTimeout time.Duration `yaml:"setup_timeout" json:"setup_timeout"`
	Test         string        `yaml:"test" json:"test"`
	TestTimeout  time.Duration `yaml:"test_timeout" json:"test_timeout"`
	Tests        []string      `yaml:"tests" json:"tests"`
	Protected    []string      `yaml:"protected" json:"protected"`
	HiddenTests  string        `yaml:"hidden_tests" json:"hidden_tests"`
	Hints        []string      `yaml:"hints" json:"hints"`
	Select       string        `yaml:"select" json:"select"`
	// Ecosystem is what detection found ("python", "go", "node", "rust", or
	// "" when nothing was recognised); it is not a file key.
	Ecosystem string `yaml:"-" json:"ecosystem"`
}

// Selection rules accepted by the `select` key.
const (
	SelectSmallestPatch = "smallest-patch"
	SelectFewestFiles   = "fewest-files"
)

// ConfigError lists every problem found in a configuration file, so that one
// reply can name them all.
type ConfigError struct {
	// Unknown holds keys the file has that bestofn does not know.
	Unknown []string
	// Invalid holds one message per key with a bad value ("attempts: must be 1 to 10").
	Invalid []string
}

func (e *ConfigError) Error() string {
	var parts []string
	if len(e.Unknown) > 0 {
		parts = append(parts, "unknown keys: "+strings.Join(e.Unknown, ", "))
	}
	parts = append(parts, e.Invalid...)
	return ConfigPath + ": " + strings.Join(parts, "; ")
}

// fileConfig mirrors the file; pointers tell "absent" from "zero".
type fileConfig struct {
	Attempts     *int      `yaml:"attempts"`
	Label        *string   `yaml:"label"`
	Agent        *string   `yaml:"agent"`
	AgentTimeout *duration `yaml:"agent_timeout"`
	Setup        *string   `yaml:"setup"`
	SetupTimeout *duration `yaml:"setup_timeout"`
	Test         *string   `yaml:"test"`
	TestTimeout  *duration `yaml:"test_timeout"`
	Tests        []string  `yaml:"tests"`
	Protected    []string  `yaml:"protected"`
	HiddenTests  *string   `yaml:"hidden_tests"`
	Hints        []string  `yaml:"hints"`
	Select       *string   `yaml:"select"`
}

var knownKeys = map[string]bool{
	"attempts": true, "label": true, "agent": true, "agent_timeout": true, "setup": true,
	"setup_timeout": true, "test": true, "test_timeout": true, "tests": true, "protected": true,
	"hidden_tests": true, "hints": true, "select": true,
}

// duration accepts Go durations ("90s", "10m") or a number of seconds.
type duration time.Duration

func (d *duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return errors.New("must be a duration such as 90s or 10m")
	}
	if secs, err := strconv.ParseFloat(n.Value, 64); err == nil {
		*d = duration(time.Duration(secs * float64(time.Second)))
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("must be a duration such as 90s or 10m, not %q", n.Value)
	}
	*d = duration(v)
	return nil
}

// ParseConfig reads a .github/bestofn.yml file (nil or empty data means no
// file) over the defaults for the repository tree in tree (used to detect the
// ecosystem). It returns a *ConfigError naming every unknown key and every
// bad value; other errors are YAML syntax errors.
func ParseConfig(data []byte, tree fs.FS) (Config, error) {
	cfg := Defaults(tree)
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return cfg, fmt.Errorf("%s: %w", ConfigPath, err)
	}
	if len(doc.Content) == 0 {
		return cfg, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return cfg, &ConfigError{Invalid: []string{"the file must be a mapping of keys to values"}}
	}
	cerr := &ConfigError{}
	var fc fileConfig
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i].Value, root.Content[i+1]
		if !knownKeys[key] {
			cerr.Unknown = append(cerr.Unknown, key)
			continue
		}
		// Decode key by key so that one bad value does not hide the others.
		one := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{root.Content[i], val}}
		var probe fileConfig
		if err := one.Decode(&probe); err != nil {
			cerr.Invalid = append(cerr.Invalid, key+": "+cleanYAMLError(err))
			continue
		}
		_ = one.Decode(&fc) // the same node decoded without error just above
	}
	sort.Strings(cerr.Unknown)
	fc.apply(&cfg, cerr)
	if len(cerr.Unknown) > 0 || len(cerr.Invalid) > 0 {
		return cfg, cerr
	}
	return cfg, nil
}

func cleanYAMLError(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n")
	msg = strings.TrimSpace(msg)
	if i := strings.Index(msg, "cannot unmarshal "); i >= 0 {
		return "wrong type (" + msg[i+len("cannot unmarshal "):] + ")"
	}
	return msg
}

func (fc *fileConfig) apply(cfg *Config, cerr *ConfigError) {
	bad := func(format string, a ...any) { cerr.Invalid = append(cerr.Invalid, fmt.Sprintf(format, a...)) }
	if fc.Attempts != nil {
		if *fc.Attempts < 1 || *fc.Attempts > MaxAttempts {
			bad("attempts: must be 1 to %d, not %d", MaxAttempts, *fc.Attempts)
		} else {
			cfg.Attempts = *fc.Attempts
		}
	}
	if fc.Label != nil {
		if strings.TrimSpace(*fc.Label) == "" {
			bad("label: must not be empty")
		} else {
			cfg.Label = *fc.Label
		}
	}
	setString := func(name string, src *string, dst *string) {
		if src == nil {
			return
		}
		if strings.TrimSpace(*src) == "" {
			bad("%s: must not be empty", name)
			return
		}
		*dst = *src
	}
	setString("agent", fc.Agent, &cfg.Agent)
	setString("test", fc.Test, &cfg.Test)
	if fc.Setup != nil {
		cfg.Setup = *fc.Setup // an empty setup is allowed: nothing to install
	}
	setDuration := func(name string, src *duration, dst *time.Duration) {
		if src == nil {
			return
		}
		if *src <= 0 || time.Duration(*src) > 24*time.Hour {
			bad("%s: must be between 1s and 24h", name)
			return
		}
		*dst = time.Duration(*src)
	}
	setDuration("agent_timeout", fc.AgentTimeout, &cfg.AgentTimeout)
	setDuration("setup_timeout", fc.SetupTimeout, &cfg.SetupTimeout)
	setDuration("test_timeout", fc.TestTimeout, &cfg.TestTimeout)
	setGlobs := func(name string, src []string, dst *[]string) {
		if src == nil {
			return
		}
		for _, g := range src {
			if err := checkGlob(g); err != nil {
				bad("%s: %v", name, err)
				return
			}
		}
		*dst = src
	}
	setGlobs("tests", fc.Tests, &cfg.Tests)
	setGlobs("protected", fc.Protected, &cfg.Protected)
	if fc.HiddenTests != nil {
		h := strings.Trim(strings.TrimSpace(*fc.HiddenTests), "/")
		if h == "" || strings.HasPrefix(*fc.HiddenTests, "/") || hasDotDot(h) {
			bad("hidden_tests: must be a folder inside the repository, not %q", *fc.HiddenTests)
		} else {
			cfg.HiddenTests = h
		}
	}
	if fc.Hints != nil {
		cfg.Hints = fc.Hints
	}
	if fc.Select != nil {
		switch *fc.Select {
		case SelectSmallestPatch, SelectFewestFiles:
			cfg.Select = *fc.Select
		default:
			bad("select: must be %s or %s, not %q", SelectSmallestPatch, SelectFewestFiles, *fc.Select)
		}
	}
}

func hasDotDot(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

// Defaults returns the configuration used without a file: the seed's five
// attempts and hints, and the test command and test globs of the ecosystem
// detected from marker files at the root of tree (go.mod, pyproject.toml or
// setup.py, package.json, Cargo.toml). tree may be nil.
func Defaults(tree fs.FS) Config {
	cfg := Config{
		Attempts:     5,
		Label:        "bestofn",
		AgentTimeout: 20 * time.Minute,
		SetupTimeout: 15 * time.Minute,
		TestTimeout:  10 * time.Minute,
		Protected:    DefaultProtected,
		Hints:        DefaultHints,
		Select:       SelectSmallestPatch,
	}
	exists := func(name string) bool {
		if tree == nil {
			return false
		}
		_, err := fs.Stat(tree, name)
		return err == nil
	}
	switch {
	case exists("go.mod"):
		cfg.Ecosystem = "go"
		cfg.Setup = "go mod download"
		cfg.Test = "go test ./..."
		cfg.Tests = []string{"**/*_test.go", "**/testdata/**"}
	case exists("pyproject.toml") || exists("setup.py") || exists("setup.cfg") || exists("requirements.txt"):
		cfg.Ecosystem = "python"
		if exists("requirements.txt") {
			cfg.Setup = "python3 -m pip install -r requirements.txt"
		}
		cfg.Test = "python3 -m pytest -q"
		cfg.Tests = []string{"tests/**", "test/**", "**/test_*.py", "**/*_test.py"}
	case exists("package.json"):
		cfg.Ecosystem = "node"
		cfg.Setup = "npm ci || npm install"
		cfg.Test = "npm test"
		cfg.Tests = []string{"test/**", "tests/**", "**/__tests__/**", "**/*.test.*", "**/*.spec.*"}
	case exists("Cargo.toml"):
		cfg.Ecosystem = "rust"
		cfg.Setup = "cargo fetch"
		cfg.Test = "cargo test"
		cfg.Tests = []string{"tests/**"}
	default:
		cfg.Test = "make test"
		cfg.Tests = []string{"tests/**", "test/**"}
	}
	return cfg
}

// Hint returns the hint of attempt k (1-based): the configured hints in
// order, repeated when there are more attempts than hints.
func (c Config) Hint(k int) string {
	if len(c.Hints) == 0 || k < 1 {
		return ""
	}
	return c.Hints[(k-1)%len(c.Hints)]
}

// ProtectedGlobs returns the protected globs plus the hidden tests folder,
// which no attempt may write to.
func (c Config) ProtectedGlobs() []string {
	g := append([]string{}, c.Protected...)
	if c.HiddenTests != "" {
		g = append(g, c.HiddenTests+"/**")
	}
	return g
}
