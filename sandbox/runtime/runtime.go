// Package runtime is the sandbox backend on Runtime (withruntime.com): each
// sandbox is a Runtime microVM reached over its HTTPS API, as written down in
// ../shared/design/runtime-api.md (the wire format this client follows).
//
// Every POST, PUT and DELETE carries a fresh Idempotency-Key that is reused
// across the retries of that call. Transport errors, 429 and the retryable
// 409/503/5xx codes are retried with a growing delay (or the wait asked by
// Retry-After / retryAfterMs) until Options.RetryDeadline; final errors are
// returned at once as *Error. The API key is never logged nor put in errors.
//
// Differences from the local backend: a forked parent is not frozen
// (Runtime pauses it for the capture and wakes it); Usage reports only Wall
// (Runtime reports money, see (*Sandbox).CostMicros, not CPU seconds);
// ExecRequest.Network is applied with PUT .../network before the command and
// is the sandbox's setting while it runs (not per command).
package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/bestofn/bestofn/sandbox"
)

// DefaultBaseURL is Runtime's API address.
const DefaultBaseURL = "https://api.withruntime.com"

// Options configures New.
type Options struct {
	// BaseURL is the API address; empty means DefaultBaseURL.
	BaseURL string
	// APIKey is the bearer token (RUNTIME_API_KEY). Required.
	APIKey string
	// HTTPClient sends the requests; nil means a client without overall
	// timeout (exec streams can last hours; ctx bounds each call).
	HTTPClient *http.Client
	// Labels are added to every sandbox's labels, after app=bestofn.
	Labels map[string]string
	// VCPU and MemoryMiB size each sandbox; zero leaves Runtime's default
	// (2 vCPU, 4096 MiB).
	VCPU      int
	MemoryMiB int
	// TimeLimit is each sandbox's time limit (timeoutSeconds, rounded up to
	// whole seconds, at least 60); at the end Runtime deletes it. Zero means none.
	TimeLimit time.Duration
	// Sleep replaces the wait between retries (for tests); nil sleeps for real.
	Sleep func(time.Duration)
	// RetryDeadline bounds the retries of one call, waits included; zero
	// means 2 minutes.
	RetryDeadline time.Duration
	// AllowHosts, when set, limits a command that may use the network to
	// these hosts (network.allow: the model's API host); commands without
	// network get none.
	AllowHosts []string
}

// Provider creates Runtime sandboxes. It implements sandbox.Provider and is
// safe for concurrent use.
type Provider struct {
	opts Options
	base string
	hc   *http.Client
}

var _ sandbox.Provider = (*Provider)(nil)

// New returns a Provider for opts. The error is non-nil when APIKey is
// empty or BaseURL is not an http(s) URL.
func New(opts Options) (*Provider, error) {
	if opts.APIKey == "" {
		return nil, errors.New("runtime: Options.APIKey is empty (set RUNTIME_API_KEY)")
	}
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("runtime: BaseURL %q is not an http(s) URL", opts.BaseURL)
	}
	if opts.RetryDeadline <= 0 {
		opts.RetryDeadline = 2 * time.Minute
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Provider{opts: opts, base: strings.TrimRight(opts.BaseURL, "/"), hc: hc}, nil
}

// Name returns "runtime".
func (p *Provider) Name() string { return "runtime" }

// Isolation reports full isolation: each sandbox is its own microVM
// (Namespaces true) and Fork is a copy-on-write snapshot (CopyOnWrite true).
func (p *Provider) Isolation() sandbox.Isolation {
	return sandbox.Isolation{Namespaces: true, CopyOnWrite: true}
}

// sandboxInfo is the part of SandboxInfo the client reads.
type sandboxInfo struct {
	ID            string            `json:"id"`
	State         string            `json:"state"`
	Labels        map[string]string `json:"labels"`
	CreatedAt     string            `json:"createdAt"`
	ChargedMicros *int64            `json:"chargedMicros"`
}

type createBody struct {
	Labels           map[string]string `json:"labels"`
	VCPU             int               `json:"vcpu,omitempty"`
	MemoryMiB        int               `json:"memoryMiB,omitempty"`
	IdlePauseSeconds int               `json:"idlePauseSeconds"`
	OnTimeout        string            `json:"onTimeout"`
	TimeoutSeconds   int               `json:"timeoutSeconds"`
}

