package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bestofn/bestofn/explore"
	"github.com/bestofn/bestofn/github"
	"github.com/bestofn/bestofn/handlers"
	"github.com/bestofn/bestofn/sandbox"
	"github.com/bestofn/bestofn/sandbox/local"
	"github.com/bestofn/bestofn/sandbox/runtime"
	"github.com/bestofn/bestofn/store"
)

// modelKeys are the environment variables passed to the agent step (and to
// no other step) when they are set on the server.
var modelKeys = []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY"}

const serveUsage = `Usage: bot serve

Runs the GitHub App: POST /webhook, GET /healthz, GET /metrics, GET /runs/{id}.
Configured by environment variables:

  APP_ID                the App's numeric id (required)
  PRIVATE_KEY           the App's private key, PEM (or PRIVATE_KEY_PATH, its file; one is required)
  WEBHOOK_SECRET        the webhook secret (required)
  DATA_DIR              database, run folders and sandboxes (required)
  GITHUB_API_URL        REST API base (default https://api.github.com/)
  PORT                  listen port (default 8080)
  SANDBOX               sandbox backend: local (default) or runtime
  RUNTIME_API_KEY       Runtime's API key (SANDBOX=runtime); RUNTIME_API_URL overrides its address
  RUNTIME_ALLOW_HOSTS   comma-separated hosts the agent step may reach on Runtime (the model's API)
  RUNTIME_EGRESS_SECRET name of a Runtime egress secret holding the model key: the agent sees only its placeholder
  RUNTIME_VCPU, RUNTIME_MEMORY_MIB  size of each Runtime sandbox (Runtime's defaults: 2, 4096)
  RUNTIME_TIME_LIMIT    each Runtime sandbox is deleted by Runtime after this long, whatever happens to the bot (default 2h)
  BESTOFN_AGENT         agent command for repositories whose config names none
  PUBLIC_URL            where the bot is reachable; comments then link run pages
  WORKERS               runs at once (default 2)
  MAX_ATTEMPTS          most attempts one run may ask for (default 10, up to 50)
  ALLOW_UNISOLATED      1 lets attempts run without bubblewrap
  ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, GOOGLE_API_KEY, OPENROUTER_API_KEY
                        passed to the agent step only
`

// serveConfig is the server's configuration, read from the environment
// (Probot-compatible names).
type serveConfig struct {
	AppID           int64
	PrivateKey      []byte
	PrivateKeyPath  string
	WebhookSecret   []byte
	APIURL          string
	Port            int
	DataDir         string
	Sandbox         string
	RuntimeKey      string
	RuntimeURL      string
	RuntimeAllow    []string
	RuntimeEgress   string
	RuntimeVCPU     int
	RuntimeMemory   int
	RuntimeLimit    time.Duration
	AllowUnisolated bool
	Agent           string
	AgentEnv        map[string]string
	PublicURL       string
	Workers         int
	MaxAttempts     int
}

