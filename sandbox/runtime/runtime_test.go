package runtime_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bestofn/bestofn/sandbox"
	"github.com/bestofn/bestofn/sandbox/runtime"
	"github.com/bestofn/bestofn/sandbox/runtime/runtimetest"
	"github.com/bestofn/bestofn/sandbox/sandboxtest"
)

const apiKey = "rt_test_SECRET_key_0123456789"

// newServer starts a test server over a local provider (overlayfs when
// root, else copies) and closes it with the test.
func newServer(t *testing.T, mod func(*runtimetest.Options)) *runtimetest.Server {
	t.Helper()
	opts := runtimetest.Options{Dir: t.TempDir(), APIKey: apiKey}
	opts.Local.ForceCopy = os.Geteuid() != 0
	if mod != nil {
		mod(&opts)
	}
	srv, err := runtimetest.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// sleeps records the waits of a Provider instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func newProvider(t *testing.T, srv *runtimetest.Server, sl *sleeps) *runtime.Provider {
	t.Helper()
	opts := runtime.Options{BaseURL: srv.URL(), APIKey: apiKey, HTTPClient: srv.Client(), Labels: map[string]string{"run": "42"}}
	if sl != nil {
		opts.Sleep = sl.sleep
	}
	p, err := runtime.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func create(t *testing.T, p *runtime.Provider) sandbox.Sandbox {
	t.Helper()
	s, err := p.Create(ctx(t), sandbox.CreateOptions{Labels: map[string]string{"attempt": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	return s
}

func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) sandbox.Provider {
		// Small continue chunks so long outputs cross several connections.
		srv := newServer(t, func(o *runtimetest.Options) { o.ContinueBytes = 40 << 10 })
		return newProvider(t, srv, nil)
	})
}

// TestConformanceCopy runs the suite over a local backend that copies files
// on fork, as it does when not root.
func TestConformanceCopy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("TestConformance already runs in copy mode")
	}
	sandboxtest.Run(t, func(t *testing.T) sandbox.Provider {
		srv := newServer(t, func(o *runtimetest.Options) { o.Local.ForceCopy = true })
		return newProvider(t, srv, nil)
	})
}

