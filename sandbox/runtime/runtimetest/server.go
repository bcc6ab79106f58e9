// Package runtimetest is an in-process HTTP server that speaks the wire
// format of Runtime's sandbox API (as written down in
// ../shared/design/runtime-api.md) on top of the local sandbox backend, with
// fault injection, for the tests of package sandbox/runtime.
//
// Each Runtime sandbox is one sandbox/local sandbox; the local backend
// already shows its files at /workspace and /bestofn, so paths pass through
// unchanged (paths elsewhere are refused with 400 invalid_path, where a real
// Runtime VM would accept them).
//
// # Differences from Runtime
//
//   - Fork is a local Fork of one copy at a time. The local backend freezes a
//     forked sandbox; Runtime does not. Here a forked parent stays usable for
//     reads (files/content GET, files/archive GET), for further forks, for
//     GET and DELETE, but an exec or a file write on it is answered
//     409 sandbox_frozen (final, not retryable).
//   - A streamed exec sends its start line at once and its output when the
//     command ends (the local backend returns the output at the end). After
//     Options.ContinueBytes bytes of output on one connection the stream
//     ends with a continue line; the client resumes from the cursor with
//     GET .../processes/{pid}/output.
//   - exec output is kept by the end: a non-streamed answer keeps the last
//     64 KiB (timeoutMs <= 60000) or 1 MiB of each stream, a streamed one the
//     last 64 MiB (a truncated line reports the cut).
//   - chargedMicros is an estimate from the local CPU time and the sandbox's
//     memory size at the documented prices.
//   - No pause, snapshots, volumes, egress secrets or webhooks;
//     PUT .../network only records the flag, which becomes the local
//     ExecRequest.Network of later commands.
package runtimetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bestofn/bestofn/sandbox"
	"github.com/bestofn/bestofn/sandbox/local"
)

// Options configures New.
type Options struct {
	// Dir holds the local sandboxes (Local.Dir when that is empty) and the
	// server's upload files. Required unless Local.Dir is set.
	Dir string
	// APIKey is the bearer token every request must carry; empty accepts any.
	APIKey string
	// Local configures the local provider under the server; Dir defaults to
	// Options.Dir/sandboxes.
	Local local.Options
	// ContinueBytes is how many bytes of command output one streaming
	// connection carries before it ends with a continue line; zero means 256 KiB.
	ContinueBytes int
	// ChunkBytes is the chunkBytes the upload routes answer; zero means 1 MiB.
	ChunkBytes int
	// GzipArchives makes GET files/archive answer gzip even without gzip=true.
	GzipArchives bool
}

// Request is one request the server answered, for assertions.
type Request struct {
	// Method and Path are the request's; Route is the matched route pattern,
	// such as "POST /v1/sandboxes/{id}:exec" (the Route* constants).
	Method, Path, Route string
	// Query is the raw query string.
	Query string
	// IdempotencyKey is the Idempotency-Key header ("" when absent).
	IdempotencyKey string
	// Prefer, Client and Accept are the Prefer, x-runtime-client and Accept headers.
	Prefer, Client, Accept string
	// Status is the HTTP status answered (200 for streams).
	Status int
	// Code is the error code answered, "" on success.
	Code string
	// Replayed says the answer was an idempotency replay.
	Replayed bool
	// Faulted says an injected fault produced or shaped the answer.
	Faulted bool
}

// Route patterns, as reported in Request.Route and used in Fault.Route.
const (
	RouteMe                 = "GET /v1/me"
	RouteLimits             = "GET /v1/limits"
	RouteCreate             = "POST /v1/sandboxes"
	RouteList               = "GET /v1/sandboxes"
	RouteGet                = "GET /v1/sandboxes/{id}"
	RouteDelete             = "DELETE /v1/sandboxes/{id}"
	RouteExec               = "POST /v1/sandboxes/{id}:exec"
	RouteFork               = "POST /v1/sandboxes/{id}:fork"
	RouteNetwork            = "PUT /v1/sandboxes/{id}/network"
	RouteOutput             = "GET /v1/sandboxes/{id}/processes/{pid}/output"
	RouteFileGet            = "GET /v1/sandboxes/{id}/files/content"
	RouteFilePut            = "PUT /v1/sandboxes/{id}/files/content"
	RouteUploadStart        = "POST /v1/sandboxes/{id}/uploads"
	RouteUploadPart         = "PUT /v1/sandboxes/{id}/uploads/{uid}"
	RouteUploadCommit       = "POST /v1/sandboxes/{id}/uploads/{uid}:commit"
	RouteArchiveGet         = "GET /v1/sandboxes/{id}/files/archive"
	RouteArchivePut         = "PUT /v1/sandboxes/{id}/files/archive"
	RouteArchiveUploadStart = "POST /v1/sandboxes/{id}/files/archive/uploads"
	RouteArchiveUploadPart  = "PUT /v1/sandboxes/{id}/files/archive/uploads/{uid}"
	RouteArchiveUpload      = "POST /v1/sandboxes/{id}/files/archive/uploads/{uid}:commit"
)