// Create starts a sandbox (POST /v1/sandboxes with Prefer: wait=60, labels
// app=bestofn plus Options.Labels plus opts.Labels, never idle-paused,
// deleted at its time limit), waits until it runs and makes /workspace and
// /bestofn/home. On an error after the start it deletes the sandbox.
func (p *Provider) Create(ctx context.Context, opts sandbox.CreateOptions) (sandbox.Sandbox, error) {
	labels := map[string]string{"app": "bestofn"}
	for k, v := range p.opts.Labels {
		labels[k] = v
	}
	for k, v := range opts.Labels {
		labels[k] = v
	}
	body := createBody{Labels: labels, VCPU: p.opts.VCPU, MemoryMiB: p.opts.MemoryMiB, OnTimeout: "delete"}
	if p.opts.TimeLimit > 0 {
		body.TimeoutSeconds = max(60, int((p.opts.TimeLimit+time.Second-1)/time.Second))
		body.TimeoutSeconds = min(body.TimeoutSeconds, 86400)
	}
	var info sandboxInfo
	if err := p.doJSON(ctx, &request{method: "POST", path: "/v1/sandboxes", prefer: "wait=60"}, body, &info); err != nil {
		return nil, err
	}
	if info.ID == "" {
		return nil, errors.New("runtime: POST /v1/sandboxes: answer without an id")
	}
	s := p.newSandbox(info, nil)
	err := s.waitRunning(ctx, info.State)
	if err == nil {
		var res sandbox.ExecResult
		res, err = s.Exec(ctx, sandbox.ExecRequest{Argv: []string{"mkdir", "-p", sandbox.Workspace, sandbox.Scratch + "/home"}, Timeout: 60 * time.Second})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("runtime: create %s: mkdir exited %d: %s", s.id, res.ExitCode, bytes.TrimSpace(res.Stderr))
		}
	}
	if err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		return nil, errors.Join(err, s.Stop(dctx))
	}
	return s, nil
}

// Sandbox is one Runtime sandbox. It implements sandbox.Sandbox and is safe
// for concurrent use.
type Sandbox struct {
	p       *Provider
	id      string
	created time.Time // from createdAt, or when the client learnt of it

	mu       sync.Mutex
	stopped  bool
	deleted  bool
	internet *bool // the network setting last put; nil when unknown
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

func (p *Provider) newSandbox(info sandboxInfo, internet *bool) *Sandbox {
	s := &Sandbox{p: p, id: info.ID, created: time.Now()}
	if t, err := time.Parse(time.RFC3339Nano, info.CreatedAt); err == nil && t.Before(s.created) {
		s.created = t
	}
	if internet != nil {
		v := *internet
		s.internet = &v
	}
	return s
}

// ID returns Runtime's id of the sandbox ("sbx-...").
func (s *Sandbox) ID() string { return s.id }

func (s *Sandbox) path(suffix string) string { return "/v1/sandboxes/" + url.PathEscape(s.id) + suffix }

// live returns an error wrapping sandbox.ErrStopped after Stop.
func (s *Sandbox) live() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("runtime sandbox %s: %w", s.id, sandbox.ErrStopped)
	}
	return nil
}

// waitRunning waits server-side until the sandbox runs
// (GET ?waitFor=running&timeoutSeconds=60), unless state already says so.
func (s *Sandbox) waitRunning(ctx context.Context, state string) error {
	for range 5 {
		switch state {
		case "running", "":
			return nil
		case "stopping", "stopped":
			return fmt.Errorf("runtime: sandbox %s is %s", s.id, state)
		}
		var info sandboxInfo
		q := url.Values{"waitFor": {"running"}, "timeoutSeconds": {"60"}}
		if err := s.p.doJSON(ctx, &request{method: "GET", path: s.path(""), query: q}, nil, &info); err != nil {
			return err
		}
		state = info.State
	}
	return fmt.Errorf("runtime: sandbox %s did not reach running (state %s)", s.id, state)
}

// checkPath refuses paths outside /workspace and /bestofn (a Runtime VM
// would accept them), relative ones and ones with "." or ".." parts.
func checkPath(p string, allowTrailingSlash bool) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("path %q is not absolute", p)
	}
	q := p
	if allowTrailingSlash && len(q) > 1 {
		q = strings.TrimSuffix(q, "/")
	}
	if path.Clean(q) != q {
		return fmt.Errorf("path %q is not clean", p)
	}
	if q != sandbox.Workspace && q != sandbox.Scratch && !strings.HasPrefix(q, sandbox.Workspace+"/") && !strings.HasPrefix(q, sandbox.Scratch+"/") {
		return fmt.Errorf("path %q is outside %s and %s", p, sandbox.Workspace, sandbox.Scratch)
	}
	return nil
}