func TestCreateWire(t *testing.T) {
	srv := newServer(t, nil)
	p, err := runtime.New(runtime.Options{BaseURL: srv.URL(), APIKey: apiKey, HTTPClient: srv.Client(),
		Labels: map[string]string{"run": "7"}, VCPU: 4, MemoryMiB: 8192, TimeLimit: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Create(ctx(t), sandbox.CreateOptions{Labels: map[string]string{"attempt": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.RequestsTo(runtimetest.RouteCreate)
	if len(reqs) != 1 || reqs[0].Prefer != "wait=60" || reqs[0].Client != runtime.ClientHeader || reqs[0].IdempotencyKey == "" {
		t.Errorf("create requests: %+v", reqs)
	}
	if got := srv.Sandboxes(); len(got) != 1 || got[0] != s.ID() {
		t.Errorf("server sandboxes %v, want [%s]", got, s.ID())
	}
	if p.Name() != "runtime" || !p.Isolation().Namespaces || !p.Isolation().CopyOnWrite {
		t.Errorf("Name/Isolation: %s %+v", p.Name(), p.Isolation())
	}
	// A short command with a small cap is not streamed.
	res, err := s.Exec(ctx(t), sandbox.ExecRequest{Shell: "echo hi; echo oops >&2; exit 3", Timeout: 5 * time.Second, OutputLimit: 1000})
	if err != nil || res.ExitCode != 3 || string(res.Stdout) != "hi\n" || string(res.Stderr) != "oops\n" {
		t.Errorf("non-streamed exec: %+v %v", res, err)
	}
	if execs := srv.RequestsTo(runtimetest.RouteExec); execs[len(execs)-1].Accept != "application/json" {
		t.Errorf("short exec was streamed: %+v", execs[len(execs)-1])
	}
	// Labels: app=bestofn + Options.Labels + CreateOptions.Labels, listed by label.
	req, _ := http.NewRequest("GET", srv.URL()+"/v1/sandboxes?label=app:bestofn&label=run:7&label=attempt:3", nil)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	list, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(list), `"id":"`+s.ID()+`"`) || resp.Header.Get("x-request-id") == "" {
		t.Errorf("list by label: %s", list)
	}
	cost, ok, err := s.(*runtime.Sandbox).CostMicros(ctx(t))
	if err != nil || !ok || cost < 0 {
		t.Errorf("CostMicros: %d %v %v", cost, ok, err)
	}
	if err := s.Stop(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx(t)); err != nil {
		t.Fatal(err)
	}
	dels := srv.RequestsTo(runtimetest.RouteDelete)
	if len(dels) != 1 || dels[0].Path != "/v1/sandboxes/"+s.ID() || dels[0].IdempotencyKey == "" {
		t.Errorf("DELETE requests: %+v", dels)
	}
	if got := srv.Sandboxes(); len(got) != 0 {
		t.Errorf("sandboxes left after Stop: %v", got)
	}
	if _, err := s.ReadFile(ctx(t), "/workspace/x"); !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("ReadFile after Stop: %v", err)
	}
	if _, err := runtime.New(runtime.Options{}); err == nil {
		t.Errorf("New without a key succeeded")
	}
}

func TestRetryBurstSameKey(t *testing.T) {
	srv := newServer(t, nil)
	sl := &sleeps{}
	p := newProvider(t, srv, sl)
	s := create(t, p)
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteFilePut, Times: 2, Status: 429, Code: "rate_limited", RetryAfter: "0"})
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteFilePut, Times: 1, Status: 503, Code: "busy", RetryAfter: "0"})
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteFilePut, Times: 1, Status: 409, Code: "trial_busy", RetryAfter: "0"}) // old name
	if err := s.WriteFile(ctx(t), "/workspace/f", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	reqs := srv.RequestsTo(runtimetest.RouteFilePut)
	if len(reqs) != 5 {
		t.Fatalf("%d PUT files/content requests, want 5: %+v", len(reqs), reqs)
	}
	for _, r := range reqs {
		if r.IdempotencyKey == "" || r.IdempotencyKey != reqs[0].IdempotencyKey {
			t.Errorf("retries used keys %q and %q", reqs[0].IdempotencyKey, r.IdempotencyKey)
		}
	}
	if w := sl.all(); len(w) != 4 || w[0] != 0 || w[3] != 0 {
		t.Errorf("waits %v, want four of 0 (Retry-After: 0)", w)
	}
	// A new logical call gets a new key.
	if err := s.WriteFile(ctx(t), "/workspace/g", []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	reqs = srv.RequestsTo(runtimetest.RouteFilePut)
	if reqs[5].IdempotencyKey == reqs[0].IdempotencyKey {
		t.Errorf("a new call reused the key")
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	srv := newServer(t, nil)
	sl := &sleeps{}
	p := newProvider(t, srv, sl)
	s := create(t, p)
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteGet, Status: 429, Code: "rate_limited", RetryAfter: "7"})
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteGet, Status: 503, Code: "host_unavailable", RetryAfterMs: 1500})
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteGet, Status: 502, Code: "bad_gateway"})
	if _, err := s.Usage(ctx(t)); err != nil {
		t.Fatal(err)
	}
	w := sl.all()
	if len(w) != 3 || w[0] != 7*time.Second || w[1] != 1500*time.Millisecond || w[2] <= 0 {
		t.Errorf("waits %v, want [7s 1.5s backoff]", w)
	}
	// The deadline bounds retries.
	p2, _ := runtime.New(runtime.Options{BaseURL: srv.URL(), APIKey: apiKey, HTTPClient: srv.Client(), Sleep: sl.sleep, RetryDeadline: 10 * time.Second})
	s2, err := p2.Create(ctx(t), sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop(context.Background())
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteGet, Times: 100, Status: 429, Code: "rate_limited", RetryAfter: "4"})
	before := len(srv.RequestsTo(runtimetest.RouteGet))
	if _, err := s2.Usage(ctx(t)); err == nil {
		t.Errorf("Usage succeeded through 100 faults with a 10 s deadline")
	}
	if n := len(srv.RequestsTo(runtimetest.RouteGet)) - before; n != 3 {
		t.Errorf("%d attempts within a 10 s deadline at 4 s each, want 3", n)
	}
}