// loadServeConfig reads and checks the environment. Its error names every
// variable that is missing or wrong.
func loadServeConfig(getenv func(string) string) (serveConfig, error) {
	var problems []string
	c := serveConfig{APIURL: github.DefaultBaseURL, Port: 8080, Sandbox: "local", Workers: 2, AgentEnv: map[string]string{}}
	if v := getenv("APP_ID"); v == "" {
		problems = append(problems, "APP_ID is not set")
	} else if id, err := strconv.ParseInt(v, 10, 64); err != nil || id <= 0 {
		problems = append(problems, "APP_ID must be the App's numeric id")
	} else {
		c.AppID = id
	}
	switch key, path := getenv("PRIVATE_KEY"), getenv("PRIVATE_KEY_PATH"); {
	case key != "":
		// Fly secrets and .env files often carry the PEM with literal \n.
		c.PrivateKey = []byte(strings.ReplaceAll(key, `\n`, "\n"))
	case path != "":
		data, err := os.ReadFile(path)
		if err != nil {
			problems = append(problems, "PRIVATE_KEY_PATH cannot be read: "+err.Error())
		}
		c.PrivateKey, c.PrivateKeyPath = data, path
	default:
		problems = append(problems, "PRIVATE_KEY or PRIVATE_KEY_PATH is not set")
	}
	if v := getenv("WEBHOOK_SECRET"); v == "" {
		problems = append(problems, "WEBHOOK_SECRET is not set (deliveries cannot be verified without it)")
	} else {
		c.WebhookSecret = []byte(v)
	}
	if v := getenv("GITHUB_API_URL"); v != "" {
		c.APIURL = v
	}
	if v := getenv("PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p <= 0 || p > 65535 {
			problems = append(problems, "PORT must be a port number")
		}
		c.Port = p
	}
	if c.DataDir = getenv("DATA_DIR"); c.DataDir == "" {
		problems = append(problems, "DATA_DIR is not set (the database and sandboxes live there)")
	}
	if v := getenv("SANDBOX"); v != "" {
		c.Sandbox = v
	}
	switch c.Sandbox {
	case "local":
	case "runtime":
		if c.RuntimeKey = getenv("RUNTIME_API_KEY"); c.RuntimeKey == "" {
			problems = append(problems, "RUNTIME_API_KEY is not set (SANDBOX=runtime needs it)")
		}
		c.RuntimeURL = getenv("RUNTIME_API_URL")
		for _, h := range strings.Split(getenv("RUNTIME_ALLOW_HOSTS"), ",") {
			if h = strings.TrimSpace(h); h != "" {
				c.RuntimeAllow = append(c.RuntimeAllow, h)
			}
		}
		c.RuntimeEgress = getenv("RUNTIME_EGRESS_SECRET")
		c.RuntimeLimit = 2 * time.Hour
		for name, dst := range map[string]*int{"RUNTIME_VCPU": &c.RuntimeVCPU, "RUNTIME_MEMORY_MIB": &c.RuntimeMemory} {
			if v := getenv(name); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n <= 0 {
					problems = append(problems, name+" must be a positive number")
				}
				*dst = n
			}
		}
		if v := getenv("RUNTIME_TIME_LIMIT"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Minute {
				problems = append(problems, "RUNTIME_TIME_LIMIT must be a duration of at least 1m, such as 2h")
			}
			c.RuntimeLimit = d
		}
	default:
		problems = append(problems, fmt.Sprintf("SANDBOX must be local or runtime, not %q", c.Sandbox))
	}
	c.AllowUnisolated = getenv("ALLOW_UNISOLATED") == "1"
	c.Agent = getenv("BESTOFN_AGENT")
	for _, k := range modelKeys {
		if v := getenv(k); v != "" {
			c.AgentEnv[k] = v
		}
	}
	if c.RuntimeEgress != "" {
		// Runtime gives every sandbox NAME=<placeholder> and swaps the real
		// key in on HTTPS requests to the model's host: the real key must
		// not travel in the agent's environment as well.
		delete(c.AgentEnv, c.RuntimeEgress)
	}
	c.PublicURL = getenv("PUBLIC_URL")
	if v := getenv("WORKERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64 {
			problems = append(problems, "WORKERS must be 1 to 64")
		}
		c.Workers = n
	}
	if v := getenv("MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > explore.MaxAttempts {
			problems = append(problems, fmt.Sprintf("MAX_ATTEMPTS must be 1 to %d", explore.MaxAttempts))
		}
		c.MaxAttempts = n
	}
	if len(problems) == 0 {
		if _, err := github.New(github.Config{AppID: c.AppID, PrivateKey: c.PrivateKey, BaseURL: c.APIURL}); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return c, errors.New("cannot start:\n  - " + strings.Join(problems, "\n  - "))
	}
	return c, nil
}

