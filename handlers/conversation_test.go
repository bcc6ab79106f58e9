package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bestofn/bestofn/github"
	"github.com/bestofn/bestofn/handlers"
	"github.com/bestofn/bestofn/handlers/handlerstest"
	"github.com/bestofn/bestofn/store"
)

// comment creates a comment on the double and delivers its real
// issue_comment.created payload; it returns the webhook's status.
func (e *env) comment(number int, onPR bool, body, sender, association string) int {
	e.t.Helper()
	id, err := e.GitHub.AddComment(e.Repo, number, sender, body)
	if err != nil {
		e.t.Fatal(err)
	}
	payload, err := e.Comment(number, onPR, id, body, sender, association)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.post("issue_comment", "c-"+strconv.FormatInt(id, 10), payload, sign(payload, secret))
}

// botComments are the bot's comments on an issue or pull request.
func (e *env) botComments(number int) []string {
	var out []string
	for _, c := range e.GitHub.Comments(e.Repo, number) {
		if strings.HasSuffix(c.User, "[bot]") {
			out = append(out, c.Body)
		}
	}
	return out
}

func (e *env) reactions(content string) int {
	n := 0
	for _, r := range e.GitHub.Reactions() {
		if r.Content == content {
			n++
		}
	}
	return n
}

func (e *env) runs() []*store.Run {
	runs, err := e.Store.Runs(context.Background(), store.RunFilter{})
	if err != nil {
		e.t.Fatal(err)
	}
	return runs
}

func TestCommandRunsOnIssue(t *testing.T) {
	e := newEnv(t, "cmd", nil)
	if got := e.comment(7, false, "Could you try?\n/bestofn 2", maintainer, "NONE"); got != http.StatusAccepted {
		t.Fatalf("webhook = %d", got)
	}
	e.wait()
	runs := e.runs()
	if len(runs) != 1 || runs[0].Winner != 1 {
		t.Fatalf("runs = %+v", runs)
	}
	attempts, _ := e.Store.Attempts(context.Background(), runs[0].ID)
	if len(attempts) != 2 {
		t.Errorf("attempts = %d, want 2 (asked with /bestofn 2)", len(attempts))
	}
	if e.reactions("eyes") != 1 {
		t.Errorf("reactions = %+v, want one eyes", e.GitHub.Reactions())
	}
	if len(e.GitHub.Pulls(e.Repo)) != 1 {
		t.Errorf("no pull request")
	}
}

func TestCommandRefusals(t *testing.T) {
	tests := map[string]struct {
		body, sender, association string
		onPR                      bool
		reply                     string
	}{
		"ReadOnlyUser":   {body: "/bestofn", sender: "reader", association: "CONTRIBUTOR", reply: "write access"},
		"UnknownVerb":    {body: "/bestofn deploy", sender: maintainer, association: "OWNER", reply: "Unknown command"},
		"TwoCommands":    {body: "/bestofn\n/bestofn 3", sender: maintainer, association: "OWNER", reply: "One command per comment"},
		"RetryOnIssue":   {body: "/bestofn retry", sender: maintainer, association: "OWNER", reply: "works on a pull request"},
		"NotOurPR":       {body: "/bestofn retry", sender: maintainer, association: "OWNER", onPR: true, reply: "did not open this pull request"},
		"RunOnAPR":       {body: "/bestofn 3", sender: maintainer, association: "OWNER", onPR: true, reply: "On a pull request"},
		"CancelNothing":  {body: "/bestofn cancel", sender: maintainer, association: "OWNER", reply: "no run in progress"},
		"ReadOnlyCancel": {body: "/bestofn cancel", sender: "reader", association: "NONE", reply: "needs write access"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "refuse", nil)
			e.GitHub.SetPermission(e.Repo, "reader", "read")
			number := 7
			if tc.onPR {
				number = 9 // a pull request the bot never opened
			}
			if got := e.comment(number, tc.onPR, tc.body, tc.sender, tc.association); got != http.StatusAccepted {
				t.Fatalf("webhook = %d", got)
			}
			e.wait()
			replies := e.botComments(number)
			if len(replies) != 1 || !strings.Contains(replies[0], tc.reply) {
				t.Errorf("replies = %q, want one with %q", replies, tc.reply)
			}
			if e.reactions("-1") != 1 {
				t.Errorf("reactions = %+v, want one -1", e.GitHub.Reactions())
			}
			if len(e.runs()) != 0 {
				t.Errorf("a run started")
			}
		})
	}
}

