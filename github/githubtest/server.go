// Package githubtest is an in-process GitHub double for tests and for the
// demo command: a GitHub App (its key, JWT-checked installation tokens), bare
// git repositories served over smart HTTP, and the REST endpoints the bot
// uses, answering in GitHub's shapes (built from real response bodies) and
// applying the Git Data API for real with git.
//
// Requests go to URL (the double also accepts the "/api/v3/" prefix that
// go-github's WithEnterpriseURLs adds to a non-api.github.com host), clones to
// CloneURL. Every request is recorded (Requests); a route the double does not
// know answers GitHub's 404 and is recorded with an empty Route, so a test can
// assert no unexpected calls.
package githubtest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
)

// DefaultAppID is the App id the double uses.
const DefaultAppID = 424242

// Server is a running GitHub double. Its methods are safe for concurrent use.
type Server struct {
	// URL is the REST API base, "http://127.0.0.1:<port>/", with its trailing
	// "/"; the same endpoints are also served under URL+"api/v3/".
	URL string
	// AppID is the App's id; JWTs must carry it as iss.
	AppID int64
	// AppSlug is the App's slug ("bestofn").
	AppSlug string
	// BotLogin is the App's bot user ("bestofn[bot]"), the author of comments,
	// pull requests and commits made with installation tokens.
	BotLogin string
	// PrivateKeyPEM is the App's RSA private key (PKCS#1 PEM), as
	// Config.PrivateKey wants it.
	PrivateKeyPEM []byte

	key      *rsa.PrivateKey
	srv      *httptest.Server
	host     string // "127.0.0.1:port"
	apiBase  string // URL + "api/v3/", used in the URLs inside bodies
	htmlBase string // URL
	root     string // temp dir: repos/<owner>/<name>.git, tmp/
	handler  http.Handler

	mu               sync.Mutex
	repos            map[string]*repo
	installs         map[int64]*installation
	tokens           map[string]*token
	tokenList        []string
	perms            map[string]map[string]string
	requests         []Request
	reactions        []Reaction
	failures         []failure
	users            map[string]int64
	verified         map[string]bool // commit sha → created by the App with no author/committer
	draftUnsupported map[string]bool
	workflows        bool
	ids              int64
}

type installation struct {
	id        int64
	repos     []string
	suspended bool
}

type token struct {
	installation int64
	expires      time.Time
	repos        []string // nil: every repository of the installation
}

// Request is one request the double answered.
type Request struct {
	Method string
	// Path is the URL path without query, with any "/api/v3" prefix removed,
	// e.g. "/repos/o/r/pulls" or "/o/r.git/info/refs" (git smart HTTP).
	Path string
	// Route is the matched pattern, e.g. "/repos/{owner}/{repo}/pulls";
	// "git" for smart HTTP; empty when no route matched (GitHub's 404).
	Route  string
	Status int
	// Installation is the installation whose token authenticated the request;
	// 0 for JWT or anonymous requests.
	Installation int64
}

// Comment is an issue or pull request comment as the double holds it.
type Comment struct {
	ID       int64
	Issue    int
	User     string
	UserType string // "User" or "Bot"
	Body     string
	// Edits counts PATCHes of the comment.
	Edits   int
	HTMLURL string
}

// Pull is a pull request as the double holds it.
type Pull struct {
	Number      int
	Title, Body string
	Head, Base  string // branch names
	Draft       bool
	State       string // "open" or "closed"
	User        string
	HeadSHA     string // resolved from the bare repository's branch now
	HTMLURL     string
	Edits       int
}

// Reaction is a reaction the double recorded.
type Reaction struct {
	Repo      string
	Issue     int   // set for a reaction on an issue or pull request
	CommentID int64 // set for a reaction on a comment
	Content   string
	User      string
}

type failure struct {
	method, path string
	status       int
	body         []byte
}