// serve runs the GitHub App until ctx is done, then shuts down gracefully:
// the listener stops, running jobs are interrupted and requeued at the next
// start.
func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, serveUsage) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := loadServeConfig(getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	// One bot per DATA_DIR: a second process would requeue the jobs this one
	// is running and run them twice.
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	app, err := github.New(github.Config{AppID: cfg.AppID, PrivateKey: cfg.PrivateKey, BaseURL: cfg.APIURL, UserAgent: "bestofn/" + handlers.Version})
	if err != nil {
		return err
	}
	provider, err := newProvider(ctx, cfg)
	if err != nil {
		return err
	}
	if iso := provider.Isolation(); !iso.Namespaces && !cfg.AllowUnisolated {
		return fmt.Errorf("refusing to run attempts unisolated (%s); install bubblewrap or set ALLOW_UNISOLATED=1", strings.Join(iso.Notes, "; "))
	}
	logIsolation(log, provider.Isolation())
	db, err := store.Open(ctx, filepath.Join(cfg.DataDir, "bestofn.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	srv, err := handlers.New(handlers.Options{
		Secret: cfg.WebhookSecret, Store: db, GitHub: app, Provider: provider, DataDir: cfg.DataDir, Log: log,
		Workers: cfg.Workers, MaxAttempts: cfg.MaxAttempts, DefaultAgent: cfg.Agent, AgentEnv: cfg.AgentEnv, PublicURL: cfg.PublicURL,
	})
	if err != nil {
		return err
	}
	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	if err := srv.Start(workCtx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
	if err != nil {
		return err
	}
	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	log.Info("listening", "addr", ln.Addr().String(), "app_id", cfg.AppID, "api", cfg.APIURL, "data_dir", cfg.DataDir)
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = httpSrv.Shutdown(shutdownCtx)
	stopWork()
	srv.Wait()
	return err
}

// newProvider builds the sandbox backend SANDBOX names: local (sandboxes
// under DATA_DIR, the data folder and the key file hidden from them, leftovers
// of a crashed process pruned) or runtime (Runtime's API, the key checked).
func newProvider(ctx context.Context, cfg serveConfig) (sandbox.Provider, error) {
	if cfg.Sandbox == "runtime" {
		p, err := runtime.New(runtime.Options{BaseURL: cfg.RuntimeURL, APIKey: cfg.RuntimeKey, AllowHosts: cfg.RuntimeAllow,
			VCPU: cfg.RuntimeVCPU, MemoryMiB: cfg.RuntimeMemory, TimeLimit: cfg.RuntimeLimit})
		if err != nil {
			return nil, err
		}
		if _, err := p.Account(ctx); err != nil {
			return nil, fmt.Errorf("RUNTIME_API_KEY: %w", err)
		}
		return p, nil
	}
	hide := []string{cfg.DataDir}
	if cfg.PrivateKeyPath != "" {
		hide = append(hide, cfg.PrivateKeyPath)
	}
	p, err := local.New(local.Options{Dir: filepath.Join(cfg.DataDir, "sandboxes"), Hide: hide})
	if err != nil {
		return nil, err
	}
	if err := p.Prune(ctx); err != nil {
		return nil, fmt.Errorf("clean up sandboxes left by an earlier process: %w", err)
	}
	return p, nil
}

// lockDataDir takes an exclusive lock on DATA_DIR/bestofn.lock, or says which
// process holds it.
func lockDataDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "bestofn.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("DATA_DIR %s is in use by another bestofn process (%v); one bot per DATA_DIR", dir, err)
	}
	return func() { f.Close() }, nil
}

func logIsolation(log *slog.Logger, iso sandbox.Isolation) {
	log.Info("sandbox isolation", "namespaces", iso.Namespaces, "copy_on_write", iso.CopyOnWrite)
	for _, n := range iso.Notes {
		log.Warn("sandbox", "note", n)
	}
}
