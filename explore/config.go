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

// DefaultMaxAttempts is the server's default max_attempts (design doc:
// "default 5, at most 10"); MaxAttempts is the most a server may allow,
// for backends that fork that many.
const DefaultMaxAttempts = 10

// MaxAttempts is the largest number of attempts one run may have (design doc:
// "default 5, at most 10").
const MaxAttempts = 50

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
	"**/conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "setup.cfg", "pyproject.toml", "tox.ini", "noxfile.py",
	"jest.config.*", "vitest.config.*", ".mocharc*", "karma.conf.*",
	// Modules that shadow Python's test runners, or run at interpreter start.
	"unittest.py", "unittest/**", "pytest.py", "pytest/**", "_pytest/**",
	"**/sitecustomize.py", "**/usercustomize.py", "**/*.pth",
}

// ConventionalTestGlobs name files that test runners collect as tests by
// their own conventions (pytest and unittest test_*.py, Go *_test.go, node
// --test's *.test.js, *-test.js, test-*.js and test/ folders, jest's
// __tests__ and *.spec.*). A file an attempt adds that matches them is a new
// test whatever the `tests` key says: it never votes.
var ConventionalTestGlobs = []string{
	"**/test_*.py", "**/*_test.py", "**/conftest.py", "**/*_test.go",
	"**/*.test.*", "**/*-test.*", "**/*_test.*", "**/test-*.*", "**/test.js", "**/test.mjs", "**/test.cjs",
	"**/*.spec.*", "**/__tests__/**", "**/test/**", "**/tests/**",
}

// DefaultProtected are the protected globs used when the configuration names
// none: the test configuration files and CI.
var DefaultProtected = append(append([]string{}, TestConfigGlobs...), ".github/**")

// Config is a repository's effective configuration: the file's values over
// the defaults of the detected ecosystem. Durations are wall time.
type Config struct {
	Attempts int `yaml:"attempts" json:"attempts"`
	// Plan, when `attempts` is a list, holds one entry per attempt: what
	// that copy varies (hint, agent, budget) and its name in the scorecard.
	Plan []AttemptPlan `yaml:"-" json:"plan,omitempty"`
	// StopEarly stops the other attempts once one is graded pass.
	StopEarly bool `yaml:"stop_early" json:"stop_early"`
	// BudgetUSD caps the run's cost, in dollars: an attempt that would start
	// after it is spent is skipped. Zero means no budget.
	BudgetUSD float64 `yaml:"budget_usd" json:"budget_usd"`
	// Parallel is how many attempts run at once; zero means all.
	Parallel     int           `yaml:"parallel" json:"parallel"`
	Label        string        `yaml:"label" json:"label"`
	Agent        string        `yaml:"agent" json:"agent"`
	AgentTimeout time.Duration `yaml:"agent_timeout" json:"agent_timeout"`
	Setup        string        `yaml:"setup" json:"setup"`
	SetupTimeout time.Duration `yaml:"setup_timeout" json:"setup_timeout"`
	Test         string        `yaml:"test" json:"test"`
	TestTimeout  time.Duration `yaml:"test_timeout" json:"test_timeout"`
	Tests        []string      `yaml:"tests" json:"tests"`
	Protected    []string      `yaml:"protected" json:"protected"`
	// HiddenTests is a folder of hidden tests: inside the repository, or,
	// with HiddenRepo set, inside that companion repository.
	HiddenTests string `yaml:"hidden_tests" json:"hidden_tests"`
	// HiddenRepo ("owner/name") is a private companion repository holding
	// the hidden tests, read with the installation token on the bot's side.
	HiddenRepo string   `yaml:"-" json:"hidden_repo,omitempty"`
	Hints      []string `yaml:"hints" json:"hints"`
	Select     string   `yaml:"select" json:"select"`
	// SelectChain is `select` given as a list: rules applied in order
	// (score, smallest-patch, fewest-files, lint).
	SelectChain []string `yaml:"-" json:"select_chain,omitempty"`
	// Score measures every passing attempt in its grading copy (the
	// command prints one number as its last line); nil when not set.
	Score *ScoreSpec `yaml:"-" json:"score,omitempty"`
	// ScoreRuns is how many times the score command runs; the median counts.
	ScoreRuns int `yaml:"score_runs" json:"score_runs"`
	// Lint is a command that exits 0 when an attempt's code is clean, for
	// the lint selection rule.
	Lint string `yaml:"lint" json:"lint,omitempty"`
	// TestReport says how to read the test run: "junit:<path>" (a JUnit XML
	// file; a relative path is under /workspace), "go-json", "unittest", or
	// "exit-code" (the exit code alone). Detected from the test command when
	// the file is silent.
	TestReport string `yaml:"test_report" json:"test_report"`
	// TestRetries is how many times a failing test run is run again; a test
	// that passes on a retry is marked flaky.
	TestRetries int `yaml:"test_retries" json:"test_retries"`
	// MaxPatchBytes caps an attempt's patch, in bytes.
	MaxPatchBytes int64 `yaml:"max_patch_bytes" json:"max_patch_bytes"`
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
	Attempts      *attemptsKey `yaml:"attempts"`
	StopEarly     *bool        `yaml:"stop_early"`
	BudgetUSD     *float64     `yaml:"budget_usd"`
	Parallel      *int         `yaml:"parallel"`
	Label         *string      `yaml:"label"`
	Agent         *string      `yaml:"agent"`
	AgentTimeout  *duration    `yaml:"agent_timeout"`
	Setup         *string      `yaml:"setup"`
	SetupTimeout  *duration    `yaml:"setup_timeout"`
	Test          *string      `yaml:"test"`
	TestTimeout   *duration    `yaml:"test_timeout"`
	Tests         []string     `yaml:"tests"`
	Protected     []string     `yaml:"protected"`
	HiddenTests   *hiddenTests `yaml:"hidden_tests"`
	Hints         []string     `yaml:"hints"`
	Select        *selectKey   `yaml:"select"`
	Score         *ScoreSpec   `yaml:"score"`
	ScoreRuns     *int         `yaml:"score_runs"`
	Lint          *string      `yaml:"lint"`
	TestReport    *string      `yaml:"test_report"`
	TestRetries   *int         `yaml:"test_retries"`
	MaxPatchBytes *int64       `yaml:"max_patch_bytes"`
}

