package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/bestofn/bestofn/examples"
	"github.com/bestofn/bestofn/explore"
	"github.com/bestofn/bestofn/handlers/handlerstest"
	"github.com/bestofn/bestofn/store"
)

// Demo settings: the issue the demo labels.
const (
	demoIssue = 7
	demoLabel = "bestofn"
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
	backend := fl.String("sandbox", "local", "sandbox backend: local, or runtime (Runtime's API, served in process on top of the local backend)")
	wait := fl.Bool("wait", false, "keep the bot and the GitHub double running after the demo (so the run page can be opened) until interrupted")
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
	bot, err := handlerstest.Start(ctx, handlerstest.Options{DataDir: dataDir, Log: log, Workers: 1, Sandbox: *backend})
	if err != nil {
		return err
	}
	defer bot.Close()
	gh, db, repo := bot.GitHub, bot.Store, bot.Repo

	issueText, err := fs.ReadFile(examples.FS, "median-issue.md")
	if err != nil {
		return err
	}
	title, body, _ := strings.Cut(string(issueText), "\n")
	body = strings.TrimSpace(body)
	if err := gh.AddIssue(repo, demoIssue, title, body); err != nil {
		return err
	}
	iso := bot.Provider.Isolation()
	fmt.Fprintf(stdout, "bestofn demo: GitHub double at %s, bot at %s\n", gh.URL, bot.URL)
	fmt.Fprintf(stdout, "sandbox: %s (isolated: %v, copy-on-write forks: %v)\n", bot.Provider.Name(), iso.Namespaces, iso.CopyOnWrite)
	if bot.Runtime != nil {
		fmt.Fprintf(stdout, "Runtime API served in process at %s\n", bot.Runtime.URL())
	}
	for _, n := range iso.Notes {
		fmt.Fprintf(stdout, "  warning: %s\n", n)
	}
	fmt.Fprintf(stdout, "repository %s at %s; labelling issue #%d %q as @%s\n\n", repo, short(bot.Base), demoIssue, demoLabel, handlerstest.Maintainer)

	payload, err := bot.Labeled(demoIssue, title, body, demoLabel, handlerstest.Maintainer)
	if err != nil {
		return err
	}
	const delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	sig := handlerstest.Sign(payload, handlerstest.Secret)
	status, err := bot.Post(ctx, "issues", delivery, payload, sig)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "POST /webhook (issues.labeled) → %d\n", status)
	if status != http.StatusAccepted {
		return fmt.Errorf("the webhook answered %d, want 202", status)
	}

	jobs, err := bot.WaitJobs(ctx, 15*time.Minute)
	if err != nil {
		return err
	}
	again, err := bot.Post(ctx, "issues", delivery, payload, sig)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "POST /webhook (same delivery again) → %d, no second run\n", again)

	runs, err := db.Runs(ctx, store.RunFilter{Repo: repo, Issue: demoIssue})
	if err != nil {
		return err
	}
	if len(jobs) != 1 || jobs[0].Status != store.JobDone || len(runs) != 1 {
		return fmt.Errorf("want one job done and one run, got %d jobs (first: %s %s) and %d runs", len(jobs), jobs[0].Status, jobs[0].Error, len(runs))
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
	if *wait {
		fmt.Fprintf(stdout, "the bot is still serving at %s (run page linked in the status comment); Ctrl-C ends it\n", bot.URL)
		<-ctx.Done()
	} else {
		fmt.Fprintf(stdout, "(run pages are served only while the demo runs; use -wait to keep them up)\n")
	}
	return nil
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