func TestCommandIgnored(t *testing.T) {
	e := newEnv(t, "ignore", nil)
	for i, c := range []struct{ body, sender string }{
		{"/bestofn", "renovate[bot]"}, // bots never trigger the bot
		{"nice work, no command here", maintainer},
		{"> /bestofn\nquoted, not a command", maintainer},
	} {
		id, _ := e.GitHub.AddComment(e.Repo, 7, c.sender, c.body)
		payload, _ := e.Comment(7, false, id, c.body, c.sender, "OWNER")
		if got := e.post("issue_comment", "ign-"+strconv.Itoa(i), payload, sign(payload, secret)); got != http.StatusAccepted {
			t.Errorf("comment %d: webhook = %d", i, got)
		}
	}
	if jobs, _ := e.Store.Jobs(context.Background(), store.JobFilter{}); len(jobs) != 0 {
		t.Errorf("jobs = %d, want none", len(jobs))
	}
}

func TestHelpAndStatus(t *testing.T) {
	e := newEnv(t, "help", nil)
	e.comment(7, false, "/bestofn help", "anyone", "NONE")
	e.comment(7, false, "/bestofn status", "anyone", "NONE")
	e.wait()
	replies := strings.Join(e.botComments(7), "\n---\n")
	if !strings.Contains(replies, "/bestofn revise <what to change>") || !strings.Contains(replies, "No bestofn run for #7 yet") {
		t.Errorf("replies:\n%s", replies)
	}
}

// TestRacingTriggersMakeOneRun: a label and two comments at once give
// exactly one run; the others are told a run is in progress.
func TestRacingTriggersMakeOneRun(t *testing.T) {
	e := newEnv(t, "race", nil)
	label := e.labeled("bestofn", maintainer)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); e.post("issues", "race-label", label, sign(label, secret)) }()
	go func() { defer wg.Done(); e.comment(7, false, "/bestofn", maintainer, "OWNER") }()
	go func() { defer wg.Done(); e.comment(7, false, "/bestofn 3", maintainer, "OWNER") }()
	wg.Wait()
	e.wait()
	if runs := e.runs(); len(runs) != 1 {
		t.Fatalf("runs = %d, want 1", len(runs))
	}
	busy := 0
	for _, c := range e.botComments(7) {
		if strings.Contains(c, "A run is already in progress on this issue (started by @"+maintainer) && strings.Contains(c, "`/bestofn cancel`") {
			busy++
		}
	}
	if busy != 2 {
		t.Errorf("busy replies = %d, want 2:\n%s", busy, strings.Join(e.botComments(7), "\n---\n"))
	}
	if len(e.GitHub.Pulls(e.Repo)) != 1 {
		t.Errorf("pull requests = %d", len(e.GitHub.Pulls(e.Repo)))
	}
}