// hiddenTests is the hidden_tests key: a folder ("hidden_tests: .bestofn/hidden")
// or a folder in a companion repository ("hidden_tests: {repo: o/n, path: dir}").
type hiddenTests struct {
	Repo string `yaml:"repo"`
	Path string `yaml:"path"`
}

func (h *hiddenTests) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		h.Path = n.Value
		return nil
	}
	type plain hiddenTests
	var p plain
	if n.Kind != yaml.MappingNode {
		return errors.New("must be a folder or {repo: owner/name, path: folder}")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != "repo" && k != "path" {
			return fmt.Errorf("unknown key %q (want repo and path)", k)
		}
	}
	if err := n.Decode(&p); err != nil {
		return err
	}
	*h = hiddenTests(p)
	return nil
}

var knownKeys = map[string]bool{
	"attempts": true, "label": true, "agent": true, "agent_timeout": true, "setup": true,
	"setup_timeout": true, "test": true, "test_timeout": true, "tests": true, "protected": true,
	"hidden_tests": true, "hints": true, "select": true, "test_report": true, "test_retries": true,
	"max_patch_bytes": true, "stop_early": true, "budget_usd": true, "parallel": true,
	"score": true, "score_runs": true, "lint": true,
}

// Selection rules a `select` list may chain, besides SelectSmallestPatch and
// SelectFewestFiles.
const (
	SelectScore = "score"
	SelectLint  = "lint"
)

// ScoreSpec is the `score` key: a command whose last output line is a
// number, and whether lower or higher is better.
type ScoreSpec struct {
	Command string `yaml:"command" json:"command"`
	Better  string `yaml:"better" json:"better"`
}

// selectKey is `select`: one rule or a list of rules.
type selectKey []string

func (s *selectKey) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*s = selectKey{n.Value}
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		*s = l
		return nil
	}
	return errors.New("must be a rule or a list of rules")
}

// Chain returns the selection rules in order: the `select` list, or the one
// rule `select` names.
func (c Config) Chain() []string {
	if len(c.SelectChain) > 0 {
		return c.SelectChain
	}
	return []string{c.Select}
}

