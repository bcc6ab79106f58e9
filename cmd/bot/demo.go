package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/bestofn/bestofn/examples"
	"github.com/bestofn/bestofn/explore"
	"github.com/bestofn/bestofn/github"
	"github.com/bestofn/bestofn/github/githubtest"
	"github.com/bestofn/bestofn/handlers"
	"github.com/bestofn/bestofn/sandbox/local"
	"github.com/bestofn/bestofn/store"
)

// Demo settings: the example repository as the GitHub double hosts it.
const (
	demoOwner        = "octo-org"
	demoRepo         = "stats"
	demoInstallation = 4242
	demoSender       = "octocat-user"
	demoIssue        = 7
	demoSecret       = "demo-webhook-secret"
	demoAgent        = "bash /bestofn/agent/run.sh"
)

// demoExpected is the outcome the design names for each scripted attempt.
var demoExpected = map[int]explore.OutcomeKind{
	1: explore.OutcomePass,
	2: explore.OutcomeEditedTests,
	3: explore.OutcomeChangedTestConfig,
	4: explore.OutcomeTestsFailed,
	5: explore.OutcomeNoChange,
}

// demo runs the main job end to end on this machine: an in-process GitHub
// double hosts examples/median, a signed issues.labeled delivery goes to the
// real router, five scripted attempts run in local sandboxes, and the status
// comment, the pull request and the scorecard are printed as GitHub holds
// them. It fails unless attempt 1 won and attempts 2 to 5 got the outcomes
// the design names for them.
func demo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("demo", flag.ContinueOnError)
	fl.SetOutput(stderr)
	keep := fl.Bool("keep", false, "keep the data directory (database, logs) after the demo")
	verbose := fl.Bool("v", false, "print the bot's log lines")
	if err := fl.Parse(args); err != nil {
		return err
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	dataDir, err := os.MkdirTemp("", "bestofn-demo-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Fprintf(stdout, "data directory: %s\n", dataDir)
	} else {
		defer os.RemoveAll(dataDir)
	}

	gh, err := githubtest.New()
	if err != nil {
		return err
	}
	defer gh.Close()
	src := filepath.Join(dataDir, "example-src")
	if err := writeFS(examples.FS, "median", src); err != nil {
		return err
	}
	repo := demoOwner + "/" + demoRepo
	baseSHA, err := gh.AddRepo(demoOwner, demoRepo, src, "main")
	if err != nil {
		return err
	}
	gh.AddInstallation(demoInstallation, repo)
	gh.SetPermission(repo, demoSender, "admin")

	app, err := github.New(github.Config{AppID: gh.AppID, PrivateKey: gh.PrivateKeyPEM, BaseURL: gh.URL})
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, filepath.Join(dataDir, "bestofn.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	provider, err := local.New(local.Options{Dir: filepath.Join(dataDir, "sandboxes"), Hide: []string{dataDir}})
	if err != nil {
		return err
	}
	agents, err := fs.Sub(examples.FS, "agents")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	botURL := "http://" + ln.Addr().String()
	srv, err := handlers.New(handlers.Options{
		Secret: []byte(demoSecret), Store: db, GitHub: app, Provider: provider, DataDir: dataDir, Log: log,
		Workers: 1, DefaultAgent: demoAgent, AgentFiles: agents, PublicURL: botURL,
	})
	if err != nil {
		ln.Close()
		return err
	}
	workCtx, stopWork := context.WithCancel(ctx)
	defer func() { stopWork(); srv.Wait() }()
	if err := srv.Start(workCtx); err != nil {
		return err
	}
	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = httpSrv.Serve(ln) }()
	defer httpSrv.Close()

	iso := provider.Isolation()
	fmt.Fprintf(stdout, "bestofn demo: GitHub double at %s, bot at %s\n", gh.URL, botURL)
	fmt.Fprintf(stdout, "sandbox: local (bubblewrap: %v, overlayfs forks: %v)\n", iso.Namespaces, iso.CopyOnWrite)
	for _, n := range iso.Notes {
		fmt.Fprintf(stdout, "  warning: %s\n", n)
	}
	fmt.Fprintf(stdout, "repository %s at %s; labelling issue #%d `bestofn` as @%s\n\n", repo, baseSHA[:12], demoIssue, demoSender)

	issueText, err := fs.ReadFile(examples.FS, "median-issue.md")
	if err != nil {
		return err
	}
	title, body, _ := strings.Cut(string(issueText), "\n")
	payload, err := demoPayload(gh, title, strings.TrimSpace(body))
	if err != nil {
		return err
	}
	const delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	status, err := postDelivery(ctx, botURL, delivery, payload)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "POST /webhook (issues.labeled) → %d\n", status)
	if status != http.StatusAccepted {
		return fmt.Errorf("the webhook answered %d, want 202", status)
	}

	job, err := waitForJob(ctx, db, 15*time.Minute)
	if err != nil {
		return err
	}
	again, err := postDelivery(ctx, botURL, delivery, payload)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "POST /webhook (same delivery again) → %d, no second run\n", again)

	runs, err := db.Runs(ctx, store.RunFilter{Repo: repo, Issue: demoIssue})
	if err != nil {
		return err
	}
	if job.Status != store.JobDone || len(runs) != 1 {
		return fmt.Errorf("job ended %s (%s) with %d runs", job.Status, job.Error, len(runs))
	}
	run := runs[0]
	attempts, err := db.Attempts(ctx, run.ID)
	if err != nil {
		return err
	}

	section := func(title string) { fmt.Fprintf(stdout, "\n%s\n%s\n", title, strings.Repeat("=", len(title))) }
	for _, c := range gh.Comments(repo, demoIssue) {
		section(fmt.Sprintf("Comment on issue #%d by @%s (edited %d times)", demoIssue, c.User, c.Edits))
		fmt.Fprintln(stdout, c.Body)
	}
	for _, pr := range gh.Pulls(repo) {
		section(fmt.Sprintf("Pull request #%d: %s", pr.Number, pr.Title))
		fmt.Fprintf(stdout, "%s ← %s (draft: %v, head %s)\n\n%s\n", pr.Base, pr.Head, pr.Draft, short(pr.HeadSHA), pr.Body)
		section(fmt.Sprintf("Commit on %s", pr.Head))
		show, err := exec.CommandContext(ctx, "git", "--git-dir", gh.GitDir(repo), "show", "--format=%H%nparent %P%n%n%B", pr.HeadSHA).CombinedOutput()
		if err != nil {
			return fmt.Errorf("git show: %v: %s", err, show)
		}
		fmt.Fprint(stdout, string(show))
		for _, c := range gh.Comments(repo, pr.Number) {
			section(fmt.Sprintf("Comment on pull request #%d by @%s", pr.Number, c.User))
			fmt.Fprintln(stdout, c.Body)
		}
	}
	section("Result")
	fmt.Fprintf(stdout, "GitHub API requests made by the bot: %d\n", len(gh.Requests()))
	var problems []string
	if run.Winner != 1 {
		problems = append(problems, fmt.Sprintf("attempt %d won, want attempt 1", run.Winner))
	}
	if len(gh.Pulls(repo)) != 1 {
		problems = append(problems, fmt.Sprintf("%d pull requests, want 1", len(gh.Pulls(repo))))
	}
	got := map[int]string{}
	for _, a := range attempts {
		got[a.Number] = a.OutcomeKind
		mark := "ok"
		if want := demoExpected[a.Number]; a.OutcomeKind != string(want) {
			mark = "WRONG, want " + string(want)
			problems = append(problems, fmt.Sprintf("attempt %d: %s, want %s", a.Number, a.OutcomeKind, want))
		}
		fmt.Fprintf(stdout, "attempt %d: %-45s %s\n", a.Number, a.Outcome, mark)
	}
	for k := range demoExpected {
		if _, ok := got[k]; !ok {
			problems = append(problems, fmt.Sprintf("attempt %d has no result", k))
		}
	}
	if len(problems) > 0 {
		return errors.New("demo failed: " + strings.Join(problems, "; "))
	}
	fmt.Fprintf(stdout, "\ndemo passed: attempt 1 won, pull request #%d opened, every other attempt got the outcome the design names.\n", run.PRNumber)
	return nil
}

