// Package handlerstest runs a whole bot on this machine: the real router and
// workers on a loopback listener, a real SQLite store and local sandboxes
// under a data folder, and the in-process GitHub double hosting the example
// repository. The demo command and the end-to-end tests drive it the same way.
package handlerstest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bestofn/bestofn/examples"
	"github.com/bestofn/bestofn/github"
	"github.com/bestofn/bestofn/github/githubtest"
	"github.com/bestofn/bestofn/handlers"
	"github.com/bestofn/bestofn/sandbox"
	"github.com/bestofn/bestofn/sandbox/local"
	"github.com/bestofn/bestofn/sandbox/runtime"
	"github.com/bestofn/bestofn/sandbox/runtime/runtimetest"
	"github.com/bestofn/bestofn/store"
)

// Defaults of a Bot.
const (
	Owner        = "octo-org"
	Installation = 4242
	Maintainer   = "octocat-user"
	Secret       = "bestofn-test-webhook-secret"
	// ScriptedAgent runs examples/agents/attempt-$BESTOFN_ATTEMPT.sh, which
	// the bot copies into each attempt at /bestofn/agent.
	ScriptedAgent = "bash /bestofn/agent/run.sh"
)

// Options configures a Bot. Every field is optional.
type Options struct {
	// DataDir is the bot's DATA_DIR; empty means a new temporary folder that
	// Close removes.
	DataDir string
	// Repo is the repository's name under Owner (default "stats").
	Repo string
	// Edit changes the example repository's files before it is committed.
	Edit func(dir string) error
	// Log receives the bot's log; nil discards it.
	Log *slog.Logger
	// Workers is the number of job workers (default 2).
	Workers int
	// ForceCopy and ForceUnisolated are passed to the local sandbox backend.
	ForceCopy, ForceUnisolated bool
	// MaxAttempts is the bot's MAX_ATTEMPTS (0: the default).
	MaxAttempts int
	// Sandbox is the backend: "local" (the default) or "runtime", Runtime's
	// API served in process by runtimetest on top of the local backend.
	Sandbox string
}

// Bot is a running bot with its GitHub double.
type Bot struct {
	GitHub  *githubtest.Server
	Store   *store.DB
	URL     string // the bot's base URL, e.g. http://127.0.0.1:port
	DataDir string
	Repo    string // owner/name
	Base    string // the default branch's head commit
	// Provider is the sandbox backend the bot runs on.
	Provider sandbox.Provider
	// Runtime is the in-process Runtime server when Options.Sandbox is
	// "runtime".
	Runtime *runtimetest.Server

	closers []func()
}

