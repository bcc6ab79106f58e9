package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bestofn/bestofn/examples"
	"github.com/bestofn/bestofn/handlers"
	"github.com/bestofn/bestofn/handlers/handlerstest"
	"github.com/bestofn/bestofn/sandbox/runtime/runtimetest"
	"github.com/bestofn/bestofn/store"
)

const (
	secret     = handlerstest.Secret
	maintainer = handlerstest.Maintainer
)

// env is one bot wired to a GitHub double, on real SQLite, real git and the
// local sandbox backend, with issue #7 open on its repository.
type env struct {
	*handlerstest.Bot
	t testing.TB
}

// newEnv starts a bot whose GitHub double hosts the example repository as
// octo-org/name; edit, when set, changes the repository's files first.
func newEnv(t testing.TB, name string, edit func(dir string)) *env {
	return newEnvOpts(t, handlerstest.Options{Repo: name}, edit)
}

// newEnvOpts is newEnv with more options (sandbox modes).
func newEnvOpts(t testing.TB, opts handlerstest.Options, edit func(dir string)) *env {
	t.Helper()
	b, err := handlerstest.Start(context.Background(), handlerstest.Options{
		Repo: opts.Repo, DataDir: t.TempDir(), ForceCopy: opts.ForceCopy, ForceUnisolated: opts.ForceUnisolated, Sandbox: opts.Sandbox,
		MaxAttempts: opts.MaxAttempts, Workers: opts.Workers,
		Edit: func(dir string) error {
			if edit != nil {
				edit(dir)
			}
			return nil
		},
		Log: slog.New(slog.NewTextHandler(tbWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := b.GitHub.AddIssue(b.Repo, 7, "median() is wrong for even lengths", "median([4, 1, 3, 2]) returns 3, not 2.5"); err != nil {
		t.Fatal(err)
	}
	return &env{Bot: b, t: t}
}

// tbWriter sends the bot's log lines to the test's log.
type tbWriter struct{ t testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// fixture reads a real webhook payload from shared/fixtures (beside the
// repository); tests that need one skip without it.
func fixture(t testing.TB, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "shared", "fixtures", "webhooks", name))
	if err != nil {
		t.Skipf("fixture %s not found beside the repository", name)
	}
	var p map[string]any
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// labeled is GitHub's issues.labeled example for issue #7, pointed at the
// double, with an installation added.
func (e *env) labeled(label, sender string) []byte {
	body, err := e.Labeled(7, "median() is wrong for even lengths",
		"median([4, 1, 3, 2]) returns 3, not 2.5. $(touch /tmp/pwned) `rm -rf /`", label, sender)
	if err != nil {
		e.t.Fatal(err)
	}
	return body
}

func sign(body []byte, key string) string { return handlerstest.Sign(body, key) }

func (e *env) post(event, delivery string, body []byte, signature string) int {
	e.t.Helper()
	code, err := e.Post(context.Background(), event, delivery, body, signature)
	if err != nil {
		e.t.Fatal(err)
	}
	return code
}

// wait waits for every job to reach a final status and returns the jobs.
func (e *env) wait() []*store.Job {
	e.t.Helper()
	jobs, err := e.WaitJobs(context.Background(), 3*time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	return jobs
}

// TestExampleWebhookIsTheFixture: the payload the demo and these tests use
// is GitHub's example, byte for byte.
func TestExampleWebhookIsTheFixture(t *testing.T) {
	shared, err := os.ReadFile(filepath.Join("..", "..", "shared", "fixtures", "webhooks", "issues.labeled.json"))
	if err != nil {
		t.Skip("shared/fixtures not beside the repository")
	}
	embedded, err := fs.ReadFile(examples.FS, "webhooks/issues.labeled.json")
	if err != nil || !bytes.Equal(shared, embedded) {
		t.Fatalf("examples/webhooks/issues.labeled.json differs from the shared fixture (%v)", err)
	}
}

// runLabeled labels issue #7 with the default label as a maintainer, waits
// for the job, and returns the one run it made; the job must end done.
func (e *env) runLabeled(delivery string) *store.Run {
	e.t.Helper()
	body := e.labeled("bestofn", maintainer)
	e.post("issues", delivery, body, sign(body, secret))
	if jobs := e.wait(); jobs[0].Status != store.JobDone {
		e.t.Fatalf("job = %s (%s)", jobs[0].Status, jobs[0].Error)
	}
	runs, _ := e.Store.Runs(context.Background(), store.RunFilter{})
	if len(runs) != 1 {
		e.t.Fatalf("runs = %+v", runs)
	}
	return runs[0]
}

func (e *env) git(args ...string) string {
	e.t.Helper()
	out, err := exec.Command("git", append([]string{"--git-dir", e.GitHub.GitDir(e.Repo)}, args...)...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestEndToEnd(t *testing.T) {
	e := newEnv(t, "stats", nil)
	body := e.labeled("bestofn", maintainer)
	if got := e.post("issues", "delivery-1", body, sign(body, secret)); got != http.StatusAccepted {
		t.Fatalf("webhook answered %d, want 202", got)
	}
	jobs := e.wait()
	if len(jobs) != 1 || jobs[0].Status != store.JobDone {
		t.Fatalf("jobs = %+v", jobs[0])
	}

	// The same delivery again starts nothing.
	if got := e.post("issues", "delivery-1", body, sign(body, secret)); got != http.StatusOK {
		t.Errorf("redelivery answered %d, want 200", got)
	}
	if jobs := e.wait(); len(jobs) != 1 {
		t.Errorf("redelivery made %d jobs, want 1", len(jobs))
	}
	runs, _ := e.Store.Runs(context.Background(), store.RunFilter{})
	if len(runs) != 1 {
		t.Fatalf("runs = %d, want 1", len(runs))
	}
	run := runs[0]

	// One pull request from bestofn/issue-7 whose commit sits on the base
	// and changes exactly what attempt 1 changed.
	pulls := e.GitHub.Pulls(e.Repo)
	if len(pulls) != 1 {
		t.Fatalf("pulls = %d, want 1", len(pulls))
	}
	pr := pulls[0]
	if pr.Head != "bestofn/issue-7" || pr.Base != "main" || pr.Title != "Fix #7: median() is wrong for even lengths" {
		t.Errorf("pull = %+v", pr)
	}
	if !strings.Contains(pr.Body, "Fixes #7") || !strings.Contains(pr.Body, "Make the smallest change that fixes the bug.") {
		t.Errorf("pull body lacks Fixes #7 or the winning hint:\n%s", pr.Body)
	}
	if parent := e.git("rev-parse", pr.HeadSHA+"^"); parent != e.Base {
		t.Errorf("commit parent = %s, want base %s", parent, e.Base)
	}
	if n := e.git("rev-list", "--count", e.Base+".."+pr.HeadSHA); n != "1" {
		t.Errorf("%s commits on the branch, want 1", n)
	}
	if files := e.git("diff", "--name-status", e.Base, pr.HeadSHA); files != "M\tstats.py" {
		t.Errorf("branch changes %q, want only stats.py", files)
	}
	attempts, _ := e.Store.Attempts(context.Background(), run.ID)
	winner := attempts[0]
	if run.Winner != 1 || winner.OutcomeKind != "pass" {
		t.Fatalf("winner = %d (%s)", run.Winner, winner.Outcome)
	}
	if got := e.git("diff", "--full-index", e.Base, pr.HeadSHA); !strings.Contains(string(winner.Patch), strings.SplitN(got, "\n", 2)[1]) {
		t.Errorf("branch diff differs from attempt 1's patch:\n%s\n---\n%s", got, winner.Patch)
	}
	for _, a := range attempts {
		// Local sandboxes are estimated at Runtime's CPU price ($0.025 per
		// vCPU-hour) plus memory.
		if !a.CostEstimated || a.CostMicros < int64(a.CPUSeconds*25000/3600) {
			t.Errorf("attempt %d: cost %d µ$ (estimated %v) for %.2f CPU s", a.Number, a.CostMicros, a.CostEstimated, a.CPUSeconds)
		}
	}
	if !e.GitHub.Verified(pr.HeadSHA) {
		t.Errorf("the commit was not made through the Git Data API by the App")
	}

	// The scorecard on the pull request, one row per attempt.
	want := map[int]string{1: "✅ pass", 2: "❌ edited tests (tests/test_stats.py)", 3: "❌ changed test config (conftest.py)",
		4: "❌ tests failed (2 of 6; failed: 2 hidden tests)", 5: "⚪ no change"}
	prComments := e.GitHub.Comments(e.Repo, pr.Number)
	if len(prComments) != 1 || !strings.Contains(prComments[0].Body, "bestofn:run=1 scorecard") {
		t.Fatalf("comments on the pull request = %+v", prComments)
	}
	card := prComments[0].Body
	for k, outcome := range want {
		row := "| " + map[bool]string{true: "1 🏆", false: string(rune('0' + k))}[k == 1] + " |"
		line := ""
		for _, l := range strings.Split(card, "\n") {
			if strings.HasPrefix(l, row) {
				line = l
			}
		}
		if !strings.Contains(line, outcome) {
			t.Errorf("scorecard row %d = %q, want %q", k, line, outcome)
		}
	}
	if len(card) > handlers.MaxCommentBytes {
		t.Errorf("scorecard is %d bytes", len(card))
	}

	// One status comment on the issue, edited in place, linking the PR.
	issueComments := e.GitHub.Comments(e.Repo, 7)
	if len(issueComments) != 1 {
		t.Fatalf("comments on the issue = %d, want 1 status comment", len(issueComments))
	}
	st := issueComments[0]
	if st.Edits == 0 || !strings.Contains(st.Body, "bestofn:run=1 status") || !strings.Contains(st.Body, "#"+strconv.Itoa(pr.Number)) {
		t.Errorf("status comment (edits %d):\n%s", st.Edits, st.Body)
	}

	// No installation token anywhere under DATA_DIR.
	tokens := e.GitHub.Tokens()
	if len(tokens) == 0 {
		t.Fatal("no token was minted")
	}
	filepath.WalkDir(e.DataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(p)
		for _, tok := range tokens {
			if bytes.Contains(data, []byte(tok)) {
				t.Errorf("token found in %s", p)
			}
		}
		return nil
	})
	// Hidden tests never reach GitHub: not in the comments, not in the PR.
	everything := pr.Body
	for _, c := range append(e.GitHub.Comments(e.Repo, 7), prComments...) {
		everything += c.Body
	}
	if strings.Contains(everything, "test_hidden") || strings.Contains(everything, "[10, 2, 8, 4]") {
		t.Errorf("a comment or the pull request shows the hidden tests")
	}

	// The run page opens only with the key in the status comment's link.
	m := regexp.MustCompile(`\((http://[^)]+/runs/1\?key=[0-9a-f]{32})\)`).FindStringSubmatch(st.Body)
	if m == nil {
		t.Fatalf("status comment has no run page link:\n%s", st.Body)
	}
	for url, want := range map[string]int{m[1]: 200, e.URL + "/runs/1": 404, e.URL + "/runs/1?key=" + strings.Repeat("0", 32): 404, e.URL + "/runs/x": 404} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", url, resp.StatusCode, want)
		}
		if want == 200 && (!strings.Contains(string(page), "Attempt 4: tests failed (2 of 6") || !strings.Contains(string(page), "test_hidden")) {
			t.Errorf("run page lacks attempt 4's outcome and test log:\n%s", page)
		}
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Errorf("issue text was run as a shell command")
	}
	t.Logf("GitHub API requests for the run: %d", len(e.GitHub.Requests()))
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + func() string { b, _ := json.Marshal(n); return string(b) }())
}

// TestEndToEndWithoutIsolation is the laptop case: no bubblewrap, no
// overlayfs. The run still works, with copies, and says so on GitHub.
func TestEndToEndWithoutIsolation(t *testing.T) {
	e := newEnvOpts(t, handlerstest.Options{Repo: "plain", ForceCopy: true, ForceUnisolated: true}, nil)
	run := e.runLabeled("d-plain")
	if run.Winner != 1 {
		t.Fatalf("run = %+v", run)
	}
	pulls := e.GitHub.Pulls(e.Repo)
	if len(pulls) != 1 {
		t.Fatalf("pulls = %d", len(pulls))
	}
	st := e.GitHub.Comments(e.Repo, 7)[0].Body
	card := e.GitHub.Comments(e.Repo, pulls[0].Number)[0].Body
	for name, body := range map[string]string{"status comment": st, "scorecard": card} {
		if !strings.Contains(body, "[!WARNING]") || !strings.Contains(body, "unisolated") {
			t.Errorf("%s does not warn that attempts ran unisolated:\n%s", name, body)
		}
	}
}

// TestEndToEndOnRuntime runs the main job on the Runtime backend (its API
// served in process): same outcomes, and every sandbox deleted at the end.
func TestEndToEndOnRuntime(t *testing.T) {
	e := newEnvOpts(t, handlerstest.Options{Repo: "rt", Sandbox: "runtime"}, nil)
	run := e.runLabeled("d-rt")
	if run.Winner != 1 {
		t.Fatalf("run = %+v", run)
	}
	attempts, _ := e.Store.Attempts(context.Background(), run.ID)
	want := []string{"pass", "edited_tests", "changed_test_config", "tests_failed", "no_change"}
	for i, a := range attempts {
		if a.OutcomeKind != want[i] {
			t.Errorf("attempt %d = %s, want %s", a.Number, a.Outcome, want[i])
		}
	}
	for _, a := range attempts {
		if a.CostEstimated {
			t.Errorf("attempt %d's cost is an estimate; Runtime charges each sandbox (chargedMicros)", a.Number)
		}
	}
	pr := e.GitHub.Pulls(e.Repo)[0]
	if card := e.GitHub.Comments(e.Repo, pr.Number)[0].Body; !strings.Contains(card, "| cost |") || strings.Contains(card, "are estimates") {
		t.Errorf("scorecard cost column:\n%s", card)
	}
	if n := len(e.Runtime.Sandboxes()); n != 0 {
		t.Errorf("%d Runtime sandboxes left (a stopped one keeps a billed disk)", n)
	}
	if len(e.Runtime.RequestsTo(runtimetest.RouteFork)) == 0 {
		t.Errorf("no fork went through the Runtime API")
	}
}

// TestRuntimePartialFork: Runtime starts two of the five copies and then
// fails (no capacity); the two run, the three others are "sandbox error" in
// the scorecard, and no sandbox is left.
func TestRuntimePartialFork(t *testing.T) {
	e := newEnvOpts(t, handlerstest.Options{Repo: "rtfork", Sandbox: "runtime"}, nil)
	// The baseline forks twice (without and with the hidden tests); the
	// third fork is the attempts'.
	e.Runtime.Inject(runtimetest.Fault{Route: runtimetest.RouteFork, Status: 409, Code: "no_capacity", ForkFailAt: 3, Times: 1, Skip: 2})
	body := e.labeled("bestofn", maintainer)
	e.post("issues", "d-rtfork", body, sign(body, secret))
	if jobs := e.wait(); jobs[0].Status != store.JobDone {
		t.Fatalf("job = %s (%s)", jobs[0].Status, jobs[0].Error)
	}
	runs, _ := e.Store.Runs(context.Background(), store.RunFilter{})
	attempts, _ := e.Store.Attempts(context.Background(), runs[0].ID)
	for _, a := range attempts {
		want := "sandbox_error"
		switch a.Number {
		case 1:
			want = "pass"
		case 2:
			want = "edited_tests"
		}
		if a.OutcomeKind != want {
			t.Errorf("attempt %d = %s, want %s", a.Number, a.Outcome, want)
		}
	}
	if runs[0].Winner != 1 || len(e.GitHub.Pulls(e.Repo)) != 1 {
		t.Errorf("winner %d, %d pull requests", runs[0].Winner, len(e.GitHub.Pulls(e.Repo)))
	}
	if n := len(e.Runtime.Sandboxes()); n != 0 {
		t.Errorf("%d Runtime sandboxes left", n)
	}
}

func TestNoPassingAttempt(t *testing.T) {
	e := newEnv(t, "nopass", func(dir string) {
		// Only the attempts that change nothing or cheat run.
		os.WriteFile(filepath.Join(dir, ".github/bestofn.yml"), []byte(
			"attempts: 2\nagent: bash /bestofn/agent/attempt-$((BESTOFN_ATTEMPT + 3)).sh\n"+
				"test: python3 -m unittest discover -s tests -t .\ntests: [\"tests/**\"]\nhidden_tests: .bestofn/hidden\n"), 0o644)
	})
	body := e.labeled("bestofn", maintainer)
	e.post("issues", "d-nopass", body, sign(body, secret))
	e.wait()
	if pulls := e.GitHub.Pulls(e.Repo); len(pulls) != 0 {
		t.Fatalf("a pull request was opened: %+v", pulls)
	}
	comments := e.GitHub.Comments(e.Repo, 7)
	if len(comments) != 2 {
		t.Fatalf("issue comments = %d, want status + scorecard", len(comments))
	}
	if !strings.Contains(comments[1].Body, "No attempt passed") || !strings.Contains(comments[1].Body, "scorecard") {
		t.Errorf("scorecard on the issue:\n%s", comments[1].Body)
	}
	if _, ok := e.GitHub.Branch(e.Repo, "bestofn/issue-7"); ok {
		t.Errorf("a branch was pushed")
	}
}

func TestRefusals(t *testing.T) {
	tests := map[string]struct {
		config   string
		label    string
		sender   string
		comment  string // "" means no comment at all
		wantJobs store.JobStatus
	}{
		"ConfigErrorNamesKeys": {config: "attempts: 20\ntimeout: 5\nflavour: x\n", label: "bestofn", sender: maintainer,
			comment: "unknown keys: `flavour`, `timeout`", wantJobs: store.JobDone},
		"ReadOnlySender":  {label: "bestofn", sender: "reader", comment: "write access", wantJobs: store.JobDone},
		"OtherLabel":      {label: "bug", sender: maintainer, wantJobs: store.JobIgnored},
		"ConfiguredLabel": {config: "label: ai-fix\n", label: "bestofn", sender: maintainer, wantJobs: store.JobIgnored},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "refuse", func(dir string) {
				if tc.config != "" {
					os.WriteFile(filepath.Join(dir, ".github/bestofn.yml"), []byte(tc.config), 0o644)
				}
			})
			e.GitHub.SetPermission(e.Repo, "reader", "read")
			body := e.labeled(tc.label, tc.sender)
			if got := e.post("issues", "d-"+name, body, sign(body, secret)); got != http.StatusAccepted {
				t.Fatalf("webhook answered %d", got)
			}
			jobs := e.wait()
			if jobs[0].Status != tc.wantJobs {
				t.Errorf("job status = %s (%s), want %s", jobs[0].Status, jobs[0].Error, tc.wantJobs)
			}
			comments := e.GitHub.Comments(e.Repo, 7)
			if tc.comment == "" {
				if len(comments) != 0 {
					t.Errorf("comments = %+v, want none", comments)
				}
			} else if len(comments) != 1 || !strings.Contains(comments[0].Body, tc.comment) {
				t.Errorf("comments = %+v, want one containing %q", comments, tc.comment)
			}
			if runs, _ := e.Store.Runs(context.Background(), store.RunFilter{}); len(runs) != 0 {
				t.Errorf("a run started")
			}
			if len(e.GitHub.Pulls(e.Repo)) != 0 {
				t.Errorf("a pull request was opened")
			}
		})
	}
}

