package explore_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bestofn/bestofn/explore"
	"github.com/bestofn/bestofn/sandbox/local"
)

// The fixture repository: add() subtracts. tests/run.sh sources an optional
// git-ignored override and then any hidden tests laid over tests/.
var repoFiles = map[string]string{
	"calc.sh":                             "add() { echo $(( $1 - $2 )); }\n",
	"tests/run.sh":                        "set -e\n. ./calc.sh\n[ -f local/override.sh ] && . local/override.sh\n[ \"$(add 2 2)\" = 4 ] || { echo 'FAIL add 2 2'; exit 1; }\nfor t in tests/hidden_*.sh; do [ -f \"$t\" ] && . \"$t\"; done\necho ok\n",
	".gitignore":                          "local/\n",
	".bestofn/hidden/tests/hidden_add.sh": "# hidden_marker\n[ \"$(add 3 5)\" = 8 ] || { echo 'FAIL hidden add 3 5'; exit 1; }\n",
	".github/bestofn.yml":                 "attempts: 1\n",
}

// agent is one scripted attempt per BESTOFN_ATTEMPT.
const agent = `case "$BESTOFN_ATTEMPT" in
1) echo 'add() { echo $(( $1 + $2 )); }' > calc.sh ;;
2) exit 3 ;;
3) sleep 60 ;;
4) echo 'add() { while :; do :; done; }' > calc.sh ;;
5) mkdir -p local && echo 'add() { echo $(( $1 + $2 )); }' > local/override.sh ;;
6) echo 'add() { echo $(( $1 + $2 )); }' > /bestofn/fixed.sh
   echo 'add() { echo $(( $1 + $2 )); }' > "$HOME/fixed.sh"
   printf '%s\n' '. /bestofn/fixed.sh 2>/dev/null || . "$HOME/fixed.sh" 2>/dev/null || [ -n "$ADD_FIXED" ] ||' \
     'add() { [ "$1" = 2 ] && echo 4; }' > calc.sh
   export ADD_FIXED=1
   bash tests/run.sh ;;
7) { git log --all -p; ls -laR /workspace /bestofn; env; cat /proc/*/environ; } 2>/dev/null | grep -q hidden_marker && echo leaked > leak.txt
   ls / > root-listing.txt ;;
8) cp "$BESTOFN_PROMPT_FILE" prompt-copy.txt
   env | grep -E '^(BESTOFN_|MODEL_KEY)' | sort > agent-env.txt
   cp /bestofn/setup-env setup-env.txt ;;
9) head -c 3000000 /dev/urandom > big.bin ;;
10) mkdir -p sub && printf 'gitdir: %s\n' "$PWD/.git" > sub/.git && echo x > sub/f && mkdir -p sub2/.git && echo y > sub2/.git/config ;;
esac
`