// Start builds and starts a Bot. Close stops it.
func Start(ctx context.Context, opts Options) (b *Bot, err error) {
	b = &Bot{}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	if opts.Repo == "" {
		opts.Repo = "stats"
	}
	if opts.Workers == 0 {
		opts.Workers = 2
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if b.DataDir = opts.DataDir; b.DataDir == "" {
		if b.DataDir, err = os.MkdirTemp("", "bestofn-"); err != nil {
			return nil, err
		}
		dir := b.DataDir
		b.closers = append(b.closers, func() { os.RemoveAll(dir) })
	}
	if b.GitHub, err = githubtest.New(); err != nil {
		return nil, err
	}
	b.closers = append(b.closers, b.GitHub.Close)

	src, err := os.MkdirTemp("", "bestofn-example-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(src)
	if err := WriteFS(examples.FS, "median", src); err != nil {
		return nil, err
	}
	if opts.Edit != nil {
		if err := opts.Edit(src); err != nil {
			return nil, fmt.Errorf("edit the example repository: %w", err)
		}
	}
	b.Repo = Owner + "/" + opts.Repo
	if b.Base, err = b.GitHub.AddRepo(Owner, opts.Repo, src, "main"); err != nil {
		return nil, err
	}
	b.GitHub.AddInstallation(Installation, b.Repo)
	b.GitHub.SetPermission(b.Repo, Maintainer, "admin")

	app, err := github.New(github.Config{AppID: b.GitHub.AppID, PrivateKey: b.GitHub.PrivateKeyPEM, BaseURL: b.GitHub.URL})
	if err != nil {
		return nil, err
	}
	if b.Store, err = store.Open(ctx, filepath.Join(b.DataDir, "bestofn.db")); err != nil {
		return nil, err
	}
	db := b.Store
	b.closers = append(b.closers, func() { db.Close() })
	lopts := local.Options{Dir: filepath.Join(b.DataDir, "sandboxes"), Hide: []string{b.DataDir},
		ForceCopy: opts.ForceCopy, ForceUnisolated: opts.ForceUnisolated}
	switch opts.Sandbox {
	case "", "local":
		if b.Provider, err = local.New(lopts); err != nil {
			return nil, err
		}
	case "runtime":
		const key = "rt_test_key"
		rt, err := runtimetest.New(runtimetest.Options{Dir: filepath.Join(b.DataDir, "runtime"), APIKey: key, Local: lopts})
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, rt.Close)
		b.Runtime = rt
		if b.Provider, err = runtime.New(runtime.Options{BaseURL: rt.URL(), APIKey: key, HTTPClient: rt.Client()}); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown sandbox backend %q (want local or runtime)", opts.Sandbox)
	}
	agents, err := fs.Sub(examples.FS, "agents")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b.URL = "http://" + ln.Addr().String()
	srv, err := handlers.New(handlers.Options{
		Secret: []byte(Secret), Store: b.Store, GitHub: app, Provider: b.Provider, DataDir: b.DataDir, Log: opts.Log,
		Workers: opts.Workers, MaxAttempts: opts.MaxAttempts, DefaultAgent: ScriptedAgent, AgentFiles: agents, PublicURL: b.URL,
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	workCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	if err := srv.Start(workCtx); err != nil {
		stop()
		ln.Close()
		return nil, err
	}
	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = httpSrv.Serve(ln) }()
	// Closers run last first: stop the listener, then the workers.
	b.closers = append(b.closers, func() { stop(); srv.Wait() }, func() { httpSrv.Close() })
	return b, nil
}

// Close stops the bot and the double and removes what Start created.
func (b *Bot) Close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
}

// Labeled returns GitHub's example issues.labeled payload (examples/webhooks,
// a copy of the shared fixture) pointed at the bot's repository, with the
// given issue, label and sender, and an installation added (a GitHub App
// delivery always has one; the example is a repository-hook payload).
func (b *Bot) Labeled(issue int, title, body, label, sender string) ([]byte, error) {
	p, err := b.pointAt("issues.labeled.json")
	if err != nil {
		return nil, err
	}
	iss, _ := p["issue"].(map[string]any)
	lbl, _ := p["label"].(map[string]any)
	snd, _ := p["sender"].(map[string]any)
	if iss == nil || lbl == nil || snd == nil {
		return nil, errors.New("example payload lacks issue, label or sender")
	}
	iss["number"], iss["title"], iss["body"] = issue, title, body
	lbl["name"] = label
	snd["login"] = sender
	return json.Marshal(p)
}

// pointAt points a fixture payload's repository at the bot's repository and
// adds the bot's installation.
func (b *Bot) pointAt(fixture string) (map[string]any, error) {
	raw, err := fs.ReadFile(examples.FS, "webhooks/"+fixture)
	if err != nil {
		return nil, err
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	repo, _ := p["repository"].(map[string]any)
	if repo == nil {
		return nil, errors.New(fixture + " has no repository")
	}
	owner, _ := repo["owner"].(map[string]any)
	if owner == nil {
		return nil, errors.New(fixture + " has no repository owner")
	}
	o, name, _ := strings.Cut(b.Repo, "/")
	repo["name"], repo["full_name"], repo["clone_url"], repo["default_branch"] = name, b.Repo, b.GitHub.CloneURL(b.Repo), "main"
	owner["login"] = o
	p["installation"] = map[string]any{"id": Installation, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI0Mg=="}
	return p, nil
}

// Comment returns a real issue_comment.created payload (examples/webhooks:
// the issue variant, or, with onPR, the captured delivery on a pull request)
// pointed at the bot's repository: number is the issue or pull request,
// commentID the new comment's id (it must exist on the double for reactions
// to land), body its text, sender its author with the given
// author_association.
func (b *Bot) Comment(number int, onPR bool, commentID int64, body, sender, association string) ([]byte, error) {
	fixture := "issue_comment.created.json"
	if onPR {
		fixture = "issue_comment.created.pr.json"
	}
	p, err := b.pointAt(fixture)
	if err != nil {
		return nil, err
	}
	iss, _ := p["issue"].(map[string]any)
	cm, _ := p["comment"].(map[string]any)
	snd, _ := p["sender"].(map[string]any)
	if iss == nil || cm == nil || snd == nil {
		return nil, errors.New(fixture + " lacks issue, comment or sender")
	}
	iss["number"] = number
	cm["id"], cm["body"], cm["author_association"] = commentID, body, association
	if u, ok := cm["user"].(map[string]any); ok {
		u["login"], u["type"] = sender, "User"
	}
	snd["login"], snd["type"] = sender, "User"
	return json.Marshal(p)
}

// PullRequestClosed returns the real pull_request.closed payload for pull
// request number with head branch head, merged or not.
func (b *Bot) PullRequestClosed(number int, head string, merged bool) ([]byte, error) {
	p, err := b.pointAt("pull_request.closed.json")
	if err != nil {
		return nil, err
	}
	pr, _ := p["pull_request"].(map[string]any)
	h, _ := pr["head"].(map[string]any)
	if pr == nil || h == nil {
		return nil, errors.New("pull_request.closed.json lacks pull_request.head")
	}
	p["number"], pr["number"], pr["merged"], h["ref"] = number, number, merged, head
	return json.Marshal(p)
}

// Sign returns the X-Hub-Signature-256 value GitHub sends for body.
func Sign(body []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Post sends a delivery to POST /webhook as GitHub does, with the given
// signature header value ("" sends none), and returns the status code.
func (b *Bot) Post(ctx context.Context, event, delivery string, body []byte, signature string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.URL+"/webhook", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/044aadd")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", delivery)
	if signature != "" {
		req.Header.Set("X-Hub-Signature-256", signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// WaitJobs waits until every job has reached a final status and returns the
// jobs, newest first; it fails after limit.
func (b *Bot) WaitJobs(ctx context.Context, limit time.Duration) ([]*store.Job, error) {
	deadline := time.Now().Add(limit)
	for {
		jobs, err := b.Store.Jobs(ctx, store.JobFilter{})
		if err != nil {
			return nil, err
		}
		done := true
		for _, j := range jobs {
			if j.Status == store.JobQueued || j.Status == store.JobRunning {
				done = false
			}
		}
		if done {
			return jobs, nil
		}
		if time.Now().After(deadline) {
			return jobs, fmt.Errorf("jobs did not finish within %s", limit)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WriteFS copies the folder dir of fsys to dst on disk; files whose name
// ends in ".sh" are made executable.
func WriteFS(fsys fs.FS, dir, dst string) error {
	return fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")))
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