// demoPayload returns GitHub's example issues.labeled payload with its
// repository pointed at the double, an installation added (a GitHub App
// delivery always has one) and the demo's issue, label and sender.
func demoPayload(gh *githubtest.Server, title, body string) ([]byte, error) {
	raw, err := fs.ReadFile(examples.FS, "webhooks/issues.labeled.json")
	if err != nil {
		return nil, err
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	repo, _ := p["repository"].(map[string]any)
	issue, _ := p["issue"].(map[string]any)
	label, _ := p["label"].(map[string]any)
	sender, _ := p["sender"].(map[string]any)
	if repo == nil || issue == nil || label == nil || sender == nil {
		return nil, errors.New("example payload lacks repository, issue, label or sender")
	}
	repo["name"] = demoRepo
	repo["full_name"] = demoOwner + "/" + demoRepo
	repo["clone_url"] = gh.CloneURL(demoOwner + "/" + demoRepo)
	repo["default_branch"] = "main"
	if owner, ok := repo["owner"].(map[string]any); ok {
		owner["login"] = demoOwner
	}
	issue["number"] = demoIssue
	issue["title"] = title
	issue["body"] = body
	label["name"] = "bestofn"
	sender["login"] = demoSender
	p["installation"] = map[string]any{"id": demoInstallation, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI0Mg=="}
	return json.Marshal(p)
}

// postDelivery sends payload to the bot's webhook as GitHub does: signed
// with HMAC-SHA256 in X-Hub-Signature-256, with event and delivery headers.
func postDelivery(ctx context.Context, botURL, delivery string, payload []byte) (int, error) {
	mac := hmac.New(sha256.New, []byte(demoSecret))
	mac.Write(payload)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, botURL+"/webhook", bytes.NewReader(payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/044aadd")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// waitForJob waits until the only job reaches a final status.
func waitForJob(ctx context.Context, db *store.DB, limit time.Duration) (*store.Job, error) {
	deadline := time.Now().Add(limit)
	for {
		jobs, err := db.Jobs(ctx, store.JobFilter{})
		if err != nil {
			return nil, err
		}
		if len(jobs) == 1 && jobs[0].Status != store.JobQueued && jobs[0].Status != store.JobRunning {
			return jobs[0], nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the run did not finish within %s", limit)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writeFS copies the folder dir of fsys to dst on disk; files whose name
// ends in ".sh" are made executable.
func writeFS(fsys fs.FS, dir, dst string) error {
	return fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		target := filepath.Join(dst, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		return os.WriteFile(target, data, mode)
	})
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