func TestNoRetryOnFinal(t *testing.T) {
	for _, f := range []runtimetest.Fault{
		{Status: 422, Code: "invalid_request"},
		{Status: 402, Code: "spending_limit_reached"},
		{Status: 503, Code: "fork_unavailable"},
		{Status: 409, Code: "lease_too_short"},
		{Status: 404, Code: "sandbox_not_found"},
	} {
		t.Run(f.Code, func(t *testing.T) {
			srv := newServer(t, nil)
			sl := &sleeps{}
			p := newProvider(t, srv, sl)
			s := create(t, p)
			f.Route, f.Times, f.Message = runtimetest.RouteFork, 5, "no"
			srv.Inject(f)
			kids, err := s.Fork(ctx(t), 1)
			var ae *runtime.Error
			if !errors.As(err, &ae) || ae.Status != f.Status || ae.Code != f.Code || ae.RequestID == "" || len(kids) != 0 {
				t.Fatalf("Fork: %v %v", kids, err)
			}
			if n := len(srv.RequestsTo(runtimetest.RouteFork)); n != 1 || len(sl.all()) != 0 {
				t.Errorf("%d fork requests and waits %v, want 1 and none", n, sl.all())
			}
		})
	}
}

func TestLateAnswer(t *testing.T) {
	srv := newServer(t, nil)
	p := newProvider(t, srv, &sleeps{})
	s := create(t, p)
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteFilePut, Status: 402, Code: "insufficient_funds", LateAnswer: true})
	err := s.WriteFile(ctx(t), "/workspace/f", []byte("x"), 0o644)
	var ae *runtime.Error
	if !errors.As(err, &ae) || !ae.Late || ae.Code != "insufficient_funds" {
		t.Errorf("late answer: %v", err)
	}
}

