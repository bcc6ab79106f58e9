// Package handlers is the bot's HTTP side and its job runner: the chi router
// (POST /webhook, GET /healthz, GET /metrics, run pages), the decision of
// what a webhook delivery means, the durable job queue's worker pool, and the
// run itself (config, status comment, engine, publishing).
package handlers

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bestofn/bestofn/explore"
	"github.com/bestofn/bestofn/github"
	"github.com/bestofn/bestofn/sandbox"
	"github.com/bestofn/bestofn/store"
)

// Version is reported by /healthz; cmd/bot sets it at build time.
var Version = "dev"

// Options wires a Server. Secret, Store, GitHub, Provider and DataDir are required.
type Options struct {
	// Secret is the webhook secret (WEBHOOK_SECRET); deliveries are verified
	// against it with HMAC-SHA256.
	Secret []byte
	Store  *store.DB
	GitHub *github.App
	// Provider is the sandbox backend the engine runs on.
	Provider sandbox.Provider
	// DataDir holds the database, run folders (clones, base repositories)
	// and local sandboxes.
	DataDir string
	Log     *slog.Logger
	// Workers is how many jobs run at once (default 2).
	Workers int
	// MaxAttempts caps the attempts of one run (MAX_ATTEMPTS; default
	// explore.DefaultMaxAttempts, at most explore.MaxAttempts).
	MaxAttempts int
	// DefaultAgent is the agent command used when a repository's
	// configuration names none; AgentFiles go with it into each attempt copy
	// (at /bestofn/agent) and AgentEnv into its environment (model keys).
	DefaultAgent string
	AgentFiles   fs.FS
	AgentEnv     map[string]string
	// PublicURL is where this server is reachable from a browser
	// ("https://bestofn.fly.dev"); run pages are linked from comments when set.
	PublicURL string
	// Registry receives the bot's metrics; nil means a new registry.
	Registry *prometheus.Registry
}

// Server handles webhooks and runs the jobs they create.
type Server struct {
	opts    Options
	log     *slog.Logger
	engine  *explore.Engine
	metrics *metrics
	wake    chan struct{}
	wg      sync.WaitGroup

	mu      sync.Mutex
	cancels map[int64]context.CancelFunc // running run jobs of this process, by job id
}

// New checks the options and returns a Server. It starts nothing: call Start
// to run the workers and Handler for the HTTP side.
func New(opts Options) (*Server, error) {
	switch {
	case len(opts.Secret) == 0:
		return nil, errors.New("handlers: the webhook secret is empty (WEBHOOK_SECRET)")
	case opts.Store == nil:
		return nil, errors.New("handlers: no store")
	case opts.GitHub == nil:
		return nil, errors.New("handlers: no GitHub app")
	case opts.Provider == nil:
		return nil, errors.New("handlers: no sandbox provider")
	case opts.DataDir == "":
		return nil, errors.New("handlers: no data directory (DATA_DIR)")
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.MaxAttempts <= 0 || opts.MaxAttempts > explore.MaxAttempts {
		opts.MaxAttempts = explore.DefaultMaxAttempts
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	s := &Server{
		opts:    opts,
		log:     opts.Log,
		metrics: newMetrics(opts.Registry),
		wake:    make(chan struct{}, opts.Workers+1),
		cancels: map[int64]context.CancelFunc{},
	}
	s.engine = &explore.Engine{Provider: opts.Provider, WorkDir: filepath.Join(opts.DataDir, "work"), Log: opts.Log}
	return s, nil
}

// Handler returns the router: POST /webhook, GET /healthz, GET /metrics and
// GET /runs/{id}.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Post("/webhook", s.webhook)
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok","version":"` + Version + `"}`))
	})
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.opts.Registry, promhttp.HandlerOpts{}))
	r.Get("/runs/{id}", s.runPage)
	return r
}

