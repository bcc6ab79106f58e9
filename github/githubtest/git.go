package githubtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
)

// gitEnv isolates the double's git processes from the user's configuration.
var gitEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_TERMINAL_PROMPT=0",
	"LC_ALL=C",
}

// git runs git with GIT_DIR=dir (unless dir is empty) plus env, feeding
// stdin, and returns stdout; the error carries stderr.
func (s *Server) git(dir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Env = append(append(environ(), gitEnv...), env...)
	if dir != "" {
		cmd.Env = append(cmd.Env, "GIT_DIR="+dir)
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// environ is the process environment without variables that would point
// git somewhere else.
func environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// gitLine is git returning its output trimmed.
func (s *Server) gitLine(dir string, env []string, stdin []byte, args ...string) (string, error) {
	out, err := s.git(dir, env, stdin, args...)
	return strings.TrimSpace(string(out)), err
}

// objectType returns the type of object sha ("blob", "tree", "commit", "tag") or "".
func (s *Server) objectType(rp *repo, sha string) string {
	if !isSHA(sha) {
		return ""
	}
	t, err := s.gitLine(rp.dir, nil, nil, "cat-file", "-t", sha)
	if err != nil {
		return ""
	}
	return t
}

// resolve returns the commit a ref or sha names in rp.
func (s *Server) resolve(rp *repo, ref string) (string, bool) {
	if rp == nil || ref == "" || strings.HasPrefix(ref, "-") {
		return "", false
	}
	sha, err := s.gitLine(rp.dir, nil, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil || sha == "" {
		return "", false
	}
	return sha, true
}

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

func isSHA(s string) bool { return shaRE.MatchString(s) }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// tmpIndex returns a fresh path for a temporary index file.
var tmpCounter atomic.Int64

func (s *Server) tmpPath(prefix string) string {
	return filepath.Join(s.root, "tmp", fmt.Sprintf("%s-%d", prefix, tmpCounter.Add(1)))
}

// AddRepo creates owner/name as a bare repository holding one commit of the
// files under srcDir (honouring its .gitignore) on defaultBranch ("main"
// when empty), serves it, and returns the commit's sha.
func (s *Server) AddRepo(owner, name, srcDir, defaultBranch string) (string, error) {
	if !nameRE.MatchString(owner) || !nameRE.MatchString(name) || strings.HasSuffix(name, ".git") {
		return "", fmt.Errorf("githubtest: bad repository name %q/%q", owner, name)
	}
	if defaultBranch == "" {
		defaultBranch = "main"
	}
	full := owner + "/" + name
	s.mu.Lock()
	_, exists := s.repos[full]
	s.mu.Unlock()
	if exists {
		return "", fmt.Errorf("githubtest: repository %s exists", full)
	}
	dir := filepath.Join(s.root, "repos", owner, name+".git")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("githubtest: %w", err)
	}
	if _, err := s.git("", nil, nil, "init", "--quiet", "--bare", "--initial-branch="+defaultBranch, dir); err != nil {
		return "", fmt.Errorf("githubtest: %w", err)
	}
	src, err := filepath.Abs(srcDir)
	if err != nil {
		return "", fmt.Errorf("githubtest: %w", err)
	}
	index := s.tmpPath("index")
	defer os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index, "GIT_WORK_TREE=" + src}
	if _, err := s.git(dir, env, nil, "-C", src, "add", "--all", "--", "."); err != nil {
		return "", fmt.Errorf("githubtest: add %s: %w", srcDir, err)
	}
	tree, err := s.gitLine(dir, env, nil, "write-tree")
	if err != nil {
		return "", fmt.Errorf("githubtest: %w", err)
	}
	now := time.Now()
	ident := identEnv(owner, owner+"@users.noreply.github.com", owner, owner+"@users.noreply.github.com", now)
	sha, err := s.gitLine(dir, ident, []byte("Initial commit\n"), "commit-tree", tree)
	if err != nil {
		return "", fmt.Errorf("githubtest: %w", err)
	}
	if _, err := s.git(dir, nil, nil, "update-ref", "refs/heads/"+defaultBranch, sha, ""); err != nil {
		return "", fmt.Errorf("githubtest: %w", err)
	}
	rp := &repo{
		owner: owner, name: name, dir: dir, defaultBranch: defaultBranch, private: true,
		id: s.nextID(), created: now,
		issues: map[int]*issue{}, pulls: map[int]*pull{}, next: 1,
	}
	s.mu.Lock()
	s.repos[full] = rp
	s.mu.Unlock()
	return sha, nil
}

// identEnv sets author and committer for commit-tree.
func identEnv(aName, aEmail, cName, cEmail string, when time.Time) []string {
	date := fmt.Sprintf("%d +0000", when.Unix())
	return []string{
		"GIT_AUTHOR_NAME=" + aName, "GIT_AUTHOR_EMAIL=" + aEmail, "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=" + cName, "GIT_COMMITTER_EMAIL=" + cEmail, "GIT_COMMITTER_DATE=" + date,
	}
}

// --- smart HTTP ---

var gitPathRE = regexp.MustCompile(`^/([A-Za-z0-9._-]+)/([A-Za-z0-9._-]+)\.git(/.*)?$`)

func gitPath(p string) bool { return gitPathRE.MatchString(p) }

// serveGit serves /{owner}/{name}.git/... through git http-backend,
// read-only, for "x-access-token:<installation token>" basic auth only.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request) {
	m := gitPathRE.FindStringSubmatch(r.URL.Path)
	full := m[1] + "/" + m[2]
	user, pass, ok := r.BasicAuth()
	if !ok || user != "x-access-token" {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "Authentication required", http.StatusUnauthorized)
		return
	}
	inst, valid, allowed := s.tokenFor(pass, full)
	if !valid {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "Invalid username or token. Password authentication is not supported for Git operations.", http.StatusUnauthorized)
		return
	}
	info(r).installation = inst
	s.mu.Lock()
	rp := s.repos[full]
	s.mu.Unlock()
	if !allowed || rp == nil {
		http.Error(w, "Repository not found.", http.StatusNotFound)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack" {
		http.Error(w, "Write access to repository not granted: the double is read-only over git.", http.StatusForbidden)
		return
	}
	h := &cgi.Handler{
		Path:   gitBinary(),
		Args:   []string{"http-backend"},
		Dir:    s.root,
		Stderr: io.Discard,
		Env: append([]string{
			"GIT_PROJECT_ROOT=" + filepath.Join(s.root, "repos"),
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.receivepack",
			"GIT_CONFIG_VALUE_0=false",
		}, gitEnv...),
	}
	// The CGI must not see the credentials.
	r2 := r.Clone(r.Context())
	r2.Header.Del("Authorization")
	h.ServeHTTP(w, r2)
}

var gitBin atomic.Value

func gitBinary() string {
	if p, ok := gitBin.Load().(string); ok {
		return p
	}
	p, err := exec.LookPath("git")
	if err != nil {
		p = "git"
	}
	gitBin.Store(p)
	return p
}