type repo struct {
	mu            sync.Mutex // serialises changes to the bare repository
	owner, name   string
	id            int64
	dir           string
	defaultBranch string
	private       bool
	created       time.Time
	issues        map[int]*issue
	comments      []*comment
	reviews       []*reviewComment
	pulls         map[int]*pull
	next          int // next issue/pull number
}

func (r *repo) full() string { return r.owner + "/" + r.name }

type issue struct {
	number      int
	title, body string
	user        string
	state       string
	created     time.Time
}

type comment struct {
	id      int64
	issue   int
	user    string
	body    string
	edits   int
	created time.Time
	updated time.Time
}

type pull struct {
	id          int64
	number      int
	title, body string
	head, base  string
	draft       bool
	state       string
	user        string
	edits       int
	created     time.Time
	updated     time.Time
	closed      *time.Time
}

// New starts a double on 127.0.0.1 with a fresh 2048-bit App key. Close it.
func New() (*Server, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("githubtest: git not found: %w", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("githubtest: generate app key: %w", err)
	}
	root, err := os.MkdirTemp("", "githubtest-")
	if err != nil {
		return nil, fmt.Errorf("githubtest: %w", err)
	}
	for _, d := range []string{"repos", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			os.RemoveAll(root)
			return nil, fmt.Errorf("githubtest: %w", err)
		}
	}
	s := &Server{
		AppID:            DefaultAppID,
		AppSlug:          "bestofn",
		BotLogin:         "bestofn[bot]",
		PrivateKeyPEM:    pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		key:              key,
		root:             root,
		repos:            map[string]*repo{},
		installs:         map[int64]*installation{},
		tokens:           map[string]*token{},
		perms:            map[string]map[string]string{},
		users:            map[string]int64{},
		verified:         map[string]bool{},
		draftUnsupported: map[string]bool{},
		ids:              1000,
	}
	s.handler = s.routes()
	// Everything the handlers read is set before the server starts.
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serveHTTP))
	s.host = s.srv.Listener.Addr().String()
	s.URL = "http://" + s.host + "/"
	s.apiBase = s.URL + "api/v3/"
	s.htmlBase = s.URL
	s.srv.Start()
	return s, nil
}

// Close stops the server and removes its repositories.
func (s *Server) Close() {
	s.srv.Close()
	os.RemoveAll(s.root)
}

// nextID returns a fresh id for comments, pull requests, reactions, users.
func (s *Server) nextID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return s.ids
}

// userID returns the stable id of login.
func (s *Server) userID(login string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.users[login]; ok {
		return id
	}
	s.ids++
	s.users[login] = s.ids
	return s.ids
}

// AddInstallation installs the App on repos ("owner/name"), replacing the
// installation's list if it exists. Tokens minted for it work for those
// repositories only (REST and git), including tokens minted earlier.
func (s *Server) AddInstallation(id int64, repos ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.installs[id] = &installation{id: id, repos: slices.Clone(repos)}
}

// SuspendInstallation makes token requests for installation id answer 403
// "This installation has been suspended", like GitHub.
func (s *Server) SuspendInstallation(id int64, suspended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in, ok := s.installs[id]; ok {
		in.suspended = suspended
	}
}

// SetPermission sets login's role on repo: "admin", "maintain", "write",
// "triage", "read" or "none". A user never set has "read" (GitHub's answer for
// a public repository).
func (s *Server) SetPermission(repo, login, permission string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perms[repo] == nil {
		s.perms[repo] = map[string]string{}
	}
	s.perms[repo][login] = permission
}

// SetDraftUnsupported makes creating a draft pull request on repo fail with
// 422 "Draft pull requests are not supported in this repository.".
func (s *Server) SetDraftUnsupported(repo string, unsupported bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draftUnsupported[repo] = unsupported
}

// SetWorkflowsPermission grants the App the Workflows permission; without it
// (the default) a tree touching .github/workflows/ gets GitHub's 403.
func (s *Server) SetWorkflowsPermission(granted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workflows = granted
}