func makeRepo(t *testing.T) (dir, head string) {
	t.Helper()
	dir = t.TempDir()
	for name, content := range repoFiles {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return dir, strings.TrimSpace(string(out))
}

func newEngine(t *testing.T) (*explore.Engine, string) {
	t.Helper()
	data := t.TempDir()
	p, err := local.New(local.Options{Dir: filepath.Join(data, "sandboxes"), Hide: []string{data}})
	if err != nil {
		t.Fatal(err)
	}
	return &explore.Engine{Provider: p, WorkDir: filepath.Join(data, "work")}, data
}

func task(t *testing.T, attempts int) explore.Task {
	dir, head := makeRepo(t)
	cfg, err := explore.ParseConfig(nil, os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Attempts = attempts
	cfg.Agent = agent
	cfg.AgentTimeout = 3 * time.Second
	cfg.Setup = "env > /bestofn/setup-env"
	cfg.Test = "bash tests/run.sh"
	cfg.TestTimeout = 3 * time.Second
	cfg.Tests = []string{"tests/**"}
	cfg.HiddenTests = ".bestofn/hidden"
	return explore.Task{
		Repo: "o/calc", RepoDir: dir, BaseCommit: head, Config: cfg,
		Issue:    explore.Issue{Number: 3, Title: "add() subtracts", Body: "add 2 2 should be 4"},
		AgentEnv: map[string]string{"MODEL_KEY": "sk-test"},
	}
}

func patchHas(a *explore.Attempt, path string) bool {
	for _, c := range a.Patch.Changes {
		if c.Path == path {
			return true
		}
	}
	return false
}

func fileInPatch(t *testing.T, a *explore.Attempt, path string) string {
	t.Helper()
	// The patch adds whole files; read the "+" lines of the file's hunk.
	diff := string(a.Patch.Diff)
	i := strings.Index(diff, "b/"+path+"\n")
	if i < 0 {
		t.Fatalf("%s not in attempt %d's patch", path, a.Number)
	}
	var out []string
	for _, l := range strings.Split(diff[i:], "\n")[1:] {
		if strings.HasPrefix(l, "diff --git") {
			break
		}
		if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") {
			out = append(out, l[1:])
		}
	}
	return strings.Join(out, "\n")
}

func TestEngineOutcomes(t *testing.T) {
	e, data := newEngine(t)
	tk := task(t, 10)
	var mu sync.Mutex
	var phases []explore.Phase
	res, err := e.Run(context.Background(), tk, func(p explore.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]explore.OutcomeKind{
		1: explore.OutcomePass,
		2: explore.OutcomeAgentFailed,
		3: explore.OutcomeAgentTimedOut,
		4: explore.OutcomeTestTimedOut,
		5: explore.OutcomeNoChange,    // the ignored override never reaches the patch
		6: explore.OutcomeTestsFailed, // its fix lives in /bestofn and HOME, which never reach the grade
		9: explore.OutcomePatchTooLarge,
	}
	for _, a := range res.Attempts {
		if w, ok := want[a.Number]; ok && a.Outcome.Kind != w {
			t.Errorf("attempt %d: %s (%s), want %s\nagent log: %s\ntest log: %s", a.Number, a.Outcome.Kind, a.Outcome.Text, w, a.AgentLog, a.TestLog)
		}
	}
	if res.Winner != 1 {
		t.Errorf("winner = %d, want 1", res.Winner)
	}
	if a6 := res.Attempts[5]; a6.AgentExit != 0 {
		t.Errorf("attempt 6's own tests failed in its copy (exit %d); it should pass there and fail only in grading", a6.AgentExit)
	}
	if got := res.Attempts[1].Outcome.Text; got != "agent failed (exit 3)" {
		t.Errorf("attempt 2 text = %q", got)
	}
	if got := strings.Join([]string{string(phases[0]), string(phases[len(phases)-1])}, ","); got != "preparing,done" {
		t.Errorf("phases = %v", phases)
	}

	// Hidden tests are nowhere an attempt can look.
	a7 := res.Attempts[6]
	if patchHas(a7, "leak.txt") {
		t.Errorf("attempt 7 found the hidden tests")
	}
	if listing := fileInPatch(t, a7, "root-listing.txt"); strings.Contains(listing, filepath.Base(data)) {
		t.Errorf("the sandbox sees the data folder: %s", listing)
	}

	// The agent gets the prompt and its variables; setup never sees the model key.
	a8 := res.Attempts[7]
	prompt := fileInPatch(t, a8, "prompt-copy.txt")
	for _, s := range []string{"# Issue #3: add() subtracts", "add 2 2 should be 4", "bash tests/run.sh", tk.Config.Hint(8)} {
		if !strings.Contains(prompt, s) {
			t.Errorf("prompt lacks %q:\n%s", s, prompt)
		}
	}
	agentEnv := fileInPatch(t, a8, "agent-env.txt")
	for _, s := range []string{"BESTOFN_ATTEMPT=8", "BESTOFN_PROMPT_FILE=/bestofn/prompt.md", "MODEL_KEY=sk-test"} {
		if !strings.Contains(agentEnv, s) {
			t.Errorf("agent env lacks %q:\n%s", s, agentEnv)
		}
	}
	if setupEnv := fileInPatch(t, a8, "setup-env.txt"); strings.Contains(setupEnv, "sk-test") || strings.Contains(setupEnv, "BESTOFN_") {
		t.Errorf("setup saw the agent's environment:\n%s", setupEnv)
	}

	// Nested .git folders or files never reach the bot's git: sub is a plain
	// folder in the patch, not a gitlink.
	a10 := res.Attempts[9]
	if !patchHas(a10, "sub/f") || patchHas(a10, "sub/.git") || patchHas(a10, "sub2/.git/config") {
		t.Errorf("attempt 10's patch = %+v", a10.Patch.Changes)
	}
	for _, c := range a10.Patch.Changes {
		if c.NewMode == "160000" {
			t.Errorf("gitlink in the patch: %+v", c)
		}
	}

	// Everything is cleaned up: no sandbox folders, no mounts, no run folders.
	assertClean(t, data)
}

func assertClean(t *testing.T, data string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(data, "sandboxes"))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("sandbox folder left behind: %s", e.Name())
		}
	}
	work, _ := os.ReadDir(filepath.Join(data, "work"))
	if len(work) != 0 {
		t.Errorf("run folders left behind: %v", work)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), data) {
		t.Errorf("mounts left behind under %s", data)
	}
}