// TestRetryRevisePickOnTheBotsPR: every follow-up updates the same pull
// request and branch, never a second one.
func TestRetryRevisePickOnTheBotsPR(t *testing.T) {
	e := newEnv(t, "follow", func(dir string) {
		// Attempts 1 and 2 fix median (2 with a longer patch) or, when
		// revising, do what the reviewer asked; attempt 3 changes nothing.
		os.WriteFile(filepath.Join(dir, ".github", "bestofn.yml"), []byte(`attempts: 3
test: python3 -m unittest discover -s tests -t . -v
tests: ["tests/**"]
hidden_tests: .bestofn/hidden
agent: |
  [ "$BESTOFN_ATTEMPT" = 3 ] && exit 0
  if grep -q 'please also handle empty lists' "$BESTOFN_PROMPT_FILE"; then
    printf '\n\n# revised: callers never pass an empty list\n' >> stats.py
    exit 0
  fi
  python3 - <<'PY'
  import pathlib
  p = pathlib.Path("stats.py")
  s = p.read_text()
  p.write_text(s.replace("    return ordered[len(ordered) // 2]\n", "    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n"))
  PY
  [ "$BESTOFN_ATTEMPT" = 2 ] && printf '\n\n# attempt two was here\n' >> stats.py
  exit 0
`), 0o644)
	})
	body := e.labeled("bestofn", maintainer)
	e.post("issues", "first", body, sign(body, secret))
	e.wait()
	pr := e.GitHub.Pulls(e.Repo)[0]
	first := pr.HeadSHA

	// retry: a fresh run from the default branch, same branch and PR.
	e.comment(pr.Number, true, "/bestofn retry", maintainer, "OWNER")
	e.wait()
	runs := e.runs()
	if len(runs) != 2 || runs[0].PRNumber != pr.Number {
		t.Fatalf("after retry: runs = %+v", runs)
	}
	if got := e.GitHub.Pulls(e.Repo); len(got) != 1 {
		t.Fatalf("after retry: %d pull requests", len(got))
	}
	head, _ := e.GitHub.Branch(e.Repo, "bestofn/issue-7")
	if parent := e.git("rev-parse", head+"^"); parent != e.Base {
		t.Errorf("retried commit's parent = %s, want the base %s", parent, e.Base)
	}

	// pick of an attempt that did not pass is refused; pick of one that
	// passed puts its patch on the branch.
	e.comment(pr.Number, true, "/bestofn pick 3", maintainer, "OWNER")
	e.wait()
	if last := e.botComments(pr.Number); !strings.Contains(last[len(last)-1], "Attempt 3 of run") || !strings.Contains(last[len(last)-1], "did not pass") {
		t.Errorf("pick 3 reply = %q", last[len(last)-1])
	}
	e.comment(pr.Number, true, "/bestofn pick 2", maintainer, "OWNER")
	e.wait()
	picked, _ := e.GitHub.Branch(e.Repo, "bestofn/issue-7")
	if got := e.git("show", picked+":stats.py"); !strings.Contains(got, "# attempt two was here") {
		t.Errorf("pick 2 did not put attempt 2 on the branch:\n%s", got)
	}
	if parent := e.git("rev-parse", picked+"^"); parent != e.Base {
		t.Errorf("picked commit's parent = %s, want the base", parent)
	}

	// revise: starts from the branch; the winner is a new commit on top.
	// The reviewer's words are in a line comment; the agent looks for them
	// in its prompt.
	before, _ := e.GitHub.Branch(e.Repo, "bestofn/issue-7")
	if _, err := e.GitHub.AddReviewComment(e.Repo, pr.Number, "reviewer", "stats.py", 12, "please also handle empty lists"); err != nil {
		t.Fatal(err)
	}
	e.comment(pr.Number, true, "/bestofn revise see my line comment", maintainer, "OWNER")
	e.wait()
	runs = e.runs()
	if len(runs) != 3 {
		t.Fatalf("after revise: %d runs", len(runs))
	}
	after, _ := e.GitHub.Branch(e.Repo, "bestofn/issue-7")
	if runs[0].Winner == 0 {
		t.Fatalf("revise run: no winner")
	}
	if parent := e.git("rev-parse", after+"^"); parent != before {
		t.Errorf("revised commit's parent = %s, want the branch head %s", parent, before)
	}
	if got := e.git("show", after+":stats.py"); !strings.Contains(got, "# revised") || !strings.Contains(got, "# attempt two was here") {
		t.Errorf("stats.py on the branch after revise:\n%s", got)
	}
	if runs[0].BaseCommit != before {
		t.Errorf("revise ran on %s, want the branch head %s", runs[0].BaseCommit, before)
	}
	if got := e.GitHub.Pulls(e.Repo); len(got) != 1 {
		t.Fatalf("after revise: %d pull requests", len(got))
	}
	// The latest run's winner is already on the branch.
	e.comment(pr.Number, true, "/bestofn pick "+strconv.Itoa(runs[0].Winner), maintainer, "OWNER")
	e.wait()
	if last := e.botComments(pr.Number); !strings.Contains(last[len(last)-1], "already on the branch") {
		t.Errorf("pick of the winner: reply = %q", last[len(last)-1])
	}
	if first == after {
		t.Errorf("the branch never moved")
	}
}