// FailNext makes the next request with method and path (as in Request.Path,
// e.g. "/repos/o/r/pulls") answer status with body (JSON) instead; the failure
// is used once. Use it to inject rate limits or server errors.
func (s *Server) FailNext(method, path string, status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, failure{method: method, path: path, status: status, body: []byte(body)})
}

// Fixture returns a copy of the named real GitHub body the double is built
// from (e.g. "secondary-rate-limit-403.json"), for use with FailNext.
func Fixture(name string) string { return string(fixtureBytes(name)) }

// CloneURL returns the smart-HTTP URL of repo, "http://127.0.0.1:port/owner/name.git".
func (s *Server) CloneURL(repo string) string { return s.htmlBase + repo + ".git" }

// GitDir returns the path of repo's bare repository ("" when unknown).
func (s *Server) GitDir(repo string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, ok := s.repos[repo]; ok {
		return rp.dir
	}
	return ""
}

// Comments returns the comments on repo's issue or pull request number, oldest first.
func (s *Server) Comments(repo string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repos[repo]
	if !ok {
		return nil
	}
	var out []Comment
	for _, c := range rp.comments {
		if c.issue == number {
			out = append(out, s.exportComment(rp, c))
		}
	}
	return out
}

func (s *Server) exportComment(rp *repo, c *comment) Comment {
	typ := "User"
	if strings.HasSuffix(c.user, "[bot]") {
		typ = "Bot"
	}
	return Comment{ID: c.id, Issue: c.issue, User: c.user, UserType: typ, Body: c.body, Edits: c.edits, HTMLURL: s.commentHTMLURL(rp, c)}
}

// Pulls returns repo's pull requests by number.
func (s *Server) Pulls(repo string) []Pull {
	s.mu.Lock()
	rp, ok := s.repos[repo]
	var ps []pull
	if ok {
		for _, p := range rp.pulls {
			ps = append(ps, *p)
		}
	}
	s.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool { return ps[i].number < ps[j].number })
	out := make([]Pull, 0, len(ps))
	for _, p := range ps {
		sha, _ := s.resolve(rp, "refs/heads/"+p.head)
		out = append(out, Pull{
			Number: p.number, Title: p.title, Body: p.body, Head: p.head, Base: p.base,
			Draft: p.draft, State: p.state, User: p.user, HeadSHA: sha, Edits: p.edits,
			HTMLURL: s.htmlBase + repo + "/pull/" + fmt.Sprint(p.number),
		})
	}
	return out
}

// Reactions returns every reaction recorded, in order.
func (s *Server) Reactions() []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reactions)
}

// Requests returns every request answered so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Tokens returns every installation token minted, in order.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokenList)
}

// Branch returns the commit repo's branch points at.
func (s *Server) Branch(repo, branch string) (sha string, ok bool) {
	s.mu.Lock()
	rp := s.repos[repo]
	s.mu.Unlock()
	if rp == nil {
		return "", false
	}
	return s.resolve(rp, "refs/heads/"+branch)
}

// Verified reports whether commit sha was created through the API by the App
// with no author or committer given (GitHub signs those: "verified").
func (s *Server) Verified(sha string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.verified[sha]
}

// AddIssue creates (or retitles) issue number on repo. Numbers are shared
// with pull requests, which get the next free number. Comments may also be
// posted on a number never added: the issue then springs into being.
func (s *Server) AddIssue(repo string, number int, title, body string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repos[repo]
	if !ok {
		return fmt.Errorf("githubtest: unknown repo %s", repo)
	}
	if _, ok := rp.pulls[number]; ok {
		return fmt.Errorf("githubtest: %s#%d is a pull request", repo, number)
	}
	is := rp.issues[number]
	if is == nil {
		is = &issue{number: number, user: rp.owner, state: "open", created: time.Now()}
		rp.issues[number] = is
	}
	is.title, is.body = title, body
	if number >= rp.next {
		rp.next = number + 1
	}
	return nil
}