func TestWebhookIntake(t *testing.T) {
	e := newEnv(t, "intake", nil)
	labeled := e.labeled("bestofn", maintainer)
	bot := e.labeled("bestofn", "renovate[bot]")
	var botType map[string]any
	json.Unmarshal(labeled, &botType)
	botType["sender"].(map[string]any)["type"] = "Bot"
	botTyped, _ := json.Marshal(botType)
	opened, _ := json.Marshal(fixture(t, "issues.opened.json"))
	ping, _ := json.Marshal(fixture(t, "ping.json"))
	closed, _ := json.Marshal(fixture(t, "pull_request.closed.json"))
	noInstallation, _ := json.Marshal(fixture(t, "issues.labeled.json"))
	tests := map[string]struct {
		event     string
		body      []byte
		signature string
		want      int
	}{
		"MissingSignature":    {event: "issues", body: labeled, want: http.StatusUnauthorized},
		"WrongSignature":      {event: "issues", body: labeled, signature: sign(labeled, "other"), want: http.StatusUnauthorized},
		"SHA1Only":            {event: "issues", body: labeled, signature: "sha1=7d38cdd689735b008b3c702edd92eea23791c5f6", want: http.StatusUnauthorized},
		"SignatureNotHex":     {event: "issues", body: labeled, signature: "sha256=zz", want: http.StatusUnauthorized},
		"Ping":                {event: "ping", body: ping, signature: sign(ping, secret), want: http.StatusOK},
		"IssueOpened":         {event: "issues", body: opened, signature: sign(opened, secret), want: http.StatusAccepted},
		"OtherEvent":          {event: "pull_request", body: closed, signature: sign(closed, secret), want: http.StatusAccepted},
		"BotLogin":            {event: "issues", body: bot, signature: sign(bot, secret), want: http.StatusAccepted},
		"BotType":             {event: "issues", body: botTyped, signature: sign(botTyped, secret), want: http.StatusAccepted},
		"NoInstallation":      {event: "issues", body: noInstallation, signature: sign(noInstallation, secret), want: http.StatusAccepted},
		"Malformed":           {event: "issues", body: []byte(`{"action":`), signature: sign([]byte(`{"action":`), secret), want: http.StatusBadRequest},
		"WrongTypes":          {event: "issues", body: []byte(`{"action":"labeled","issue":"x"}`), signature: sign([]byte(`{"action":"labeled","issue":"x"}`), secret), want: http.StatusBadRequest},
		"LabeledWithoutIssue": {event: "issues", body: []byte(`{"action":"labeled"}`), signature: sign([]byte(`{"action":"labeled"}`), secret), want: http.StatusBadRequest},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := e.post(tc.event, "d-"+name, tc.body, tc.signature); got != tc.want {
				t.Errorf("status = %d, want %d", got, tc.want)
			}
			if _, err := e.Store.Delivery(context.Background(), "d-"+name); err == nil {
				t.Errorf("delivery was stored")
			}
		})
	}
	if jobs, _ := e.Store.Jobs(context.Background(), store.JobFilter{}); len(jobs) != 0 {
		t.Errorf("jobs = %d, want none", len(jobs))
	}
	t.Run("TooLarge", func(t *testing.T) {
		big := bytes.Repeat([]byte(" "), handlers.MaxPayloadBytes+1)
		if got := e.post("issues", "d-big", big, sign(big, secret)); got != http.StatusRequestEntityTooLarge {
			t.Errorf("status = %d, want 413", got)
		}
	})
	t.Run("Healthz", func(t *testing.T) {
		resp, err := http.Get(e.URL + "/healthz")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("healthz: %v %v", resp, err)
		}
	})
}