func TestDroppedStreamResumes(t *testing.T) {
	srv := newServer(t, func(o *runtimetest.Options) { o.ContinueBytes = 30 << 10 })
	p := newProvider(t, srv, &sleeps{})
	s := create(t, p)
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteExec, DropAfterBytes: 10 << 10})
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteOutput, DropAfterBytes: 5 << 10})
	var want strings.Builder
	for i := 1; i <= 30000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	res, err := s.Exec(ctx(t), sandbox.ExecRequest{Shell: "seq 1 30000; echo done >&2", Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != want.String() || string(res.Stderr) != "done\n" || res.ExitCode != 0 || res.StdoutTruncated {
		t.Errorf("resumed output: %d bytes (want %d), stderr %q, exit %d", len(res.Stdout), want.Len(), res.Stderr, res.ExitCode)
	}
	execs := srv.RequestsTo(runtimetest.RouteExec)
	last := execs[len(execs)-1]
	if !strings.Contains(last.Accept, "application/x-ndjson") {
		t.Errorf("streamed exec Accept %q", last.Accept)
	}
	outs := srv.RequestsTo(runtimetest.RouteOutput)
	if len(outs) < 3 {
		t.Fatalf("%d output requests, want a resume after the drop and after continue lines", len(outs))
	}
	for _, o := range outs {
		if !strings.Contains(o.Query, "follow=true") || !strings.Contains(o.Query, "cursor=") {
			t.Errorf("output query %q", o.Query)
		}
	}
	if strings.Contains(outs[0].Query, "cursor=0") {
		t.Errorf("the first resume did not continue from the bytes received: %q", outs[0].Query)
	}
}

func TestPartialFork(t *testing.T) {
	srv := newServer(t, nil)
	p := newProvider(t, srv, &sleeps{})
	s := create(t, p)
	if err := s.WriteFile(ctx(t), "/workspace/f", []byte("base"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteFork, ForkFailAt: 3, Status: 409, Code: "no_capacity"})
	kids, err := s.Fork(ctx(t), 5)
	var ae *runtime.Error
	if !errors.As(err, &ae) || ae.Code != "no_capacity" || len(kids) != 2 {
		t.Fatalf("partial fork: %d copies, err %v", len(kids), err)
	}
	if n := len(srv.RequestsTo(runtimetest.RouteFork)); n != 1 {
		t.Errorf("a partial fork was retried: %d requests", n)
	}
	for _, k := range kids {
		if got, err := k.ReadFile(ctx(t), "/workspace/f"); err != nil || string(got) != "base" {
			t.Errorf("started copy %s: %q %v", k.ID(), got, err)
		}
	}
	if len(srv.Sandboxes()) != 3 {
		t.Errorf("server has %v, want the base and two copies", srv.Sandboxes())
	}
	for _, k := range kids {
		if err := k.Stop(ctx(t)); err != nil {
			t.Error(err)
		}
	}
	if err := s.Stop(ctx(t)); err != nil {
		t.Error(err)
	}
	if got := srv.Sandboxes(); len(got) != 0 {
		t.Errorf("sandboxes left: %v", got)
	}
	// More than ten copies take several calls of at most ten.
	s2 := create(t, p)
	kids, err = s2.Fork(ctx(t), 12)
	for _, k := range kids {
		defer k.Stop(context.Background())
	}
	if err != nil || len(kids) != 12 {
		t.Fatalf("Fork(12): %d, %v", len(kids), err)
	}
	if n := len(srv.RequestsTo(runtimetest.RouteFork)); n != 3 {
		t.Errorf("%d fork requests in all, want 3 (1 + 10 + 2)", n)
	}
}

func TestIdempotencyReplay(t *testing.T) {
	srv := newServer(t, nil)
	p := newProvider(t, srv, &sleeps{})
	s := create(t, p)
	// A 502 from a proxy after the server did the work: the retry replays.
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteCreate, Status: 502, Code: "bad_gateway"})
	s2, err := p.Create(ctx(t), sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop(context.Background())
	if len(srv.Sandboxes()) != 2 {
		t.Errorf("sandboxes %v", srv.Sandboxes())
	}
	// Raw replay and reuse checks against the wire.
	do := func(key, body string) (int, string, string) {
		req, _ := newReq(srv.URL()+"/v1/sandboxes/"+s.ID()+"/network", body, key)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Idempotency-Replayed"), string(b)
	}
	st1, rep1, b1 := do("k1", `{"internet":false}`)
	st2, rep2, b2 := do("k1", `{"internet":false}`)
	st3, _, b3 := do("k1", `{"internet":true}`)
	st4, _, b4 := do("k2", `{"internet":true,"bogus":1}`)
	if st1 != 200 || rep1 != "" || st2 != 200 || rep2 != "true" || !strings.Contains(b2, `"replayed":true`) {
		t.Errorf("replay: %d %q %s / %d %q %s", st1, rep1, b1, st2, rep2, b2)
	}
	if st3 != 422 || !strings.Contains(b3, "idempotency_key_reused") {
		t.Errorf("reused key: %d %s", st3, b3)
	}
	if st4 != 400 || !strings.Contains(b4, "invalid_request") {
		t.Errorf("unknown field: %d %s", st4, b4)
	}
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	srv := newServer(t, nil)
	p := newProvider(t, srv, &sleeps{})
	s := create(t, p)
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteExec, Status: 400, Code: "invalid_request", Message: "bad header Bearer " + apiKey})
	_, err := s.Exec(ctx(t), sandbox.ExecRequest{Argv: []string{"true"}, Timeout: time.Second, OutputLimit: 100})
	if err == nil || strings.Contains(err.Error(), apiKey) {
		t.Errorf("error %v", err)
	}
	bad, _ := runtime.New(runtime.Options{BaseURL: srv.URL(), APIKey: "rt_wrong_SECRET_999", HTTPClient: srv.Client()})
	_, err = bad.Create(ctx(t), sandbox.CreateOptions{})
	var ae *runtime.Error
	if !errors.As(err, &ae) || ae.Status != 401 || strings.Contains(err.Error(), "rt_wrong_SECRET_999") {
		t.Errorf("401: %v", err)
	}
	dead, _ := runtime.New(runtime.Options{BaseURL: "http://127.0.0.1:1", APIKey: apiKey, Sleep: func(time.Duration) {}, RetryDeadline: time.Second})
	_, err = dead.Create(ctx(t), sandbox.CreateOptions{})
	if err == nil || strings.Contains(err.Error(), apiKey) {
		t.Errorf("transport error: %v", err)
	}
}