// AddReviewComment adds a review comment by login on a line of pull request
// pr (the pull request review comments API) and returns its id.
func (s *Server) AddReviewComment(repo string, pr int, login, path string, line int, body string) (int64, error) {
	id := s.nextID()
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repos[repo]
	if !ok {
		return 0, fmt.Errorf("githubtest: no repository %s", repo)
	}
	rp.reviews = append(rp.reviews, &reviewComment{id: id, pr: pr, user: login, path: path, line: line, body: body, created: time.Now().UTC()})
	return id, nil
}

// AddComment adds a comment by login (a person unless it ends in "[bot]") on
// repo's issue or pull request number and returns its id.
func (s *Server) AddComment(repo string, number int, login, body string) (int64, error) {
	id := s.nextID()
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repos[repo]
	if !ok {
		return 0, fmt.Errorf("githubtest: unknown repo %s", repo)
	}
	s.ensureIssueLocked(rp, number)
	now := time.Now()
	rp.comments = append(rp.comments, &comment{id: id, issue: number, user: login, body: body, created: now, updated: now})
	return id, nil
}

// ensureIssueLocked makes number exist as an issue unless it is a pull request.
func (s *Server) ensureIssueLocked(rp *repo, number int) {
	if _, ok := rp.pulls[number]; ok {
		return
	}
	if _, ok := rp.issues[number]; !ok {
		rp.issues[number] = &issue{number: number, user: rp.owner, state: "open", created: time.Now()}
		if number >= rp.next {
			rp.next = number + 1
		}
	}
}

// --- HTTP plumbing ---

type ctxKey int

const (
	infoKey ctxKey = iota
	repoKey
)

// reqInfo travels in the request context so the recorder learns what the
// handlers found out.
type reqInfo struct {
	origPath     string
	route        string
	installation int64
}

func info(r *http.Request) *reqInfo { return r.Context().Value(infoKey).(*reqInfo) }

func repoOf(r *http.Request) *repo { return r.Context().Value(repoKey).(*repo) }

// statusWriter records the request the moment its status is written, so
// that a client which has its answer always finds it in Requests.
type statusWriter struct {
	http.ResponseWriter
	status int
	record func(status int)
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.record(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	in := &reqInfo{origPath: r.URL.Path}
	r = r.WithContext(context.WithValue(r.Context(), infoKey, in))
	path := r.URL.Path
	if p, ok := strings.CutPrefix(path, "/api/v3"); ok && (p == "" || strings.HasPrefix(p, "/")) {
		if p == "" {
			p = "/"
		}
		path = p
		r.URL.Path = p
		r.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, "/api/v3")
	}
	w.Header().Set("X-GitHub-Request-Id", fmt.Sprintf("DOUBLE:%X", time.Now().UnixNano()))
	sw := &statusWriter{ResponseWriter: w, record: func(status int) {
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: path, Route: in.route, Status: status, Installation: in.installation})
		s.mu.Unlock()
	}}

	if f, ok := s.takeFailure(r.Method, path); ok {
		in.route = "(injected)"
		writeBody(sw, f.status, f.body)
	} else if gitPath(path) {
		in.route = "git"
		s.serveGit(sw, r)
	} else {
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Remaining", "4999")
		w.Header().Set("X-RateLimit-Reset", fmt.Sprint(time.Now().Add(time.Hour).Unix()))
		w.Header().Set("X-RateLimit-Resource", "core")
		s.handler.ServeHTTP(sw, r)
	}
	if sw.status == 0 {
		sw.WriteHeader(http.StatusOK)
	}
}

func (s *Server) takeFailure(method, path string) (failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.failures {
		if f.method == method && f.path == path {
			s.failures = slices.Delete(s.failures, i, i+1)
			return f, true
		}
	}
	return failure{}, false
}