// Fault is one injected failure, matched against requests by Route.
type Fault struct {
	// Route is the route pattern the fault applies to (a Route* constant).
	Route string
	// Times is how many matching requests it affects; zero means 1.
	Times int
	// Status and Code make an error answer with the envelope
	// (Message defaults to a short text). With ForkFailAt they describe the
	// failing step.
	Status  int
	Code    string
	Message string
	// RetryAfter is the Retry-After header value to send ("" none);
	// RetryAfterMs is put in the envelope when non-zero.
	RetryAfter   string
	RetryAfterMs int64
	// DropAfterBytes, on RouteExec (streaming) or RouteOutput, cuts the
	// connection without an end after at least this many output bytes.
	DropAfterBytes int
	// ForkFailAt, on RouteFork, makes copy number ForkFailAt (1-based) fail:
	// the answer is the error with details.startedSandboxIds of the copies
	// that started (they keep running).
	ForkFailAt int
	// LateAnswer answers 200 with runtime-late-answer: true and the error
	// envelope as body.
	LateAnswer bool
	// Skip lets this many matching requests through before the fault
	// applies (the third fork of a run, say).
	Skip int
}

// Server is the in-process Runtime API. Close it when done.
type Server struct {
	srv   *httptest.Server
	opts  Options
	local *local.Provider
	dir   string

	mu       sync.Mutex
	boxes    map[string]*rsb
	deleted  map[string]bool
	faults   []*faultState
	requests []Request
	idem     map[string]*idemEntry
	uploads  map[string]*upload
	seq      int
}

type faultState struct {
	f    Fault
	left int
	skip int // matching requests still to let through
}

// rsb is one Runtime sandbox.
type rsb struct {
	id       string
	name     string
	sb       sandbox.Sandbox
	labels   map[string]string
	created  time.Time
	vcpu     int
	mem      int
	disk     int
	timeout  int
	internet bool
	allow    []string // network.allow as last put
	ctx      context.Context
	cancel   context.CancelFunc

	mu    sync.Mutex
	procs map[string]*process
}

// process is one streamed command.
type process struct {
	id     string
	done   chan struct{}
	chunks []chunk // set before done closes
	total  int64
	res    sandbox.ExecResult
	err    error
}

type chunk struct {
	stream string
	offset int64
	data   []byte
}

type idemEntry struct {
	fp     string
	done   chan struct{}
	status int
	header http.Header
	body   []byte
	pid    string // streaming exec: replay streams this process
	sbID   string
	store  bool
}

type upload struct {
	sbID    string
	path    string
	archive bool
	size    int64
	sha     string
	mode    fs.FileMode
	file    *os.File
	written int64
}

// New starts a server on 127.0.0.1 on top of a new local provider. The
// error is non-nil when the folders cannot be made.
func New(opts Options) (*Server, error) {
	lo := opts.Local
	if lo.Dir == "" {
		if opts.Dir == "" {
			return nil, errors.New("runtimetest: Options.Dir is empty")
		}
		lo.Dir = filepath.Join(opts.Dir, "sandboxes")
	}
	dir := opts.Dir
	if dir == "" {
		dir = filepath.Join(lo.Dir, "..", "runtimetest")
	}
	dir = filepath.Join(dir, "uploads")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("runtimetest: %w", err)
	}
	lp, err := local.New(lo)
	if err != nil {
		return nil, fmt.Errorf("runtimetest: %w", err)
	}
	if opts.ContinueBytes <= 0 {
		opts.ContinueBytes = 256 << 10
	}
	if opts.ChunkBytes <= 0 {
		opts.ChunkBytes = 1 << 20
	}
	s := &Server{opts: opts, local: lp, dir: dir, boxes: map[string]*rsb{}, deleted: map[string]bool{},
		idem: map[string]*idemEntry{}, uploads: map[string]*upload{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s, nil
}

// URL returns the server's base URL (http://127.0.0.1:port), for
// runtime.Options.BaseURL.
func (s *Server) URL() string { return s.srv.URL }

// Client returns an *http.Client that reaches the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Local returns the local provider under the server.
func (s *Server) Local() *local.Provider { return s.local }

// Close stops every live sandbox (ending their commands), then the server.
func (s *Server) Close() {
	s.mu.Lock()
	var all []*rsb
	for _, b := range s.boxes {
		all = append(all, b)
	}
	s.boxes = map[string]*rsb{}
	ups := s.uploads
	s.uploads = map[string]*upload{}
	s.mu.Unlock()
	for _, b := range all {
		b.cancel()
		_ = b.sb.Stop(context.Background())
	}
	for _, u := range ups {
		u.file.Close()
		os.Remove(u.file.Name())
	}
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Inject adds a fault; faults are used in the order they were added.
func (s *Server) Inject(f Fault) {
	n := f.Times
	if n <= 0 {
		n = 1
	}
	s.mu.Lock()
	s.faults = append(s.faults, &faultState{f: f, left: n, skip: f.Skip})
	s.mu.Unlock()
}

// Requests returns a copy of every request answered so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsTo returns the requests answered on one route pattern.
func (s *Server) RequestsTo(route string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Route == route {
			out = append(out, r)
		}
	}
	return out
}

// Network returns a sandbox's network setting as last put: internet and the
// allowed hosts; ok is false for an unknown sandbox.
func (s *Server) Network(id string) (internet bool, allow []string, ok bool) {
	b, err := s.box(id)
	if err != nil {
		return false, nil, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.internet, append([]string(nil), b.allow...), true
}

// Sandboxes returns the ids of the sandboxes not yet deleted, sorted.
func (s *Server) Sandboxes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id := range s.boxes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// takeFault returns the next pending fault for route that matches kind, or nil.
func (s *Server) takeFault(route string, match func(Fault) bool) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fs := range s.faults {
		if fs.left > 0 && fs.f.Route == route && match(fs.f) {
			if fs.skip > 0 {
				fs.skip--
				continue
			}
			fs.left--
			f := fs.f
			return &f
		}
	}
	return nil
}

// apiError is an error answer.
type apiError struct {
	status       int
	code         string
	message      string
	hint         string
	details      map[string]any
	retryAfter   string
	retryAfterMs int64
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errf(status int, code, format string, a ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, a...)}
}