func TestNetworkAndLargeFiles(t *testing.T) {
	srv := newServer(t, func(o *runtimetest.Options) { o.GzipArchives = true; o.ChunkBytes = 512 << 10 })
	p := newProvider(t, srv, &sleeps{})
	s := create(t, p)
	for _, n := range []bool{false, false, true} {
		if _, err := s.Exec(ctx(t), sandbox.ExecRequest{Argv: []string{"true"}, Network: n}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.RequestsTo(runtimetest.RouteNetwork)); n != 2 {
		t.Errorf("%d network PUTs, want 2 (cached in between)", n)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 150000) // 2.4 MB
	for _, path := range []string{"/workspace/big", "/bestofn/big"} {
		if err := s.WriteFile(ctx(t), path, big, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := s.ReadFile(ctx(t), path)
		if err != nil || !bytes.Equal(got, big) {
			t.Errorf("large file %s: %d bytes, %v", path, len(got), err)
		}
	}
	if n := len(srv.RequestsTo(runtimetest.RouteUploadPart)); n != 5 {
		t.Errorf("%d upload parts, want 5", n)
	}
	// A large archive goes through archive uploads, in order; GetArchive
	// undoes the server's gzip.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "big.bin", Mode: 0o644, Size: int64(len(big)), Typeflag: tar.TypeReg})
	tw.Write(big)
	tw.Close()
	if err := s.PutArchive(ctx(t), "/workspace/arch", &buf); err != nil {
		t.Fatal(err)
	}
	parts := srv.RequestsTo(runtimetest.RouteArchiveUploadPart)
	// 5 parts for /bestofn/big (a one-file archive upload), 5 for arch.
	if len(parts) != 10 || !strings.Contains(parts[5].Query, "offset=0") || !strings.Contains(parts[6].Query, "offset=524288") {
		t.Errorf("archive parts %+v", parts)
	}
	rc, err := s.GetArchive(ctx(t), "/workspace/arch")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil || h.Name != "big.bin" {
		t.Fatalf("archive: %v %v", h, err)
	}
	if got, _ := io.ReadAll(tr); !bytes.Equal(got, big) {
		t.Errorf("archive body: %d bytes", len(got))
	}
}

func newReq(u, body, key string) (*http.Request, error) {
	req, err := http.NewRequest("PUT", u, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	return req, nil
}

// TestAccount: the key is checked with GET /v1/me and the limits read; a
// wrong key is a 401 that names no key.
func TestAccount(t *testing.T) {
	srv := newServer(t, nil)
	a, err := newProvider(t, srv, nil).Account(ctx(t))
	if err != nil || a.Me["id"] == nil || a.Limits["maxForkCount"] == nil {
		t.Fatalf("Account = %+v, %v", a, err)
	}
	bad, err := runtime.New(runtime.Options{BaseURL: srv.URL(), APIKey: "rt_wrong", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Account(ctx(t))
	var re *runtime.Error
	if !errors.As(err, &re) || re.Status != 401 || strings.Contains(err.Error(), "rt_wrong") {
		t.Errorf("wrong key: %v", err)
	}
}

// TestAllowHosts: a command with network gets only the allowed hosts; one
// without gets no internet at all.
func TestAllowHosts(t *testing.T) {
	srv := newServer(t, nil)
	p, err := runtime.New(runtime.Options{BaseURL: srv.URL(), APIKey: apiKey, HTTPClient: srv.Client(), AllowHosts: []string{"api.anthropic.com"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Create(ctx(t), sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(ctx(t))
	for _, n := range []bool{true, false} {
		if _, err := s.Exec(ctx(t), sandbox.ExecRequest{Argv: []string{"true"}, Network: n}); err != nil {
			t.Fatal(err)
		}
		internet, allow, ok := srv.Network(s.ID())
		switch {
		case !ok:
			t.Fatal("unknown sandbox")
		case n && (!internet || len(allow) != 1 || allow[0] != "api.anthropic.com"):
			t.Errorf("with network: internet=%v allow=%q", internet, allow)
		case !n && (internet || len(allow) != 0):
			t.Errorf("without network: internet=%v allow=%q", internet, allow)
		}
	}
}

// TestStopRetriesDelete: DELETE answered 409 and 503 unavailable is sent
// again, so no sandbox is left billing.
func TestStopRetriesDelete(t *testing.T) {
	srv := newServer(t, nil)
	var sl sleeps
	p := newProvider(t, srv, &sl)
	s, err := p.Create(ctx(t), sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteDelete, Status: 409, Code: "not_running", Times: 1})
	srv.Inject(runtimetest.Fault{Route: runtimetest.RouteDelete, Status: 503, Code: "unavailable", Times: 1})
	if err := s.Stop(ctx(t)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if n := len(srv.Sandboxes()); n != 0 {
		t.Errorf("%d sandboxes left", n)
	}
	if n := len(srv.RequestsTo(runtimetest.RouteDelete)); n != 3 {
		t.Errorf("DELETE sent %d times, want 3", n)
	}
}