func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	nf := func(w http.ResponseWriter, r *http.Request) { notFound(w, "https://docs.github.com/rest") }
	r.NotFound(nf)
	r.MethodNotAllowed(nf)

	r.Group(func(r chi.Router) {
		r.Use(tagRoute, s.appAuth)
		r.Get("/app", s.getApp)
		r.Post("/app/installations/{id}/access_tokens", s.createToken)
		r.Get("/repos/{owner}/{repo}/installation", s.getRepoInstallation)
	})
	r.Group(func(r chi.Router) {
		r.Use(tagRoute, s.repoAuth)
		r.Get("/repos/{owner}/{repo}", s.getRepo)
		r.Get("/repos/{owner}/{repo}/contents", s.getContents)
		r.Get("/repos/{owner}/{repo}/contents/*", s.getContents)

		r.Post("/repos/{owner}/{repo}/git/blobs", s.createBlob)
		r.Get("/repos/{owner}/{repo}/git/blobs/{sha}", s.getBlob)
		r.Post("/repos/{owner}/{repo}/git/trees", s.createTree)
		r.Get("/repos/{owner}/{repo}/git/commits/{sha}", s.getCommit)
		r.Post("/repos/{owner}/{repo}/git/commits", s.createCommit)
		r.Post("/repos/{owner}/{repo}/git/refs", s.createRef)
		r.Get("/repos/{owner}/{repo}/git/ref/*", s.getRef)
		r.Get("/repos/{owner}/{repo}/git/refs/*", s.getRef)
		r.Patch("/repos/{owner}/{repo}/git/refs/*", s.updateRef)
		r.Delete("/repos/{owner}/{repo}/git/refs/*", s.deleteRef)

		r.Get("/repos/{owner}/{repo}/issues/{number}", s.getIssue)
		r.Get("/repos/{owner}/{repo}/issues/{number}/comments", s.listComments)
		r.Post("/repos/{owner}/{repo}/issues/{number}/comments", s.createComment)
		r.Get("/repos/{owner}/{repo}/issues/comments/{id}", s.getComment)
		r.Patch("/repos/{owner}/{repo}/issues/comments/{id}", s.editComment)
		r.Post("/repos/{owner}/{repo}/issues/comments/{id}/reactions", s.createCommentReaction)
		r.Post("/repos/{owner}/{repo}/issues/{number}/reactions", s.createIssueReaction)
		r.Get("/repos/{owner}/{repo}/collaborators/{user}/permission", s.getPermission)

		r.Get("/repos/{owner}/{repo}/pulls", s.listPulls)
		r.Post("/repos/{owner}/{repo}/pulls", s.createPull)
		r.Get("/repos/{owner}/{repo}/pulls/{number}", s.getPull)
		r.Get("/repos/{owner}/{repo}/pulls/{number}/comments", s.listReviewComments)
		r.Patch("/repos/{owner}/{repo}/pulls/{number}", s.updatePull)
	})
	return r
}

// tagRoute notes the matched pattern for Requests; as a group middleware it
// runs after routing and before authentication.
func tagRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info(r).route = chi.RouteContext(r.Context()).RoutePattern()
		next.ServeHTTP(w, r)
	})
}

// wildcard returns chi's "*" parameter, unescaped.
func wildcard(r *http.Request) string {
	p := chi.URLParam(r, "*")
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	return p
}

// decodeBody decodes a JSON request body into v; on failure it answers 400
// "Problems parsing JSON" like GitHub and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, 100<<20))
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON", "https://docs.github.com/rest")
		return false
	}
	return true
}

// randomToken returns "ghs_" and 36 random alphanumerics (the 40-character format).
func randomToken() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 36)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			panic(err)
		}
		b[i] = alphabet[n.Int64()]
	}
	return "ghs_" + string(b)
}