// reqState is carried through one request.
type reqState struct {
	rec     *Request
	reqID   string
	body    []byte
	faulted bool
	entry   *idemEntry
}

type ctxKey struct{}

func state(r *http.Request) *reqState { return r.Context().Value(ctxKey{}).(*reqState) }

func (s *Server) newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// recorder captures an answer for idempotency replay.
type recorder struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
	keep   bool
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.keep && w.buf.Len() < 4<<20 {
		w.buf.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	st := &reqState{reqID: s.newID("req_")}
	route, params := matchRoute(r.Method, r.URL.Path)
	st.rec = &Request{Method: r.Method, Path: r.URL.Path, Route: route, Query: r.URL.RawQuery,
		IdempotencyKey: r.Header.Get("Idempotency-Key"), Prefer: r.Header.Get("Prefer"),
		Client: r.Header.Get("x-runtime-client"), Accept: r.Header.Get("Accept")}
	rec := &recorder{ResponseWriter: w}
	defer func() {
		st.rec.Status = rec.status
		st.rec.Faulted = st.faulted
		s.mu.Lock()
		s.requests = append(s.requests, *st.rec)
		s.mu.Unlock()
	}()
	w.Header().Set("x-request-id", st.reqID)
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, st))

	if s.opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
		s.writeError(rec, r, errf(401, "unauthorized", "missing or invalid API key"))
		return
	}
	if route == "" {
		s.writeError(rec, r, errf(404, "not_found", "no route %s %s", r.Method, r.URL.Path))
		return
	}
	if f := s.takeFault(route, func(f Fault) bool { return f.DropAfterBytes == 0 && f.ForkFailAt == 0 }); f != nil {
		st.faulted = true
		e := &apiError{status: f.Status, code: f.Code, message: f.Message, retryAfter: f.RetryAfter, retryAfterMs: f.RetryAfterMs}
		if e.message == "" {
			e.message = "injected fault"
		}
		if f.LateAnswer {
			s.writeLate(rec, r, e)
		} else {
			s.writeError(rec, r, e)
		}
		return
	}
	limit := int64(64 << 10)
	if route == RouteFilePut || route == RouteArchivePut || route == RouteUploadPart || route == RouteArchiveUploadPart {
		limit = 1 << 20
	}
	if route == RouteExec {
		limit = 32 << 20 // stdinBase64
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		s.writeError(rec, r, errf(400, "invalid_request", "reading body: %v", err))
		return
	}
	if int64(len(body)) > limit {
		s.writeError(rec, r, errf(413, "payload_too_large", "body over %d bytes", limit))
		return
	}
	st.body = body

	key := st.rec.IdempotencyKey
	if key != "" && r.Method != http.MethodGet {
		sum := sha256.Sum256([]byte(r.Method + " " + r.URL.Path + "?" + r.URL.RawQuery + "\n" + string(body)))
		fp := hex.EncodeToString(sum[:])
		s.mu.Lock()
		e, ok := s.idem[key]
		if !ok {
			e = &idemEntry{fp: fp, done: make(chan struct{})}
			s.idem[key] = e
		}
		s.mu.Unlock()
		if ok {
			select {
			case <-e.done:
			case <-r.Context().Done():
				return
			}
			if e.fp != fp {
				s.writeError(rec, r, errf(422, "idempotency_key_reused", "this Idempotency-Key was used with a different request"))
				return
			}
			st.rec.Replayed = true
			s.replay(rec, r, e)
			return
		}
		st.entry = e
		rec.keep = true
		defer func() {
			e.status, e.header, e.body = rec.status, rec.Header().Clone(), rec.buf.Bytes()
			e.store = e.pid != "" || (rec.status != 429 && rec.status < 500)
			if !e.store {
				s.mu.Lock()
				delete(s.idem, key)
				s.mu.Unlock()
			}
			close(e.done)
		}()
	}
	if err := s.dispatch(rec, r, route, params); err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = errf(500, "internal_error", "%v", err)
		}
		s.writeError(rec, r, ae)
	}
}

// replay answers a stored idempotent result again.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, e *idemEntry) {
	w.Header().Set("Idempotency-Replayed", "true")
	if e.pid != "" {
		s.mu.Lock()
		b := s.boxes[e.sbID]
		s.mu.Unlock()
		if b == nil {
			s.writeError(w, r, errf(404, "sandbox_not_found", "sandbox %s not found", e.sbID))
			return
		}
		b.mu.Lock()
		p := b.procs[e.pid]
		b.mu.Unlock()
		s.stream(w, r, b, p, 0, true, RouteExec)
		return
	}
	for k, v := range e.header {
		if strings.EqualFold(k, "x-request-id") || strings.EqualFold(k, "content-length") {
			continue
		}
		w.Header()[k] = v
	}
	body := e.body
	var obj map[string]any
	if strings.HasPrefix(e.header.Get("Content-Type"), "application/json") && json.Unmarshal(body, &obj) == nil && obj != nil {
		if _, isErr := obj["error"]; !isErr {
			obj["replayed"] = true
			body, _ = json.Marshal(obj)
		}
	}
	w.WriteHeader(e.status)
	w.Write(body)
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *apiError) {
	st := state(r)
	st.rec.Code = e.code
	if e.retryAfter != "" {
		w.Header().Set("Retry-After", e.retryAfter)
	}
	writeJSON(w, e.status, envelope(e, st.reqID))
}