// TestHiddenTestsFromCompanionRepo keeps the hidden tests in a private
// companion repository: they still decide the grade, and without access to
// that repository the run stops with a comment that names it.
func TestHiddenTestsFromCompanionRepo(t *testing.T) {
	hiddenTest, err := fs.ReadFile(examples.FS, "median/.bestofn/hidden/tests/test_hidden.py")
	if err != nil {
		t.Fatal(err)
	}
	for name, reachable := range map[string]bool{"Reachable": true, "NotInstalled": false} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "companion", func(dir string) {
				os.RemoveAll(filepath.Join(dir, ".bestofn"))
				cfg := filepath.Join(dir, ".github", "bestofn.yml")
				data, _ := os.ReadFile(cfg)
				data = bytes.Replace(data, []byte("hidden_tests: .bestofn/hidden"), []byte("hidden_tests: {repo: octo-org/stats-hidden, path: hidden}"), 1)
				os.WriteFile(cfg, data, 0o644)
			})
			src := t.TempDir()
			os.MkdirAll(filepath.Join(src, "hidden", "tests"), 0o755)
			os.WriteFile(filepath.Join(src, "hidden", "tests", "test_hidden.py"), hiddenTest, 0o644)
			if _, err := e.GitHub.AddRepo("octo-org", "stats-hidden", src, "main"); err != nil {
				t.Fatal(err)
			}
			if reachable {
				e.GitHub.AddInstallation(handlerstest.Installation, e.Repo, "octo-org/stats-hidden")
			}
			body := e.labeled("bestofn", maintainer)
			e.post("issues", "d-companion", body, sign(body, secret))
			jobs := e.wait()
			runs, _ := e.Store.Runs(context.Background(), store.RunFilter{})
			if !reachable {
				st := e.GitHub.Comments(e.Repo, 7)[0].Body
				if jobs[0].Status != store.JobFailed || !strings.Contains(st, "octo-org/stats-hidden") || len(e.GitHub.Pulls(e.Repo)) != 0 {
					t.Errorf("job %s; status comment:\n%s", jobs[0].Status, st)
				}
				return
			}
			if len(runs) != 1 || runs[0].Winner != 1 {
				t.Fatalf("runs = %+v (job %s %s)", runs, jobs[0].Status, jobs[0].Error)
			}
			attempts, _ := e.Store.Attempts(context.Background(), runs[0].ID)
			if attempts[3].OutcomeKind != "tests_failed" {
				t.Errorf("attempt 4 = %s: the companion's hidden tests did not grade it", attempts[3].Outcome)
			}
		})
	}
}

// TestBrokenSuiteStopsTheRun: when the tests cannot run on the base, no
// attempt runs and the status comment says why.
func TestBrokenSuiteStopsTheRun(t *testing.T) {
	e := newEnv(t, "broken", func(dir string) {
		os.WriteFile(filepath.Join(dir, ".github", "bestofn.yml"), []byte("test: no-such-test-runner --all\n"), 0o644)
	})
	body := e.labeled("bestofn", maintainer)
	e.post("issues", "d-broken", body, sign(body, secret))
	jobs := e.wait()
	st := e.GitHub.Comments(e.Repo, 7)[0].Body
	if jobs[0].Status != store.JobFailed || !strings.Contains(st, "cannot run on the base") || !strings.Contains(st, "exit 127") {
		t.Errorf("job %s; status comment:\n%s", jobs[0].Status, st)
	}
	runs, _ := e.Store.Runs(context.Background(), store.RunFilter{})
	if attempts, _ := e.Store.Attempts(context.Background(), runs[0].ID); len(attempts) != 0 {
		t.Errorf("%d attempts ran against a broken suite", len(attempts))
	}
}