// AttemptPlan is one entry of a list under `attempts`. Empty fields take the
// run's: the hint of the hints list, the configured agent and agent_timeout.
type AttemptPlan struct {
	Hint  *string `yaml:"hint" json:"hint,omitempty"`
	Agent string  `yaml:"agent" json:"agent,omitempty"`
	// Budget is the agent's time limit for this attempt.
	Budget duration `yaml:"budget" json:"budget,omitempty"`
	// Turns limits the agent's turns where its preset supports it
	// (claude-code's --max-turns); it reaches any agent as BESTOFN_MAX_TURNS.
	Turns int `yaml:"turns" json:"turns,omitempty"`
	// Label names the attempt in the scorecard ("opus, 10 min").
	Label string `yaml:"label" json:"label,omitempty"`
}

// attemptsKey is `attempts`: a number, or a list of AttemptPlan.
type attemptsKey struct {
	n    int
	plan []AttemptPlan
}

func (a *attemptsKey) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Decode(&a.n)
	case yaml.SequenceNode:
		for i, item := range n.Content {
			if item.Kind != yaml.MappingNode {
				return fmt.Errorf("entry %d must be a mapping of hint, agent, budget, label", i+1)
			}
			for j := 0; j+1 < len(item.Content); j += 2 {
				switch k := item.Content[j].Value; k {
				case "hint", "agent", "budget", "turns", "label":
				default:
					return fmt.Errorf("entry %d: unknown key %q (want hint, agent, budget, turns, label)", i+1, k)
				}
			}
			var p AttemptPlan
			if err := item.Decode(&p); err != nil {
				return fmt.Errorf("entry %d: %v", i+1, cleanYAMLError(err))
			}
			a.plan = append(a.plan, p)
		}
		a.n = len(a.plan)
		return nil
	}
	return errors.New("must be a number or a list of attempts")
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
		if fc.Attempts.n < 1 || fc.Attempts.n > MaxAttempts {
			bad("attempts: must be 1 to %d, not %d", MaxAttempts, fc.Attempts.n)
		} else {
			cfg.Attempts, cfg.Plan = fc.Attempts.n, fc.Attempts.plan
			for i, p := range cfg.Plan {
				if p.Budget < 0 || time.Duration(p.Budget) > 24*time.Hour {
					bad("attempts: entry %d: budget must be between 1s and 24h", i+1)
				}
				if p.Turns < 0 || p.Turns > 10000 {
					bad("attempts: entry %d: turns must be 1 to 10000", i+1)
				}
			}
		}
	}
	if fc.StopEarly != nil {
		cfg.StopEarly = *fc.StopEarly
	}
	if fc.BudgetUSD != nil {
		if *fc.BudgetUSD < 0 {
			bad("budget_usd: must not be negative")
		} else {
			cfg.BudgetUSD = *fc.BudgetUSD
		}
	}
	setRange(cerr, "parallel", fc.Parallel, &cfg.Parallel, 1, MaxAttempts)
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
		h := strings.Trim(strings.TrimSpace(fc.HiddenTests.Path), "/")
		repo := strings.TrimSpace(fc.HiddenTests.Repo)
		switch {
		case h == "" || strings.HasPrefix(strings.TrimSpace(fc.HiddenTests.Path), "/") || hasDotDot(h):
			bad("hidden_tests: must be a folder inside the repository, not %q", fc.HiddenTests.Path)
		case repo != "" && !validRepoName(repo):
			bad("hidden_tests: repo must be owner/name, not %q", repo)
		default:
			cfg.HiddenTests, cfg.HiddenRepo = h, repo
		}
	}
	if fc.TestReport != nil {
		if err := checkReport(*fc.TestReport); err != nil {
			bad("test_report: %v", err)
		} else {
			cfg.TestReport = *fc.TestReport
		}
	}
	setRange(cerr, "test_retries", fc.TestRetries, &cfg.TestRetries, 0, 5)
	setRange(cerr, "max_patch_bytes", fc.MaxPatchBytes, &cfg.MaxPatchBytes, 1, MaxPatchLimit)
	if fc.Hints != nil {
		cfg.Hints = fc.Hints
	}
	if fc.Score != nil {
		switch {
		case strings.TrimSpace(fc.Score.Command) == "":
			bad("score: needs a command")
		case fc.Score.Better != "lower" && fc.Score.Better != "higher":
			bad("score: better must be lower or higher, not %q", fc.Score.Better)
		default:
			sc := *fc.Score
			cfg.Score = &sc
		}
	}
	setRange(cerr, "score_runs", fc.ScoreRuns, &cfg.ScoreRuns, 1, 20)
	if fc.Lint != nil {
		cfg.Lint = *fc.Lint
	}
	if fc.Select != nil {
		chain := []string(*fc.Select)
		ok := len(chain) > 0
		for _, rule := range chain {
			switch {
			case rule == SelectSmallestPatch || rule == SelectFewestFiles:
			case rule == SelectScore && cfg.Score != nil:
			case rule == SelectLint && strings.TrimSpace(cfg.Lint) != "":
			case rule == SelectScore || rule == SelectLint:
				bad("select: the %s rule needs the %s key", rule, rule)
				ok = false
			default:
				bad("select: unknown rule %q (want score, smallest-patch, fewest-files or lint)", rule)
				ok = false
			}
		}
		if ok {
			cfg.Select, cfg.SelectChain = chain[0], nil
			if len(chain) > 1 {
				cfg.SelectChain = chain
			}
		}
	}
}