// TestCancelMidRun: cancel stops the agents, removes the sandboxes, says so
// and releases the issue for the next run.
func TestCancelMidRun(t *testing.T) {
	e := newEnv(t, "cancel", func(dir string) {
		os.WriteFile(filepath.Join(dir, ".github", "bestofn.yml"), []byte(
			"attempts: 2\nagent: sleep 120\nagent_timeout: 5m\ntest: python3 -m unittest discover -s tests -t . -v\ntests: [\"tests/**\"]\n"), 0o644)
	})
	e.comment(7, false, "/bestofn", maintainer, "OWNER")
	deadline := time.Now().Add(time.Minute)
	for {
		if runs := e.runs(); len(runs) == 1 && runs[0].Status == store.RunAttempting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not reach its attempts")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the agents are sleeping now
	start := time.Now()
	e.comment(7, false, "/bestofn cancel", maintainer, "OWNER")
	jobs := e.wait()
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("cancel took %s", took)
	}
	var runJob *store.Job
	for _, j := range jobs {
		if j.Kind == "run" {
			runJob = j
		}
	}
	if runJob == nil || runJob.Status != store.JobCancelled {
		t.Fatalf("run job = %+v", runJob)
	}
	if r := e.runs()[0]; r.Status != store.RunCancelled {
		t.Errorf("run status = %s", r.Status)
	}
	st := e.GitHub.Comments(e.Repo, 7)[1].Body // after the command comment itself
	all := strings.Join(e.botComments(7), "\n---\n")
	if !strings.Contains(all, "bestofn · cancelled") || !strings.Contains(all, "Cancelling the run for #7") {
		t.Errorf("comments:\n%s\n%s", st, all)
	}
	entries, _ := os.ReadDir(filepath.Join(e.DataDir, "sandboxes"))
	for _, en := range entries {
		if !strings.HasPrefix(en.Name(), ".") {
			t.Errorf("sandbox left behind: %s", en.Name())
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), e.DataDir) {
		t.Errorf("mounts left under %s", e.DataDir)
	}
	if out, _ := os.ReadFile("/proc/loadavg"); len(out) == 0 {
		t.Log("no /proc")
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "sleep\x00120") {
			t.Errorf("an agent is still running: %s", p)
		}
	}
	if _, err := e.Store.ActiveJob(context.Background(), e.Repo, 7); err == nil {
		t.Errorf("the issue is still locked")
	}
}

func TestPRClosedAndInstallationRemoved(t *testing.T) {
	e := newEnv(t, "closed", nil)
	body := e.labeled("bestofn", maintainer)
	e.post("issues", "l", body, sign(body, secret))
	e.wait()
	pr := e.GitHub.Pulls(e.Repo)[0]
	closed, err := e.PullRequestClosed(pr.Number, "bestofn/issue-7", true)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.post("pull_request", "closed-1", closed, sign(closed, secret)); got != http.StatusAccepted {
		t.Fatalf("webhook = %d", got)
	}
	e.wait()
	if o, _ := e.Store.PROutcome(context.Background(), e.runs()[0].ID); o != "merged" {
		t.Errorf("outcome = %q, want merged", o)
	}
	other, _ := e.PullRequestClosed(99, "feature/x", false)
	e.post("pull_request", "closed-2", other, sign(other, secret))
	if jobs, _ := e.Store.Jobs(context.Background(), store.JobFilter{}); len(jobs) != 2 {
		t.Errorf("a pull request from another branch made a job")
	}
}