// Usage returns Wall, the time since the sandbox was created (from GET
// /v1/sandboxes/{id}, createdAt). CPUSeconds and MaxRSSBytes are 0: Runtime
// reports cost, not CPU time (see CostMicros). ErrStopped after Stop.
func (s *Sandbox) Usage(ctx context.Context) (sandbox.Usage, error) {
	info, err := s.info(ctx)
	if err != nil {
		return sandbox.Usage{}, err
	}
	created := s.created
	if t, err := time.Parse(time.RFC3339Nano, info.CreatedAt); err == nil && t.Before(created) {
		created = t
	}
	return sandbox.Usage{Wall: max(time.Since(created), time.Nanosecond)}, nil
}

// CostMicros returns what Runtime charged for the sandbox so far, in
// microdollars (SandboxInfo.chargedMicros); ok is false when the answer has
// no chargedMicros. ErrStopped after Stop.
func (s *Sandbox) CostMicros(ctx context.Context) (micros int64, ok bool, err error) {
	info, err := s.info(ctx)
	if err != nil || info.ChargedMicros == nil {
		return 0, false, err
	}
	return *info.ChargedMicros, true, nil
}

func (s *Sandbox) info(ctx context.Context) (sandboxInfo, error) {
	var info sandboxInfo
	if err := s.live(); err != nil {
		return info, err
	}
	err := s.p.doJSON(ctx, &request{method: "GET", path: s.path("")}, nil, &info)
	return info, err
}

// Stop deletes the sandbox (DELETE /v1/sandboxes/{id}; a merely stopped
// sandbox keeps a billed disk). It is idempotent; a 404 counts as deleted.
// Afterwards every other method returns an error wrapping sandbox.ErrStopped.
func (s *Sandbox) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	if s.deleted {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	// A sandbox left behind keeps billing: DELETE is tried again on any
	// answer but 404 (gone already), even on codes other calls take as final
	// (a 409 while the sandbox is busy, a 503 *_unavailable), a few times.
	var err error
	for try := 0; try < stopTries; try++ {
		if try > 0 {
			if werr := s.p.sleep(ctx, backoff(try)); werr != nil {
				break
			}
		}
		err = s.p.doJSON(ctx, &request{method: "DELETE", path: s.path("")}, nil, nil)
		var ae *Error
		if err == nil || errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			err = nil
			break
		}
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.deleted = true
	s.mu.Unlock()
	return nil
}

// stopTries is how many times Stop sends DELETE before it gives up.
const stopTries = 4

// forkBatch is the most copies one :fork call asks for.
const forkBatch = 10

// Fork makes n copies with POST /v1/sandboxes/{id}:fork (count <= 10 per
// call, Prefer: wait=60; more copies take several calls). On a partial
// failure it returns the copies that started (earlier calls' and
// details.startedSandboxIds) with the error; the caller stops them. The
// parent stays usable on Runtime. ErrStopped after Stop.
func (s *Sandbox) Fork(ctx context.Context, n int) ([]sandbox.Sandbox, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("runtime: fork %s: n is %d, want at least 1", s.id, n)
	}
	s.mu.Lock()
	internet := s.internet
	s.mu.Unlock()
	var out []sandbox.Sandbox
	for n > 0 {
		k := min(n, forkBatch)
		var resp struct {
			Sandboxes []sandboxInfo `json:"sandboxes"`
		}
		err := s.p.doJSON(ctx, &request{method: "POST", path: s.path(":fork"), prefer: "wait=60"}, map[string]int{"count": k}, &resp)
		if err != nil {
			var ae *Error
			if errors.As(err, &ae) {
				for _, id := range ae.StartedSandboxIDs() {
					out = append(out, s.p.newSandbox(sandboxInfo{ID: id}, internet))
				}
			}
			return out, err
		}
		for _, info := range resp.Sandboxes {
			out = append(out, s.p.newSandbox(info, internet))
		}
		if len(resp.Sandboxes) != k {
			return out, fmt.Errorf("runtime: fork %s: asked for %d copies, got %d", s.id, k, len(resp.Sandboxes))
		}
		n -= k
	}
	return out, nil
}

// Account is what Runtime says about the API key's account: GET /v1/me and
// GET /v1/limits, as JSON objects (their fields are not documented in
// runtime-api.md, so they are passed through as they come).
type Account struct {
	Me, Limits map[string]any
}

// Account checks the API key and reads the account's limits; a bad key is
// an *Error with status 401.
func (p *Provider) Account(ctx context.Context) (Account, error) {
	var a Account
	if err := p.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/me"}, nil, &a.Me); err != nil {
		return a, err
	}
	err := p.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/limits"}, nil, &a.Limits)
	return a, err
}