func (s *Server) writeLate(w http.ResponseWriter, r *http.Request, e *apiError) {
	st := state(r)
	st.rec.Code = e.code
	w.Header().Set("runtime-late-answer", "true")
	writeJSON(w, 200, envelope(e, st.reqID))
}

func envelope(e *apiError, reqID string) map[string]any {
	body := map[string]any{"code": e.code, "status": e.status, "message": e.message, "hint": e.hint, "requestId": reqID}
	if e.details != nil {
		body["details"] = e.details
	} else {
		body["details"] = map[string]any{}
	}
	if e.retryAfterMs > 0 {
		body["retryAfterMs"] = e.retryAfterMs
	}
	return map[string]any{"error": body}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// decode reads the request body into v, refusing unknown fields.
func decode(r *http.Request, v any) error {
	body := state(r).body
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		e := errf(400, "invalid_request", "invalid body: %v", err)
		e.details = map[string]any{"issues": []map[string]any{{"message": err.Error()}}}
		return e
	}
	return nil
}

// matchRoute maps a request to its route pattern and path parameters
// (id, pid, uid).
func matchRoute(method, p string) (string, map[string]string) {
	params := map[string]string{}
	switch {
	case method == "GET" && p == "/v1/me":
		return RouteMe, params
	case method == "GET" && p == "/v1/limits":
		return RouteLimits, params
	}
	rest, ok := strings.CutPrefix(p, "/v1/sandboxes")
	if !ok {
		return "", nil
	}
	if rest == "" || rest == "/" {
		switch method {
		case "POST":
			return RouteCreate, params
		case "GET":
			return RouteList, params
		}
		return "", nil
	}
	segs := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	head := segs[0]
	if id, verb, ok := strings.Cut(head, ":"); ok && len(segs) == 1 {
		params["id"] = id
		switch {
		case method == "POST" && verb == "exec":
			return RouteExec, params
		case method == "POST" && verb == "fork":
			return RouteFork, params
		}
		return "", nil
	}
	params["id"] = head
	tail := strings.Join(segs[1:], "/")
	route := ""
	switch {
	case len(segs) == 1 && method == "GET":
		route = RouteGet
	case len(segs) == 1 && method == "DELETE":
		route = RouteDelete
	case tail == "network" && method == "PUT":
		route = RouteNetwork
	case len(segs) == 4 && segs[1] == "processes" && segs[3] == "output" && method == "GET":
		params["pid"] = segs[2]
		route = RouteOutput
	case tail == "files/content" && method == "GET":
		route = RouteFileGet
	case tail == "files/content" && method == "PUT":
		route = RouteFilePut
	case tail == "uploads" && method == "POST":
		route = RouteUploadStart
	case len(segs) == 3 && segs[1] == "uploads":
		uid, verb, colon := strings.Cut(segs[2], ":")
		params["uid"] = uid
		switch {
		case !colon && method == "PUT":
			route = RouteUploadPart
		case colon && verb == "commit" && method == "POST":
			route = RouteUploadCommit
		}
	case tail == "files/archive" && method == "GET":
		route = RouteArchiveGet
	case tail == "files/archive" && method == "PUT":
		route = RouteArchivePut
	case tail == "files/archive/uploads" && method == "POST":
		route = RouteArchiveUploadStart
	case len(segs) == 4 && segs[1] == "files" && segs[2] == "archive" && segs[3] != "":
		// unreachable: files/archive/uploads/{uid} has 5 segments
	case len(segs) == 5 && segs[1] == "files" && segs[2] == "archive" && segs[3] == "uploads":
		uid, verb, colon := strings.Cut(segs[4], ":")
		params["uid"] = uid
		switch {
		case !colon && method == "PUT":
			route = RouteArchiveUploadPart
		case colon && verb == "commit" && method == "POST":
			route = RouteArchiveUpload
		}
	}
	if route == "" {
		return "", nil
	}
	return route, params
}

func (s *Server) box(id string) (*rsb, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.boxes[id]
	if b == nil {
		return nil, errf(404, "sandbox_not_found", "sandbox %s not found", id)
	}
	return b, nil
}