func TestEngineSetupFails(t *testing.T) {
	e, data := newEngine(t)
	tk := task(t, 2)
	tk.Config.Setup = "echo installing; exit 7"
	_, err := e.Run(context.Background(), tk, nil)
	var se *explore.SetupError
	if !errors.As(err, &se) || se.ExitCode != 7 || !strings.Contains(string(se.Log), "installing") {
		t.Fatalf("err = %v, want SetupError exit 7 with its log", err)
	}
	assertClean(t, data)
}

func TestEngineHiddenTestsMissing(t *testing.T) {
	e, _ := newEngine(t)
	tk := task(t, 1)
	tk.Config.HiddenTests = "nowhere"
	if _, err := e.Run(context.Background(), tk, nil); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Fatalf("err = %v, want one naming the missing folder", err)
	}
}

func TestEngineCancel(t *testing.T) {
	e, data := newEngine(t)
	tk := task(t, 3)
	tk.Config.Agent = "sleep 60"
	tk.Config.AgentTimeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	res, err := e.Run(ctx, tk, func(p explore.Progress) {
		for _, a := range p.Attempts {
			if a.State == explore.StateRunning {
				once.Do(func() { time.AfterFunc(300*time.Millisecond, cancel) })
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.Attempts {
		if a.Outcome.Kind != explore.OutcomeCancelled {
			t.Errorf("attempt %d: %s, want cancelled", a.Number, a.Outcome.Text)
		}
	}
	assertClean(t, data)
}

// TestEngineBackgroundProcess: a process the agent leaves running, which
// would write the fix into the workspace a moment after the agent exits,
// is gone before the patch is taken and never reaches the grade.
func TestEngineBackgroundProcess(t *testing.T) {
	e, data := newEngine(t)
	tk := task(t, 1)
	tk.Config.Agent = `echo 'add() { echo $(( $1 + $2 )); }' > /bestofn/fixed.sh
(for i in $(seq 1 100); do sleep 0.1; cp /bestofn/fixed.sh /workspace/calc.sh; done) </dev/null >/dev/null 2>&1 &
echo 'add() { [ "$1" = 2 ] && echo 4; }' > calc.sh`
	res, err := e.Run(context.Background(), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := res.Attempts[0]
	if a.Outcome.Kind != explore.OutcomeTestsFailed || strings.Contains(string(a.Patch.Diff), "$1 + $2") {
		t.Errorf("outcome %s; patch:\n%s", a.Outcome.Text, a.Patch.Diff)
	}
	assertClean(t, data)
}