// validRepoName reports whether s looks like "owner/name".
func validRepoName(s string) bool {
	owner, name, ok := strings.Cut(s, "/")
	valid := func(x string) bool {
		if x == "" || x == "." || x == ".." || len(x) > 100 {
			return false
		}
		for _, r := range x {
			if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
		return true
	}
	return ok && valid(owner) && valid(name)
}

// checkReport validates a test_report value.
func checkReport(v string) error {
	switch {
	case v == ReportGoJSON || v == ReportUnittest || v == ReportExitCode:
		return nil
	case strings.HasPrefix(v, ReportJUnit+":"):
		p := strings.TrimPrefix(v, ReportJUnit+":")
		if strings.TrimSpace(p) == "" || hasDotDot(p) {
			return fmt.Errorf("junit needs a path, as in junit:reports/junit.xml")
		}
		return nil
	}
	return fmt.Errorf("must be junit:<path>, go-json, unittest or exit-code, not %q", v)
}

// setRange copies a whole-number key's value into dst when it is within
// [lo, hi], and records a message naming the key otherwise; a nil src (the
// key is absent) changes nothing.
func setRange[T int | int64](cerr *ConfigError, name string, src *T, dst *T, lo, hi T) {
	if src == nil {
		return
	}
	if *src < lo || *src > hi {
		cerr.Invalid = append(cerr.Invalid, fmt.Sprintf("%s: must be %d to %d, not %d", name, lo, hi, *src))
		return
	}
	*dst = *src
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
		Attempts:      5,
		Label:         "bestofn",
		AgentTimeout:  20 * time.Minute,
		SetupTimeout:  15 * time.Minute,
		TestTimeout:   10 * time.Minute,
		Protected:     DefaultProtected,
		Hints:         DefaultHints,
		Select:        SelectSmallestPatch,
		TestRetries:   1,
		MaxPatchBytes: MaxPatchBytes,
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
		cfg.Test = "go test -json ./..."
		cfg.Tests = []string{"**/*_test.go", "**/testdata/**"}
	case exists("pyproject.toml") || exists("setup.py") || exists("setup.cfg") || exists("requirements.txt"):
		cfg.Ecosystem = "python"
		if exists("requirements.txt") {
			cfg.Setup = "python3 -m pip install -r requirements.txt"
		}
		cfg.Test = "python3 -m pytest -q --junitxml=/bestofn/report.xml"
		cfg.Tests = []string{"tests/**", "test/**", "**/test_*.py", "**/*_test.py"}
	case exists("package.json"):
		cfg.Ecosystem = "node"
		cfg.Setup = "npm ci || npm install"
		cfg.Test = "npm test"
		cfg.Tests = []string{"**/test/**", "**/tests/**", "**/__tests__/**", "**/*.test.*", "**/*-test.*", "**/*_test.*", "**/test-*.*", "**/*.spec.*"}
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

// Hint returns the hint of attempt k (1-based): its plan's hint when it has
// one, else the configured hints in order, repeated when there are more
// attempts than hints.
func (c Config) Hint(k int) string {
	if p := c.plan(k); p != nil && p.Hint != nil {
		return *p.Hint
	}
	if len(c.Hints) == 0 || k < 1 {
		return ""
	}
	return c.Hints[(k-1)%len(c.Hints)]
}

func (c Config) plan(k int) *AttemptPlan {
	if k < 1 || k > len(c.Plan) {
		return nil
	}
	return &c.Plan[k-1]
}

// AgentFor returns attempt k's agent command (its plan's agent, a preset
// name expanded, else the configured agent) and time limit.
func (c Config) AgentFor(k int) (string, time.Duration) {
	agent, timeout := c.Agent, c.AgentTimeout
	if p := c.plan(k); p != nil {
		if p.Agent != "" {
			agent = p.Agent
		}
		if p.Budget > 0 {
			timeout = time.Duration(p.Budget)
		}
	}
	return ExpandAgent(agent), timeout
}

// Turns returns attempt k's turn limit, 0 for none.
func (c Config) Turns(k int) int {
	if p := c.plan(k); p != nil {
		return p.Turns
	}
	return 0
}

// Choices returns what attempt k's plan sets: its agent (as written: a
// preset name or a command) and budget, "" for what it leaves to the run.
func (c Config) Choices(k int) (agent, budget string) {
	if p := c.plan(k); p != nil {
		if p.Budget > 0 {
			budget = time.Duration(p.Budget).String()
		}
		return p.Agent, budget
	}
	return "", ""
}

// Axis names what attempt k varies, for the scorecard and stats: its plan's
// label, else its agent and budget when the plan sets them; "" without a plan.
func (c Config) Axis(k int) string {
	p := c.plan(k)
	if p == nil {
		return ""
	}
	if p.Label != "" {
		return p.Label
	}
	var parts []string
	if p.Agent != "" {
		parts = append(parts, p.Agent)
	}
	if p.Budget > 0 {
		parts = append(parts, time.Duration(p.Budget).String())
	}
	if p.Turns > 0 {
		parts = append(parts, fmt.Sprintf("%d turns", p.Turns))
	}
	return strings.Join(parts, ", ")
}

// ReportExitCode is the test_report value that trusts the exit code alone.
const ReportExitCode = "exit-code"

// MaxPatchLimit is the largest max_patch_bytes a repository may set, in bytes.
const MaxPatchLimit = 512 << 20

// Report returns the report format and, for junit, the report's path inside
// the sandbox: the configured test_report, else what the test command shows
// (`go test -json`, `unittest ... -v`, `--junitxml=PATH`,
// `--test-reporter=junit --test-reporter-destination=PATH`), else exit-code.
func (c Config) Report() (format, path string) {
	v := c.TestReport
	if v == "" {
		v = detectReport(c.Test)
	}
	if p, ok := strings.CutPrefix(v, ReportJUnit+":"); ok {
		if !strings.HasPrefix(p, "/") {
			p = "/workspace/" + p
		}
		return ReportJUnit, p
	}
	return v, ""
}

func detectReport(cmd string) string {
	fields := strings.Fields(cmd)
	has := func(s string) bool {
		for _, f := range fields {
			if f == s {
				return true
			}
		}
		return false
	}
	value := func(flag string) string {
		for i, f := range fields {
			if v, ok := strings.CutPrefix(f, flag+"="); ok {
				return v
			}
			if f == flag && i+1 < len(fields) {
				return fields[i+1]
			}
		}
		return ""
	}
	switch {
	case has("go") && has("test") && has("-json"):
		return ReportGoJSON
	case has("unittest") && (has("-v") || has("--verbose")):
		return ReportUnittest
	case value("--junitxml") != "":
		return ReportJUnit + ":" + value("--junitxml")
	case value("--junit-xml") != "":
		return ReportJUnit + ":" + value("--junit-xml")
	case value("--test-reporter") == "junit" && value("--test-reporter-destination") != "":
		return ReportJUnit + ":" + value("--test-reporter-destination")
	}
	return ReportExitCode
}

// ProtectedGlobs returns the protected globs plus the hidden tests folder,
// which no attempt may write to.
func (c Config) ProtectedGlobs() []string {
	g := append([]string{}, c.Protected...)
	if c.HiddenTests != "" && c.HiddenRepo == "" {
		g = append(g, c.HiddenTests+"/**")
	}
	return g
}