// localErr maps an error of the local backend to an API error.
func localErr(err error) error {
	switch {
	case errors.Is(err, local.ErrFrozen):
		return errf(409, "sandbox_frozen", "%v (the test server's local backend freezes a forked sandbox)", err)
	case errors.Is(err, sandbox.ErrStopped):
		return errf(404, "sandbox_not_found", "%v", err)
	case errors.Is(err, fs.ErrNotExist):
		return errf(404, "file_not_found", "%v", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errf(503, "busy", "%v", err)
	}
	return errf(400, "invalid_request", "%v", err)
}

func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, route string, params map[string]string) error {
	switch route {
	case RouteCreate:
		return s.create(w, r)
	case RouteList:
		return s.list(w, r)
	case RouteMe:
		// The docs give no shape for these two; the fields are this
		// double's own (runtime-api.md marks them unconfirmed).
		writeJSON(w, 200, map[string]any{"id": "usr_test", "org": map[string]any{"id": "org_test", "name": "runtimetest"}})
		return nil
	case RouteLimits:
		writeJSON(w, 200, map[string]any{"maxRunningSandboxes": 100, "maxForkCount": 10, "runningSandboxes": len(s.Sandboxes())})
		return nil
	}
	id := params["id"]
	if route == RouteDelete {
		return s.deleteBox(w, r, id)
	}
	b, err := s.box(id)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	switch route {
	case RouteGet:
		writeJSON(w, 200, s.info(b))
		return nil
	case RouteExec:
		return s.exec(w, r, b)
	case RouteFork:
		return s.fork(w, r, b)
	case RouteNetwork:
		var body struct {
			Internet *bool    `json:"internet"`
			Allow    []string `json:"allow"`
			Deny     []string `json:"deny"`
			Connect  []string `json:"connect"`
		}
		if err := decode(r, &body); err != nil {
			return err
		}
		b.mu.Lock()
		if body.Internet != nil {
			b.internet = *body.Internet
		}
		b.allow = body.Allow
		internet := b.internet
		b.mu.Unlock()
		writeJSON(w, 200, map[string]any{"internet": internet, "allow": nonNil(body.Allow), "deny": nonNil(body.Deny), "connect": nonNil(body.Connect)})
		return nil
	case RouteOutput:
		b.mu.Lock()
		p := b.procs[params["pid"]]
		b.mu.Unlock()
		if p == nil {
			return errf(404, "process_not_found", "process %s not found", params["pid"])
		}
		var cursor int64
		if c := q.Get("cursor"); c != "" {
			if _, err := fmt.Sscan(c, &cursor); err != nil || cursor < 0 {
				return errf(400, "invalid_request", "bad cursor %q", c)
			}
		}
		s.stream(w, r, b, p, cursor, false, RouteOutput)
		return nil
	case RouteFileGet:
		data, err := b.sb.ReadFile(r.Context(), q.Get("path"))
		if err != nil {
			return localErr(err)
		}
		sum := sha256.Sum256(data)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("x-content-length", fmt.Sprint(len(data)))
		w.Header().Set("x-content-sha256", hex.EncodeToString(sum[:]))
		w.WriteHeader(200)
		w.Write(data)
		return nil
	case RouteFilePut:
		mode, err := parseMode(q.Get("mode"))
		if err != nil {
			return err
		}
		if err := b.sb.WriteFile(r.Context(), q.Get("path"), state(r).body, mode); err != nil {
			return localErr(err)
		}
		writeJSON(w, 200, map[string]any{"path": q.Get("path"), "size": len(state(r).body)})
		return nil
	case RouteUploadStart, RouteArchiveUploadStart:
		return s.uploadStart(w, r, b, route == RouteArchiveUploadStart)
	case RouteUploadPart, RouteArchiveUploadPart:
		return s.uploadPart(w, r, b, params["uid"], route == RouteArchiveUploadPart)
	case RouteUploadCommit, RouteArchiveUpload:
		return s.uploadCommit(w, r, b, params["uid"], route == RouteArchiveUpload)
	case RouteArchiveGet:
		return s.archiveGet(w, r, b)
	case RouteArchivePut:
		if err := b.sb.PutArchive(r.Context(), q.Get("path"), bytes.NewReader(state(r).body)); err != nil {
			return localErr(err)
		}
		writeJSON(w, 200, map[string]any{"path": q.Get("path")})
		return nil
	}
	return errf(404, "not_found", "no route")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func parseMode(m string) (fs.FileMode, error) {
	if m == "" {
		return 0o644, nil
	}
	var v uint32
	if _, err := fmt.Sscanf(m, "%o", &v); err != nil || v > 0o7777 {
		return 0, errf(400, "invalid_request", "bad mode %q", m)
	}
	return fs.FileMode(v & 0o777), nil
}

// --- lifecycle ---

type createBody struct {
	Name               string            `json:"name"`
	Labels             map[string]string `json:"labels"`
	Env                map[string]string `json:"env"`
	Region             string            `json:"region"`
	VCPU               int               `json:"vcpu"`
	MemoryMiB          int               `json:"memoryMiB"`
	DiskMiB            int               `json:"diskMiB"`
	CPU                string            `json:"cpu"`
	CPUFloorMillis     int               `json:"cpuFloorMillis"`
	TimeoutSeconds     int               `json:"timeoutSeconds"`
	OnTimeout          string            `json:"onTimeout"`
	OnLeaseEnd         string            `json:"onLeaseEnd"`
	IdlePauseSeconds   *int              `json:"idlePauseSeconds"`
	AutoWake           *bool             `json:"autoWake"`
	Persistent         bool              `json:"persistent"`
	MaxTotalCostMicros int64             `json:"maxTotalCostMicros"`
	GetOrCreate        bool              `json:"getOrCreate"`
	Network            *struct {
		Internet *bool    `json:"internet"`
		Allow    []string `json:"allow"`
		Deny     []string `json:"deny"`
		Connect  []string `json:"connect"`
	} `json:"network"`
	Image    json.RawMessage `json:"image"`
	Snapshot string          `json:"snapshot"`
	Volumes  json.RawMessage `json:"volumes"`
	Funding  json.RawMessage `json:"funding"`
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) error {
	var body createBody
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.TimeoutSeconds != 0 && (body.TimeoutSeconds < 60 || body.TimeoutSeconds > 86400) {
		return errf(400, "invalid_request", "timeoutSeconds must be 0 or 60..86400")
	}
	switch body.OnTimeout {
	case "", "pause", "stop", "delete":
	default:
		return errf(400, "invalid_request", "onTimeout must be pause, stop or delete")
	}
	if len(body.Labels) > 32 {
		return errf(400, "invalid_request", "at most 32 labels")
	}
	if body.Snapshot != "" {
		return errf(404, "snapshot_not_found", "snapshots are not supported by the test server")
	}
	sb, err := s.local.Create(r.Context(), sandbox.CreateOptions{Labels: body.Labels})
	if err != nil {
		return errf(500, "internal_error", "%v", err)
	}
	b := &rsb{id: "sbx-" + sb.ID(), name: body.Name, sb: sb, labels: copyLabels(body.Labels), created: time.Now().UTC(),
		vcpu: or(body.VCPU, 2), mem: or(body.MemoryMiB, 4096), disk: or(body.DiskMiB, 4096), timeout: body.TimeoutSeconds,
		internet: true, procs: map[string]*process{}}
	if body.Network != nil && body.Network.Internet != nil {
		b.internet = *body.Network.Internet
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	s.mu.Lock()
	s.boxes[b.id] = b
	s.mu.Unlock()
	writeJSON(w, 200, s.info(b))
	return nil
}

func or(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func copyLabels(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (s *Server) info(b *rsb) map[string]any {
	info := map[string]any{"id": b.id, "kind": "sandbox", "name": b.name, "labels": b.labels, "state": "running",
		"status": "active", "vcpu": b.vcpu, "memoryMiB": b.mem, "diskMiB": b.disk,
		"createdAt": b.created.Format("2006-01-02T15:04:05.000Z07:00"), "heldMicros": 0}
	if b.timeout > 0 {
		info["endsAt"] = b.created.Add(time.Duration(b.timeout) * time.Second).Format(time.RFC3339)
	}
	if u, err := b.sb.Usage(context.Background()); err == nil {
		// Documented prices: ~6.94 µ$ per vCPU-second, ~2.08 µ$ per GiB-second.
		charged := u.CPUSeconds*6.94 + float64(b.mem)/1024*2.08*u.Wall.Seconds()
		info["chargedMicros"] = int64(charged)
	}
	return info
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	want := map[string]string{}
	for _, l := range q["label"] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return errf(400, "invalid_request", "label must be k:v")
		}
		want[k] = v
	}
	s.mu.Lock()
	var all []*rsb
	for _, b := range s.boxes {
		all = append(all, b)
	}
	s.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	data := []map[string]any{}
outer:
	for _, b := range all {
		for k, v := range want {
			if b.labels[k] != v {
				continue outer
			}
		}
		data = append(data, s.info(b))
	}
	writeJSON(w, 200, map[string]any{"data": data, "nextCursor": nil})
	return nil
}

func (s *Server) deleteBox(w http.ResponseWriter, r *http.Request, id string) error {
	s.mu.Lock()
	b := s.boxes[id]
	delete(s.boxes, id)
	known := b != nil || s.deleted[id]
	s.deleted[id] = true
	s.mu.Unlock()
	if !known {
		return errf(404, "sandbox_not_found", "sandbox %s not found", id)
	}
	if b != nil {
		b.cancel()
		if err := b.sb.Stop(context.Background()); err != nil {
			return errf(500, "internal_error", "%v", err)
		}
	}
	writeJSON(w, 200, map[string]any{"id": id, "status": "deleted", "deletedAt": time.Now().UTC().Format(time.RFC3339)})
	return nil
}

// --- fork ---

func (s *Server) fork(w http.ResponseWriter, r *http.Request, b *rsb) error {
	var body struct {
		Count        *int              `json:"count"`
		Name         string            `json:"name"`
		Labels       map[string]string `json:"labels"`
		KeepSnapshot bool              `json:"keepSnapshot"`
		Funding      json.RawMessage   `json:"funding"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	n := 1
	if body.Count != nil {
		n = *body.Count
	}
	if n < 1 || n > 10 {
		e := errf(400, "invalid_request", "count must be 1..10")
		e.details = map[string]any{"field": "count"}
		return e
	}
	f := s.takeFault(RouteFork, func(f Fault) bool { return f.ForkFailAt > 0 })
	if f != nil {
		state(r).faulted = true
	}
	labels := b.labels
	if body.Labels != nil {
		labels = body.Labels
	}
	b.mu.Lock()
	internet := b.internet
	b.mu.Unlock()
	var infos []map[string]any
	started := []string{}
	for i := 1; i <= n; i++ {
		var kid sandbox.Sandbox
		var err error
		if f != nil && f.ForkFailAt == i {
			st, code := f.Status, f.Code
			if st == 0 {
				st, code = 409, "no_capacity"
			}
			err = errf(st, code, "injected failure of copy %d", i)
		} else {
			var kids []sandbox.Sandbox
			kids, err = b.sb.Fork(r.Context(), 1)
			for _, k := range kids {
				kid = k
			}
			if err != nil && kid != nil {
				_ = kid.Stop(context.Background())
				kid = nil
			}
			if err != nil {
				err = localErr(err)
			}
		}
		if err != nil {
			var ae *apiError
			errors.As(err, &ae)
			ae.details = map[string]any{"startedSandboxIds": started}
			return ae
		}
		name := body.Name
		if name == "" {
			name = b.name
		}
		if name != "" && i > 1 {
			name = fmt.Sprintf("%s-%d", name, i-1)
		}
		nb := &rsb{id: "sbx-" + kid.ID(), name: name, sb: kid, labels: copyLabels(labels), created: time.Now().UTC(),
			vcpu: b.vcpu, mem: b.mem, disk: b.disk, timeout: b.timeout, internet: internet, procs: map[string]*process{}}
		nb.ctx, nb.cancel = context.WithCancel(context.Background())
		s.mu.Lock()
		s.boxes[nb.id] = nb
		s.mu.Unlock()
		started = append(started, nb.id)
		infos = append(infos, s.info(nb))
	}
	writeJSON(w, 200, map[string]any{"sandboxes": infos})
	return nil
}

// --- exec ---

type execBody struct {
	Argv        []string          `json:"argv"`
	Command     *string           `json:"command"`
	Cwd         string            `json:"cwd"`
	Env         map[string]string `json:"env"`
	Stdin       *string           `json:"stdin"`
	StdinBase64 *string           `json:"stdinBase64"`
	TimeoutMs   *int64            `json:"timeoutMs"`
	Stream      bool              `json:"stream"`
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request, b *rsb) error {
	var body execBody
	if err := decode(r, &body); err != nil {
		return err
	}
	req := sandbox.ExecRequest{Argv: body.Argv, Dir: body.Cwd, Env: body.Env}
	if body.Command != nil {
		req.Shell = *body.Command
	}
	if (len(req.Argv) > 0) == (body.Command != nil) {
		return errf(400, "invalid_request", "give exactly one of argv and command")
	}
	if body.Stdin != nil && body.StdinBase64 != nil {
		return errf(400, "invalid_request", "give at most one of stdin and stdinBase64")
	}
	if body.Stdin != nil {
		req.Stdin = []byte(*body.Stdin)
	}
	if body.StdinBase64 != nil {
		var err error
		if req.Stdin, err = decodeB64(*body.StdinBase64); err != nil {
			return errf(400, "invalid_request", "stdinBase64: %v", err)
		}
	}
	timeout := int64(60000)
	if body.TimeoutMs != nil {
		timeout = *body.TimeoutMs
	}
	if timeout < 1 || timeout > 24*3600*1000 {
		return errf(400, "invalid_request", "timeoutMs must be 1..86400000")
	}
	req.Timeout = time.Duration(timeout) * time.Millisecond
	b.mu.Lock()
	req.Network = b.internet
	b.mu.Unlock()
	if !body.Stream {
		req.OutputLimit = 64 << 10
		if timeout > 60000 {
			req.OutputLimit = 1 << 20
		}
		res, err := b.sb.Exec(r.Context(), req)
		if err != nil {
			return localErr(err)
		}
		writeJSON(w, 200, resultJSON(res))
		return nil
	}
	req.OutputLimit = 64 << 20
	p := &process{id: s.newID("proc_"), done: make(chan struct{})}
	b.mu.Lock()
	b.procs[p.id] = p
	b.mu.Unlock()
	if e := state(r).entry; e != nil {
		e.pid, e.sbID = p.id, b.id
	}
	go func() {
		res, err := b.sb.Exec(b.ctx, req)
		p.res, p.err = res, err
		var off int64
		for _, c := range []struct {
			name string
			data []byte
		}{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
			for d := c.data; len(d) > 0; {
				n := min(len(d), 32<<10)
				p.chunks = append(p.chunks, chunk{stream: c.name, offset: off, data: d[:n]})
				off += int64(n)
				d = d[n:]
			}
		}
		p.total = off
		close(p.done)
	}()
	s.stream(w, r, b, p, 0, true, RouteExec)
	return nil
}

func resultJSON(res sandbox.ExecResult) map[string]any {
	var code any = res.ExitCode
	if res.ExitCode < 0 {
		code = nil
	}
	return map[string]any{"exitCode": code, "stdout": string(res.Stdout), "stderr": string(res.Stderr),
		"timedOut": res.TimedOut, "stdoutTruncated": res.StdoutTruncated, "stderrTruncated": res.StderrTruncated,
		"durationMs": res.Duration.Milliseconds()}
}

// stream writes NDJSON lines for p from cursor: start (when start is set),
// output, then exit, or continue after ContinueBytes.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, b *rsb, p *process, cursor int64, start bool, route string) {
	fault := s.takeFault(route, func(f Fault) bool { return f.DropAfterBytes > 0 })
	if fault != nil {
		state(r).faulted = true
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(200)
	fl, _ := w.(http.Flusher)
	line := func(v any) {
		bs, _ := json.Marshal(v)
		w.Write(append(bs, '\n'))
		if fl != nil {
			fl.Flush()
		}
	}
	if start {
		line(map[string]any{"type": "start", "processId": p.id})
	}
	select {
	case <-p.done:
	case <-r.Context().Done():
		return
	}
	if p.err != nil {
		var ae *apiError
		if !errors.As(localErr(p.err), &ae) {
			ae = errf(500, "internal_error", "%v", p.err)
		}
		line(map[string]any{"type": "error", "error": map[string]any{"code": ae.code, "status": ae.status, "message": ae.message, "requestId": state(r).reqID}})
		return
	}
	if p.res.StdoutTruncated || p.res.StderrTruncated {
		if cursor == 0 {
			line(map[string]any{"type": "truncated", "droppedBytes": 0, "resumeAt": 0})
		}
	}
	sent := 0
	for _, c := range p.chunks {
		end := c.offset + int64(len(c.data))
		if end <= cursor {
			continue
		}
		data := c.data
		off := c.offset
		if off < cursor {
			data = data[cursor-off:]
			off = cursor
		}
		if sent >= s.opts.ContinueBytes {
			line(map[string]any{"type": "continue", "processId": p.id, "cursor": off})
			return
		}
		ev := map[string]any{"type": c.stream, "offset": off}
		if isText(data) {
			ev["data"] = string(data)
		} else {
			ev["data"] = encodeB64(data)
			ev["base64"] = true
		}
		line(ev)
		sent += len(data)
		if fault != nil && sent >= fault.DropAfterBytes {
			panic(http.ErrAbortHandler)
		}
	}
	if fault != nil {
		panic(http.ErrAbortHandler)
	}
	var code any = p.res.ExitCode
	st := "exited"
	if p.res.ExitCode < 0 {
		code, st = nil, "killed"
	}
	if p.res.TimedOut {
		st = "timed_out"
	}
	line(map[string]any{"type": "exit", "exitCode": code, "state": st, "timedOut": p.res.TimedOut, "durationMs": p.res.Duration.Milliseconds()})
}

// --- uploads ---

func (s *Server) uploadStart(w http.ResponseWriter, r *http.Request, b *rsb, archive bool) error {
	u := &upload{sbID: b.id, archive: archive}
	if archive {
		var body struct {
			Path string `json:"path"`
			Gzip bool   `json:"gzip"`
			User string `json:"user"`
		}
		if err := decode(r, &body); err != nil {
			return err
		}
		u.path = body.Path
	} else {
		var body struct {
			Path   string `json:"path"`
			Size   int64  `json:"size"`
			SHA256 string `json:"sha256"`
			Mode   string `json:"mode"`
		}
		if err := decode(r, &body); err != nil {
			return err
		}
		if body.Path != sandbox.Workspace && !strings.HasPrefix(body.Path, sandbox.Workspace+"/") {
			return errf(400, "invalid_path", "uploads must go under /workspace")
		}
		mode, err := parseMode(body.Mode)
		if err != nil {
			return err
		}
		if body.Size < 0 || len(body.SHA256) != 64 {
			return errf(400, "invalid_request", "size and sha256 are required")
		}
		u.path, u.size, u.sha, u.mode = body.Path, body.Size, strings.ToLower(body.SHA256), mode
	}
	if !strings.HasPrefix(u.path, "/") {
		return errf(400, "invalid_path", "path must be absolute")
	}
	f, err := os.CreateTemp(s.dir, "up-")
	if err != nil {
		return errf(500, "internal_error", "%v", err)
	}
	u.file = f
	uid := s.newID("upl_")
	s.mu.Lock()
	s.uploads[uid] = u
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"uploadId": uid, "chunkBytes": s.opts.ChunkBytes})
	return nil
}

func (s *Server) getUpload(b *rsb, uid string, archive bool) (*upload, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.uploads[uid]
	if u == nil || u.sbID != b.id || u.archive != archive {
		return nil, errf(404, "upload_not_found", "upload %s not found", uid)
	}
	return u, nil
}

func (s *Server) uploadPart(w http.ResponseWriter, r *http.Request, b *rsb, uid string, archive bool) error {
	u, err := s.getUpload(b, uid, archive)
	if err != nil {
		return err
	}
	var off int64
	if _, err := fmt.Sscan(r.URL.Query().Get("offset"), &off); err != nil || off < 0 {
		return errf(400, "invalid_request", "bad offset")
	}
	data := state(r).body
	s.mu.Lock()
	defer s.mu.Unlock()
	if archive && off != u.written {
		return errf(409, "upload_offset_mismatch", "parts must come in order: expected offset %d, got %d", u.written, off)
	}
	if !archive && off+int64(len(data)) > u.size {
		return errf(400, "invalid_request", "chunk beyond the declared size")
	}
	if _, err := u.file.WriteAt(data, off); err != nil {
		return errf(500, "internal_error", "%v", err)
	}
	if archive {
		u.written += int64(len(data))
	} else {
		u.written = max(u.written, off+int64(len(data)))
	}
	writeJSON(w, 200, map[string]any{"uploadId": uid, "offset": off, "size": len(data)})
	return nil
}

func (s *Server) uploadCommit(w http.ResponseWriter, r *http.Request, b *rsb, uid string, archive bool) error {
	u, err := s.getUpload(b, uid, archive)
	if err != nil {
		return err
	}
	if err := decode(r, &struct{}{}); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.uploads, uid)
	s.mu.Unlock()
	defer os.Remove(u.file.Name())
	defer u.file.Close()
	if _, err := u.file.Seek(0, io.SeekStart); err != nil {
		return errf(500, "internal_error", "%v", err)
	}
	if archive {
		if err := b.sb.PutArchive(r.Context(), u.path, u.file); err != nil {
			return localErr(err)
		}
		writeJSON(w, 200, map[string]any{"path": u.path, "size": u.written})
		return nil
	}
	data, err := io.ReadAll(u.file)
	if err != nil {
		return errf(500, "internal_error", "%v", err)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != u.size || hex.EncodeToString(sum[:]) != u.sha {
		return errf(400, "upload_incomplete", "got %d bytes with a different sha256 than declared", len(data))
	}
	if err := b.sb.WriteFile(r.Context(), u.path, data, u.mode); err != nil {
		return localErr(err)
	}
	writeJSON(w, 200, map[string]any{"path": u.path, "size": u.size})
	return nil
}

func (s *Server) archiveGet(w http.ResponseWriter, r *http.Request, b *rsb) error {
	q := r.URL.Query()
	rc, err := b.sb.GetArchive(r.Context(), q.Get("path"))
	if err != nil {
		return localErr(err)
	}
	defer rc.Close()
	gz := q.Get("gzip") == "true" || s.opts.GzipArchives
	if gz {
		w.Header().Set("Content-Type", "application/gzip")
		w.WriteHeader(200)
		zw := newGzip(w)
		_, _ = io.Copy(zw, rc)
		_ = zw.Close()
		return nil
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(200)
	_, _ = io.Copy(w, rc)
	return nil
}