func TestInstallationDeletedDropsQueuedJobs(t *testing.T) {
	e := newEnv(t, "uninstall", nil)
	payload, err := os.ReadFile(filepath.Join("..", "examples", "webhooks", "installation.deleted.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.post("installation", "uninstall-1", payload, sign(payload, secret)); got != http.StatusAccepted {
		t.Fatalf("webhook = %d", got)
	}
	e.wait()
	var ev struct {
		Installation struct{ ID int64 } `json:"installation"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	active, known, err := e.Store.InstallationActive(context.Background(), ev.Installation.ID)
	if err != nil || !known || active {
		t.Errorf("installation %d: active=%v known=%v err=%v", ev.Installation.ID, active, known, err)
	}
}

// TestMoreThanTenAttempts: twelve attempts are refused under the default
// MAX_ATTEMPTS and run when the bot allows them; on Runtime the copies are
// forked in batches of ten, transparently.
func TestMoreThanTenAttempts(t *testing.T) {
	e := newEnv(t, "twelve-refused", nil)
	e.comment(7, false, "/bestofn 12", maintainer, "OWNER")
	e.wait()
	if replies := e.botComments(7); len(replies) != 1 || !strings.Contains(replies[0], "at most 10") {
		t.Errorf("replies = %q", replies)
	}
	e = newEnvOpts(t, handlerstest.Options{Repo: "twelve", Sandbox: "runtime", MaxAttempts: 12}, nil)
	e.comment(7, false, "/bestofn 12", maintainer, "OWNER")
	e.wait()
	runs := e.runs()
	if len(runs) != 1 || runs[0].Winner != 1 {
		t.Fatalf("runs = %+v", runs)
	}
	if attempts, _ := e.Store.Attempts(context.Background(), runs[0].ID); len(attempts) != 12 {
		t.Errorf("attempts = %d, want 12", len(attempts))
	}
	if n := len(e.Runtime.Sandboxes()); n != 0 {
		t.Errorf("%d Runtime sandboxes left", n)
	}
}

// TestReviewFindings covers what a security review found in the
// conversation: read-only members, unrelated labels, closed pull requests,
// and cancel behind busy workers.
func TestReviewFindings(t *testing.T) {
	t.Run("ReadOnlyMemberRefused", func(t *testing.T) {
		e := newEnv(t, "member", nil)
		e.GitHub.SetPermission(e.Repo, "member-reader", "read")
		e.comment(7, false, "/bestofn", "member-reader", "MEMBER")
		e.wait()
		if len(e.runs()) != 0 {
			t.Errorf("a read-only organisation member started a run")
		}
		if r := e.botComments(7); len(r) != 1 || !strings.Contains(r[0], "write access") {
			t.Errorf("replies = %q", r)
		}
	})
	t.Run("UnrelatedLabelDoesNotSwallowTheRun", func(t *testing.T) {
		e := newEnv(t, "labels", nil)
		bug := e.labeled("bug", maintainer)
		ours := e.labeled("bestofn", maintainer)
		e.post("issues", "bug", bug, sign(bug, secret))
		e.post("issues", "ours", ours, sign(ours, secret))
		e.wait()
		if runs := e.runs(); len(runs) != 1 || runs[0].Winner != 1 {
			t.Errorf("runs = %+v, want the bestofn label's run", runs)
		}
		for _, c := range e.botComments(7) {
			if strings.Contains(c, "already in progress") {
				t.Errorf("busy reply: %s", c)
			}
		}
	})
	t.Run("NoCommandsOnAClosedPR", func(t *testing.T) {
		e := newEnv(t, "closedpr", nil)
		body := e.labeled("bestofn", maintainer)
		e.post("issues", "l", body, sign(body, secret))
		e.wait()
		pr := e.GitHub.Pulls(e.Repo)[0]
		closed, _ := e.PullRequestClosed(pr.Number, "bestofn/issue-7", false)
		e.post("pull_request", "closed", closed, sign(closed, secret))
		e.wait()
		e.comment(pr.Number, true, "/bestofn retry", maintainer, "OWNER")
		e.wait()
		if r := e.botComments(pr.Number); !strings.Contains(r[len(r)-1], "was closed") {
			t.Errorf("retry on a closed PR: %q", r[len(r)-1])
		}
		if len(e.runs()) != 1 || len(e.GitHub.Pulls(e.Repo)) != 1 {
			t.Errorf("a closed PR's retry ran or opened a pull request")
		}
	})
	t.Run("CancelDoesNotWaitBehindRuns", func(t *testing.T) {
		e := newEnvOpts(t, handlerstest.Options{Repo: "busy", Workers: 1}, func(dir string) {
			os.WriteFile(filepath.Join(dir, ".github", "bestofn.yml"), []byte(
				"attempts: 1\nagent: sleep 120\ntest: python3 -m unittest discover -s tests -t . -v\ntests: [\"tests/**\"]\n"), 0o644)
		})
		e.comment(7, false, "/bestofn", maintainer, "OWNER")
		deadline := time.Now().Add(time.Minute)
		for len(e.runs()) == 0 || e.runs()[0].Status != store.RunAttempting {
			if time.Now().After(deadline) {
				t.Fatal("the run did not start")
			}
			time.Sleep(50 * time.Millisecond)
		}
		e.comment(7, false, "/bestofn cancel", maintainer, "OWNER")
		e.wait()
		if r := e.runs()[0]; r.Status != store.RunCancelled {
			t.Errorf("run = %s, want cancelled while the only worker ran it", r.Status)
		}
	})
	t.Run("AgentChosenPathsStayText", func(t *testing.T) {
		e := newEnv(t, "inject", func(dir string) {
			os.WriteFile(filepath.Join(dir, ".github", "bestofn.yml"), []byte(
				"attempts: 1\nagent: mkdir -p .github && echo x > '.github/x<b>y [a](https:evil.example) @octo-org'\ntest: python3 -m unittest discover -s tests -t . -v\ntests: [\"tests/**\"]\n"), 0o644)
		})
		e.comment(7, false, "/bestofn", maintainer, "OWNER")
		e.wait()
		var rows []string
		for _, c := range e.botComments(7) {
			for _, l := range strings.Split(c, "\n") {
				if strings.HasPrefix(l, "|") {
					rows = append(rows, l)
				}
			}
		}
		all := strings.Join(rows, "\n")
		if !strings.Contains(all, "touched protected path") {
			t.Fatalf("rows:\n%s", all)
		}
		if strings.Contains(all, "<b>") || strings.Contains(all, "[a](") || strings.Contains(all, " @octo-org") {
			t.Errorf("agent-chosen path reached a table as markup:\n%s", all)
		}
	})
}

// TestRestartMarksInterruptedRuns: a run a stopped process left in progress
// has its status comment edited to say so when the bot starts again.
func TestRestartMarksInterruptedRuns(t *testing.T) {
	e := newEnv(t, "restart", nil)
	ctx := context.Background()
	commentID, err := e.GitHub.AddComment(e.Repo, 7, e.GitHub.BotLogin, "<!-- bestofn:run=1 status -->\n### bestofn · attempting")
	if err != nil {
		t.Fatal(err)
	}
	job := &store.Job{Kind: "run", InstallationID: handlerstest.Installation, Repo: e.Repo, Issue: 7}
	if _, _, err := e.Store.RecordDelivery(ctx, store.Delivery{ID: "crashed"}, job); err != nil {
		t.Fatal(err)
	}
	run := &store.Run{JobID: job.ID, Repo: e.Repo, Issue: 7, Status: store.RunAttempting}
	e.Store.CreateRun(ctx, run)
	run.StatusCommentID = commentID
	e.Store.UpdateRun(ctx, run)
	// The job is left "running" and then cancelled at once so the new bot
	// does not rerun it in this test.
	e.Store.FinishJob(ctx, job.ID, store.JobCancelled, "test")

	app, err := github.New(github.Config{AppID: e.GitHub.AppID, PrivateKey: e.GitHub.PrivateKeyPEM, BaseURL: e.GitHub.URL})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := handlers.New(handlers.Options{Secret: []byte(secret), Store: e.Store, GitHub: app, Provider: e.Provider, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	if err := srv.Start(sctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := e.GitHub.Comments(e.Repo, 7)[0]
		if strings.Contains(c.Body, "bestofn · interrupted") && strings.Contains(c.Body, "restarted during this run") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status comment not marked:\n%s", c.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	srv.Wait()
	if r, _ := e.Store.Run(ctx, run.ID); r.Status != store.RunFailed {
		t.Errorf("run status = %s, want failed", r.Status)
	}
}