// Start requeues jobs a previous process left running (their runs are marked
// failed, then run again from the start) and starts the worker pool. Workers
// stop when ctx is done; Wait waits for them.
func (s *Server) Start(ctx context.Context) error {
	stale, err := s.opts.Store.UnfinishedRuns(ctx)
	if err != nil {
		return err
	}
	n, err := s.opts.Store.RequeueRunning(ctx)
	if err != nil {
		return err
	}
	if _, err := s.opts.Store.FailUnfinishedRuns(ctx, "the bot restarted during this run; it runs again"); err != nil {
		return err
	}
	if n > 0 {
		s.log.Info("requeued jobs left running by a previous process", "jobs", n)
	}
	// Their status comments still say "attempting": say what happened, in
	// the background (GitHub may be slow; starting must not wait for it).
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.markInterrupted(ctx, stale)
	}()
	for i := 0; i < s.opts.Workers; i++ {
		s.wg.Add(1)
		go s.worker(ctx, s.opts.Store.ClaimJob)
	}
	// One more worker takes only replies and commands, so /bestofn cancel
	// or status never waits behind runs that hold every other worker.
	s.wg.Add(1)
	go s.worker(ctx, s.opts.Store.ClaimControlJob)
	return nil
}

// markInterrupted edits the status comments of runs a previous process left
// unfinished, so none keeps saying it is in progress.
func (s *Server) markInterrupted(ctx context.Context, runs []*store.Run) {
	for _, r := range runs {
		if r.StatusCommentID == 0 || r.JobID == 0 {
			continue
		}
		job, err := s.opts.Store.Job(ctx, r.JobID)
		if err != nil {
			continue
		}
		gh, err := s.opts.GitHub.Installation(job.InstallationID)
		if err != nil {
			continue
		}
		owner, name, _ := strings.Cut(r.Repo, "/")
		body := renderStatus(r.ID, "", statusView{Phase: "interrupted",
			Note: "The bot restarted during this run. The job runs again from the start and posts a new status comment."})
		if err := gh.EditIssueComment(ctx, owner, name, r.StatusCommentID, body); err != nil {
			s.log.Warn("mark interrupted run", "run", r.ID, "err", err)
		}
	}
}

// Wait blocks until every worker has stopped.
func (s *Server) Wait() { s.wg.Wait() }

// signal wakes the workers waiting for a job (each takes one wake-up).
func (s *Server) signal() {
	for i := 0; i <= s.opts.Workers; i++ {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// worker claims queued jobs one at a time until ctx is done. It polls every
// few seconds as well as waking on new deliveries, so jobs recorded by
// another process are picked up too.
func (s *Server) worker(ctx context.Context, claim func(context.Context) (*store.Job, error)) {
	defer s.wg.Done()
	for {
		job, err := claim(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Error("claim job", "err", err)
		}
		if job != nil {
			s.runJob(ctx, job)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-time.After(3 * time.Second):
		}
	}
}

// cancelLocal cancels job's context at once when this process runs it; the
// store's cancel flag reaches a job run by another process.
func (s *Server) cancelLocal(jobID int64) {
	s.mu.Lock()
	cancel := s.cancels[jobID]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// watchCancel cancels a run job's context when its cancel flag is set in the
// store (by `/bestofn cancel`, in this process or another), polling every
// interval until ctx ends.
func (s *Server) watchCancel(ctx context.Context, jobID int64, cancel context.CancelFunc, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if req, err := s.opts.Store.CancelRequested(ctx, jobID); err == nil && req {
				cancel()
				return
			}
		}
	}
}

type metrics struct {
	deliveries *prometheus.CounterVec
	runs       *prometheus.CounterVec
	attempts   *prometheus.CounterVec
	runSeconds prometheus.Histogram
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bestofn_webhook_deliveries_total", Help: "Webhook deliveries by event and what the bot did with them.",
		}, []string{"event", "result"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bestofn_runs_total", Help: "Finished runs by result (pr, no_pass, failed, config_error, refused).",
		}, []string{"result"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bestofn_attempts_total", Help: "Graded attempts by outcome.",
		}, []string{"outcome"}),
		runSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bestofn_run_duration_seconds", Help: "Wall time of runs that reached the engine, in seconds.",
			Buckets: prometheus.ExponentialBuckets(5, 2, 12),
		}),
	}
	reg.MustRegister(m.deliveries, m.runs, m.attempts, m.runSeconds)
	return m
}
