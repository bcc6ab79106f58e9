package github_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bestofn/bestofn/github"
	"github.com/bestofn/bestofn/github/githubtest"
)

const (
	owner = "octo"
	name  = "demo"
	full  = owner + "/" + name
	inst  = int64(7)
)

type env struct {
	srv  *githubtest.Server
	app  *github.App
	c    *github.Client
	base string // head of main after AddRepo
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func setup(t *testing.T) *env {
	t.Helper()
	srv, err := githubtest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "README.md"), "# demo\n", 0o644)
	writeFile(t, filepath.Join(src, "old.txt"), "to be deleted\n", 0o644)
	writeFile(t, filepath.Join(src, "pkg", "a.go"), "package pkg\n", 0o644)
	writeFile(t, filepath.Join(src, ".github", "bestofn.yml"), "attempts: 3\n", 0o644)
	base, err := srv.AddRepo(owner, name, src, "main")
	if err != nil {
		t.Fatal(err)
	}
	srv.AddInstallation(inst, full)
	app, err := github.New(github.Config{AppID: srv.AppID, PrivateKey: srv.PrivateKeyPEM, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c, err := app.Installation(inst)
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, app: app, c: c, base: base}
}

// git runs git in the bare repository of the double.
func (e *env) git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"--git-dir", e.srv.GitDir(full)}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// raw makes a request to the double with an installation token and returns
// status and body.
func (e *env) raw(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	tok, err := e.c.Token(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+strings.TrimPrefix(path, "/"), rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func otherKeyPEM(t *testing.T) []byte {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

func TestNewRejectsBadKey(t *testing.T) {
	_, err := github.New(github.Config{AppID: 1, PrivateKey: []byte("-----BEGIN NOTHING-----\nabc\n-----END NOTHING-----\n")})
	if err == nil || !strings.Contains(err.Error(), "PRIVATE_KEY") {
		t.Fatalf("New with a bad key: err = %v, want one naming PRIVATE_KEY", err)
	}
	if _, err := github.New(github.Config{PrivateKey: otherKeyPEM(t)}); err == nil || !strings.Contains(err.Error(), "APP_ID") {
		t.Fatalf("New without app id: err = %v, want one naming APP_ID", err)
	}
}

func TestBaseURL(t *testing.T) {
	key := otherKeyPEM(t)
	for in, want := range map[string]string{
		"":                                "https://api.github.com/",
		"https://api.github.com":          "https://api.github.com/",
		"https://ghe.example.com":         "https://ghe.example.com/api/v3/",
		"https://ghe.example.com/api/v3/": "https://ghe.example.com/api/v3/",
		"http://127.0.0.1:8080/":          "http://127.0.0.1:8080/api/v3/",
	} {
		app, err := github.New(github.Config{AppID: 1, PrivateKey: key, BaseURL: in})
		if err != nil {
			t.Fatal(err)
		}
		if got := app.BaseURL(); got != want {
			t.Errorf("BaseURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestToken(t *testing.T) {
	e := setup(t)
	tok, err := e.c.Token(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "ghs_") || len(tok) != 40 {
		t.Errorf("token %q: want ghs_ and 36 characters", tok)
	}
	again, err := e.c.Token(ctx(t))
	if err != nil || again != tok {
		t.Errorf("second Token = %q, %v; want the cached %q", again, err, tok)
	}
	if c2, _ := e.app.Installation(inst); c2 != e.c {
		t.Error("Installation(id) twice gave two clients")
	}
	if got := e.srv.Tokens(); !slices.Equal(got, []string{tok}) {
		t.Errorf("minted tokens = %v, want just %v", got, tok)
	}
	var minted []githubtest.Request
	for _, r := range e.srv.Requests() {
		if r.Route == "/app/installations/{id}/access_tokens" {
			minted = append(minted, r)
		}
	}
	if len(minted) != 1 || minted[0].Status != 201 || minted[0].Installation != 0 {
		t.Errorf("token requests = %+v, want one 201 with no installation", minted)
	}

	t.Run("WrongKey", func(t *testing.T) {
		app, err := github.New(github.Config{AppID: e.srv.AppID, PrivateKey: otherKeyPEM(t), BaseURL: e.srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := app.Installation(inst)
		if tok, err := c.Token(ctx(t)); err == nil {
			t.Fatalf("Token with a foreign key = %q, want an error", tok)
		}
		if _, _, err := c.FetchFile(ctx(t), owner, name, "README.md", ""); err == nil {
			t.Fatal("FetchFile with a foreign key: want an error")
		}
		reqs := e.srv.Requests()
		if last := reqs[len(reqs)-1]; last.Status != 401 || last.Route != "/app/installations/{id}/access_tokens" {
			t.Errorf("last request = %+v, want a 401 token request", last)
		}
	})
	t.Run("WrongAppID", func(t *testing.T) {
		app, _ := github.New(github.Config{AppID: e.srv.AppID + 1, PrivateKey: e.srv.PrivateKeyPEM, BaseURL: e.srv.URL})
		c, _ := app.Installation(inst)
		if _, err := c.Token(ctx(t)); err == nil {
			t.Fatal("Token with a wrong iss: want an error")
		}
	})
	t.Run("UnknownInstallation", func(t *testing.T) {
		c, _ := e.app.Installation(99)
		if _, err := c.Token(ctx(t)); err == nil {
			t.Fatal("Token for an unknown installation: want an error")
		}
	})
	t.Run("OtherRepo", func(t *testing.T) {
		src := t.TempDir()
		writeFile(t, filepath.Join(src, "x"), "x", 0o644)
		if _, err := e.srv.AddRepo(owner, "private", src, ""); err != nil {
			t.Fatal(err)
		}
		if _, found, err := e.c.FetchFile(ctx(t), owner, "private", "x", ""); err != nil || found {
			t.Fatalf("FetchFile outside the installation = %v, %v; want GitHub's 404 (not found)", found, err)
		}
		if _, err := e.c.Repository(ctx(t), owner, "private"); !github.IsNotFound(err) {
			t.Fatalf("Repository outside the installation: err = %v, want 404", err)
		}
	})
}

func TestAppEndpoints(t *testing.T) {
	e := setup(t)
	slug, err := e.app.Slug(ctx(t))
	if err != nil || slug != "bestofn" {
		t.Errorf("Slug = %q, %v", slug, err)
	}
	id, err := e.app.RepoInstallation(ctx(t), owner, name)
	if err != nil || id != inst {
		t.Errorf("RepoInstallation = %d, %v; want %d", id, err, inst)
	}
	r, err := e.c.Repository(ctx(t), owner, name)
	if err != nil {
		t.Fatal(err)
	}
	if r.DefaultBranch != "main" || r.CloneURL != e.srv.CloneURL(full) || r.FullName != full {
		t.Errorf("Repository = %+v", r)
	}
}

func TestFetchFile(t *testing.T) {
	e := setup(t)
	for _, tc := range []struct {
		path, ref string
		want      string
		found     bool
	}{
		{".github/bestofn.yml", "", "attempts: 3\n", true},
		{"README.md", "main", "# demo\n", true},
		{"pkg/a.go", e.base, "package pkg\n", true},
		{".github/missing.yml", "", "", false},
	} {
		data, found, err := e.c.FetchFile(ctx(t), owner, name, tc.path, tc.ref)
		if err != nil || found != tc.found || string(data) != tc.want {
			t.Errorf("FetchFile(%s@%s) = %q, %v, %v; want %q, %v", tc.path, tc.ref, data, found, err, tc.want, tc.found)
		}
	}
	if _, _, err := e.c.FetchFile(ctx(t), owner, name, "pkg", ""); err == nil {
		t.Error("FetchFile of a directory: want an error")
	}
	// Large content is wrapped like GitHub's (60 columns) and still decodes.
	status, body := e.raw(t, "GET", "repos/"+full+"/contents/README.md", "")
	var fc struct{ Content, Encoding string }
	if status != 200 || json.Unmarshal(body, &fc) != nil || fc.Encoding != "base64" || !strings.HasSuffix(fc.Content, "\n") {
		t.Errorf("contents answer %d %s", status, body)
	}
}

func TestComments(t *testing.T) {
	e := setup(t)
	if err := e.srv.AddIssue(full, 3, "Bug", "It breaks"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.AddComment(full, 3, "octocat-user", "/bestofn"); err != nil {
		t.Fatal(err)
	}
	c, err := e.c.CreateIssueComment(ctx(t), owner, name, 3, "Working… <!-- bestofn:run=1 -->")
	if err != nil {
		t.Fatal(err)
	}
	if c.ID == 0 || c.User != "bestofn[bot]" || c.UserType != "Bot" || !strings.Contains(c.HTMLURL, "/issues/3#issuecomment-") {
		t.Errorf("created comment = %+v", c)
	}
	for i := range 2 {
		if err := e.c.EditIssueComment(ctx(t), owner, name, c.ID, fmt.Sprintf("step %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	got := e.srv.Comments(full, 3)
	if len(got) != 2 || got[1].ID != c.ID || got[1].Body != "step 1" || got[1].Edits != 2 || got[0].Edits != 0 {
		t.Errorf("double's comments = %+v", got)
	}
	if err := e.c.EditIssueComment(ctx(t), owner, name, 424242424, "x"); !github.IsNotFound(err) {
		t.Errorf("editing a missing comment: err = %v, want 404", err)
	}

	if err := e.c.AddCommentReaction(ctx(t), owner, name, got[0].ID, "eyes"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.AddCommentReaction(ctx(t), owner, name, got[0].ID, "eyes"); err != nil {
		t.Fatalf("second identical reaction: %v", err)
	}
	if err := e.c.AddIssueReaction(ctx(t), owner, name, 3, "+1"); err != nil {
		t.Fatal(err)
	}
	want := []githubtest.Reaction{
		{Repo: full, CommentID: got[0].ID, Content: "eyes", User: "bestofn[bot]"},
		{Repo: full, Issue: 3, Content: "+1", User: "bestofn[bot]"},
	}
	if r := e.srv.Reactions(); !slices.Equal(r, want) {
		t.Errorf("reactions = %+v, want %+v", r, want)
	}

	is, err := e.c.Issue(ctx(t), owner, name, 3)
	if err != nil || is.Title != "Bug" || is.Body != "It breaks" || is.PullRequest {
		t.Errorf("Issue = %+v, %v", is, err)
	}

	t.Run("AllPages", func(t *testing.T) {
		for i := range 150 {
			if _, err := e.srv.AddComment(full, 3, "octocat-user-2", fmt.Sprint("c", i)); err != nil {
				t.Fatal(err)
			}
		}
		cs, err := e.c.IssueComments(ctx(t), owner, name, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 152 || cs[0].Body != "/bestofn" || cs[0].UserType != "User" || cs[1].User != "bestofn[bot]" || cs[151].Body != "c149" {
			t.Fatalf("IssueComments: %d comments, first %+v", len(cs), cs[0])
		}
		pages := 0
		for _, r := range e.srv.Requests() {
			if r.Method == "GET" && r.Route == "/repos/{owner}/{repo}/issues/{number}/comments" {
				pages++
			}
		}
		if pages != 2 {
			t.Errorf("IssueComments read %d pages, want 2", pages)
		}
	})
}

func TestPermission(t *testing.T) {
	e := setup(t)
	e.srv.SetPermission(full, "alice", "maintain")
	e.srv.SetPermission(full, "bob", "write")
	e.srv.SetPermission(full, "carol", "triage")
	e.srv.SetPermission(full, "dave", "none")
	for user, want := range map[string]string{"alice": "maintain", "bob": "write", "carol": "triage", "dave": "none", "stranger": "read"} {
		got, err := e.c.Permission(ctx(t), owner, name, user)
		if err != nil || got != want {
			t.Errorf("Permission(%s) = %q, %v; want %q", user, got, err, want)
		}
	}
}

// commit makes the test's standard commit on top of e.base.
func (e *env) commit(t *testing.T, msg string) string {
	t.Helper()
	sha, err := e.c.CommitFiles(ctx(t), owner, name, github.CommitRequest{
		BaseCommit: e.base,
		Message:    msg,
		Changes: []github.FileChange{
			{Path: "new.txt", Content: []byte("new\n")},
			{Path: "README.md", Content: []byte("# demo\n\nFixed.\n")},
			{Path: "old.txt", Delete: true},
			{Path: "bin/run.sh", Mode: github.ModeExecutable, Content: []byte("#!/bin/sh\necho hi\n")},
			{Path: "link", Mode: github.ModeSymlink, Content: []byte("README.md")},
			{Path: "pkg/blob.bin", Content: []byte{0, 1, 2, 0xff, 0xfe}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

func TestCommitFiles(t *testing.T) {
	e := setup(t)
	sha := e.commit(t, "Fix #3")

	if parents := e.git(t, "rev-list", "--parents", "-n", "1", sha); parents != sha+" "+e.base {
		t.Errorf("parents line = %q, want the base as the only parent", parents)
	}
	wantDiff := "A\tbin/run.sh\nA\tlink\nA\tnew.txt\nA\tpkg/blob.bin\nD\told.txt\nM\tREADME.md"
	got := strings.Split(e.git(t, "diff", "--name-status", e.base, sha), "\n")
	slices.SortFunc(got, func(a, b string) int { return strings.Compare(a[2:], b[2:]) })
	wantLines := strings.Split(wantDiff, "\n")
	slices.SortFunc(wantLines, func(a, b string) int { return strings.Compare(a[2:], b[2:]) })
	if !slices.Equal(got, wantLines) {
		t.Errorf("diff --name-status =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
	}
	for path, mode := range map[string]string{"bin/run.sh": "100755", "link": "120000", "new.txt": "100644", "README.md": "100644", "pkg/blob.bin": "100644"} {
		if f := strings.Fields(e.git(t, "ls-tree", sha, "--", path)); len(f) == 0 || f[0] != mode {
			t.Errorf("mode of %s = %v, want %s", path, f, mode)
		}
	}
	if target := e.git(t, "cat-file", "blob", sha+":link"); target != "README.md" {
		t.Errorf("symlink target = %q", target)
	}
	if out, _ := exec.Command("git", "--git-dir", e.srv.GitDir(full), "cat-file", "blob", sha+":pkg/blob.bin").Output(); !bytes.Equal(out, []byte{0, 1, 2, 0xff, 0xfe}) {
		t.Errorf("binary blob = %v", out)
	}
	if msg := e.git(t, "log", "-1", "--format=%an <%ae>|%cn|%B", sha); !strings.HasPrefix(msg, "bestofn[bot] <") || !strings.Contains(msg, "|GitHub|Fix #3") {
		t.Errorf("commit identity/message = %q", msg)
	}
	if !e.srv.Verified(sha) {
		t.Error("commit made with no author is not marked verified")
	}
	// The commit is on no branch yet.
	if b, _ := e.srv.Branch(full, "main"); b != e.base {
		t.Errorf("main moved to %s", b)
	}

	t.Run("Errors", func(t *testing.T) {
		_, err := e.c.CommitFiles(ctx(t), owner, name, github.CommitRequest{BaseCommit: e.base, Message: "m"})
		if err == nil {
			t.Error("empty change list: want an error")
		}
		_, err = e.c.CommitFiles(ctx(t), owner, name, github.CommitRequest{BaseCommit: e.base, Message: "m",
			Changes: []github.FileChange{{Path: "x", Mode: "040000"}}})
		if err == nil {
			t.Error("tree mode: want an error")
		}
		_, err = e.c.CommitFiles(ctx(t), owner, name, github.CommitRequest{BaseCommit: strings.Repeat("0", 40), Message: "m",
			Changes: []github.FileChange{{Path: "x"}}})
		if err == nil {
			t.Error("missing base commit: want an error")
		}
		_, err = e.c.CommitFiles(ctx(t), owner, name, github.CommitRequest{BaseCommit: e.base, Message: "m",
			Changes: []github.FileChange{{Path: ".github/workflows/ci.yml", Content: []byte("on: push\n")}}})
		if github.StatusCode(err) != 403 {
			t.Errorf("touching workflows without the permission: err = %v, want GitHub's 403", err)
		}
	})
}

func TestSetBranchAndPullRequest(t *testing.T) {
	e := setup(t)
	first := e.commit(t, "first")
	const branch = "bestofn/issue-3"
	if err := e.c.SetBranch(ctx(t), owner, name, branch, first); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.srv.Branch(full, branch); got != first {
		t.Fatalf("branch at %s, want %s", got, first)
	}
	second := e.commit(t, "second") // a sibling of first: not a fast-forward
	if err := e.c.SetBranch(ctx(t), owner, name, branch, second); err != nil {
		t.Fatalf("SetBranch on an existing branch: %v", err)
	}
	if got, _ := e.srv.Branch(full, branch); got != second {
		t.Fatalf("branch at %s after force update, want %s", got, second)
	}
	var refCalls []string
	for _, r := range e.srv.Requests() {
		if strings.Contains(r.Path, "/git/refs") {
			refCalls = append(refCalls, fmt.Sprint(r.Method, " ", r.Status))
		}
	}
	if want := []string{"POST 201", "POST 422", "PATCH 200"}; !slices.Equal(refCalls, want) {
		t.Errorf("ref calls = %v, want %v", refCalls, want)
	}
	if sha, found, err := e.c.BranchSHA(ctx(t), owner, name, branch); err != nil || !found || sha != second {
		t.Errorf("BranchSHA = %s, %v, %v", sha, found, err)
	}
	if _, found, err := e.c.BranchSHA(ctx(t), owner, name, "nope"); err != nil || found {
		t.Errorf("BranchSHA of a missing branch = %v, %v", found, err)
	}

	if err := e.srv.AddIssue(full, 3, "Bug", "body"); err != nil {
		t.Fatal(err)
	}
	spec := github.PullRequestSpec{Head: branch, Base: "main", Title: "Fix #3", Body: "Fixes #3", Draft: true}
	n, url, created, err := e.c.EnsurePullRequest(ctx(t), owner, name, spec)
	if err != nil || !created || n != 4 || !strings.HasSuffix(url, "/"+full+"/pull/4") {
		t.Fatalf("first EnsurePullRequest = %d, %q, %v, %v", n, url, created, err)
	}
	spec.Title = "Fix #3 (run 2)"
	n2, url2, created, err := e.c.EnsurePullRequest(ctx(t), owner, name, spec)
	if err != nil || created || n2 != n || url2 != url {
		t.Fatalf("second EnsurePullRequest = %d, %q, %v, %v", n2, url2, created, err)
	}
	pulls := e.srv.Pulls(full)
	if len(pulls) != 1 || pulls[0].Title != "Fix #3 (run 2)" || !pulls[0].Draft || pulls[0].HeadSHA != second || pulls[0].Head != branch || pulls[0].Base != "main" {
		t.Fatalf("pulls = %+v", pulls)
	}
	is, err := e.c.Issue(ctx(t), owner, name, n)
	if err != nil || !is.PullRequest {
		t.Errorf("Issue(%d) = %+v, %v; want a pull request", n, is, err)
	}

	t.Run("DraftUnsupported", func(t *testing.T) {
		e.srv.SetDraftUnsupported(full, true)
		if err := e.c.SetBranch(ctx(t), owner, name, "other", first); err != nil {
			t.Fatal(err)
		}
		n, _, created, err := e.c.EnsurePullRequest(ctx(t), owner, name, github.PullRequestSpec{Head: "other", Base: "main", Title: "t", Draft: true})
		if err != nil || !created {
			t.Fatalf("EnsurePullRequest = %d, %v, %v", n, created, err)
		}
		for _, p := range e.srv.Pulls(full) {
			if p.Number == n && p.Draft {
				t.Error("pull request is a draft although drafts are unsupported")
			}
		}
	})
	t.Run("NoCommits", func(t *testing.T) {
		if err := e.c.SetBranch(ctx(t), owner, name, "same", e.base); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := e.c.EnsurePullRequest(ctx(t), owner, name, github.PullRequestSpec{Head: "same", Base: "main", Title: "t"})
		if github.StatusCode(err) != 422 || !strings.Contains(err.Error(), "No commits between") {
			t.Errorf("err = %v, want GitHub's 422 no commits", err)
		}
	})
}

func TestClone(t *testing.T) {
	e := setup(t)
	tok, err := e.c.Token(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "checkout")
	head, err := github.Clone(ctx(t), e.srv.CloneURL(full), tok, dir)
	if err != nil {
		t.Fatal(err)
	}
	if head != e.base {
		t.Errorf("head = %s, want %s", head, e.base)
	}
	if data, err := os.ReadFile(filepath.Join(dir, ".github", "bestofn.yml")); err != nil || string(data) != "attempts: 3\n" {
		t.Errorf("cloned file = %q, %v", data, err)
	}
	filepath.WalkDir(filepath.Join(dir, ".git"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		if bytes.Contains(data, []byte(tok)) {
			t.Errorf("%s contains the token", p)
		}
		return nil
	})
	var gitReqs int
	for _, r := range e.srv.Requests() {
		if r.Route == "git" {
			gitReqs++
			if r.Status != 200 || r.Installation != inst {
				t.Errorf("git request %+v", r)
			}
		}
	}
	if gitReqs == 0 {
		t.Error("no smart HTTP request reached the double")
	}

	t.Run("PushRefused", func(t *testing.T) {
		cmd := exec.Command("git", "-C", dir, "push", "origin", "HEAD:refs/heads/pushed")
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: Basic "+
				base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok)))
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Fatalf("push to the double succeeded: %s", out)
		}
		if _, ok := e.srv.Branch(full, "pushed"); ok {
			t.Fatal("push created a branch")
		}
	})
	t.Run("Branch", func(t *testing.T) {
		sha := e.commit(t, "on a branch")
		if err := e.c.SetBranch(ctx(t), owner, name, "bestofn/issue-3", sha); err != nil {
			t.Fatal(err)
		}
		head, err := github.CloneBranch(ctx(t), e.srv.CloneURL(full), tok, filepath.Join(t.TempDir(), "b"), "bestofn/issue-3")
		if err != nil || head != sha {
			t.Fatalf("CloneBranch = %s, %v; want %s", head, err, sha)
		}
	})
	for label, bad := range map[string]string{
		"WrongToken": "ghs_" + strings.Repeat("x", 36),
		"NoToken":    "",
		"OtherRepo":  tok, // valid token, repository outside the installation
	} {
		t.Run(label, func(t *testing.T) {
			url := e.srv.CloneURL(full)
			if label == "OtherRepo" {
				src := t.TempDir()
				writeFile(t, filepath.Join(src, "x"), "x", 0o644)
				if _, err := e.srv.AddRepo(owner, "secret", src, ""); err != nil {
					t.Fatal(err)
				}
				url = e.srv.CloneURL(owner + "/secret")
			}
			_, err := github.Clone(ctx(t), url, bad, filepath.Join(t.TempDir(), "c"))
			if err == nil {
				t.Fatal("clone succeeded")
			}
			if bad != "" && strings.Contains(err.Error(), bad) {
				t.Errorf("error contains the token: %v", err)
			}
		})
	}
}

func TestUnknownRoute(t *testing.T) {
	e := setup(t)
	status, body := e.raw(t, "GET", "repos/"+full+"/branches", "")
	if status != 404 || !strings.Contains(string(body), `"Not Found"`) {
		t.Errorf("unknown route answered %d %s", status, body)
	}
	status, _ = e.raw(t, "DELETE", "api/v3/repos/"+full+"/pulls", "")
	if status != 404 {
		t.Errorf("unknown method answered %d", status)
	}
	var unknown []githubtest.Request
	for _, r := range e.srv.Requests() {
		if r.Route == "" {
			unknown = append(unknown, r)
		}
	}
	if len(unknown) != 2 || unknown[0].Path != "/repos/"+full+"/branches" || unknown[1].Path != "/repos/"+full+"/pulls" {
		t.Errorf("unmatched requests = %+v", unknown)
	}
	// Bad or missing credentials on a repository endpoint.
	for _, auth := range []string{"", "token ghs_nope"} {
		req, _ := http.NewRequest("GET", e.srv.URL+"repos/"+full+"/contents/README.md", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("auth %q: status %d, want 401", auth, resp.StatusCode)
		}
	}
}

func TestFailNext(t *testing.T) {
	e := setup(t)
	e.srv.FailNext("POST", "/repos/"+full+"/issues/1/comments", 403, githubtest.Fixture("secondary-rate-limit-403.json"))
	_, err := e.c.CreateIssueComment(ctx(t), owner, name, 1, "x")
	var abuse *gogithub.AbuseRateLimitError
	if !errors.As(err, &abuse) || github.StatusCode(err) != 403 {
		t.Fatalf("err = %v (%T), want the injected secondary rate limit", err, err)
	}
	if _, err := e.c.CreateIssueComment(ctx(t), owner, name, 1, "x"); err != nil {
		t.Fatalf("second try: %v", err)
	}
}

// --- shapes: the double answers like the real fixtures ---

const fixtureDir = "../../shared/fixtures/github-api"

// keys adds the dotted key paths of a JSON value to out (array elements as
// "[]", all elements merged). A null or an empty array is recorded in empty:
// the double legitimately answers null where the example had an object (no
// assignee, no milestone) and [] where it had items (no labels).
func keys(v any, prefix string, out, empty map[string]bool) {
	switch t := v.(type) {
	case nil:
		empty[prefix] = true
	case map[string]any:
		for k, x := range t {
			p := prefix + "." + k
			out[p] = true
			keys(x, p, out, empty)
		}
	case []any:
		if len(t) == 0 {
			empty[prefix] = true
		}
		for _, x := range t {
			keys(x, prefix+"[]", out, empty)
		}
	}
}

// missingKeys returns the key paths of want absent from got, except below a
// null or empty array in got.
func missingKeys(want, got []byte) []string {
	var wv, gv any
	json.Unmarshal(want, &wv)
	json.Unmarshal(got, &gv)
	wk, gk, wempty, gempty := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	keys(wv, "", wk, wempty)
	keys(gv, "", gk, gempty)
	var missing []string
next:
	for k := range wk {
		if gk[k] {
			continue
		}
		for e := range gempty {
			if strings.HasPrefix(k, e+".") || strings.HasPrefix(k, e+"[]") {
				continue next
			}
		}
		missing = append(missing, k)
	}
	slices.Sort(missing)
	return missing
}

func TestFixtureCopies(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if len(files) == 0 {
		t.Skip("shared fixtures not found at " + fixtureDir)
	}
	for _, f := range files {
		want, _ := os.ReadFile(f)
		if got := githubtest.Fixture(filepath.Base(f)); got != string(want) {
			t.Errorf("githubtest/fixtures/%s differs from %s", filepath.Base(f), f)
		}
	}
}

func TestShapesMatchFixtures(t *testing.T) {
	if _, err := os.Stat(fixtureDir); err != nil {
		t.Skip("shared fixtures not found at " + fixtureDir)
	}
	e := setup(t)
	sha := e.commit(t, "shape")
	if err := e.c.SetBranch(ctx(t), owner, name, "topic", sha); err != nil {
		t.Fatal(err)
	}
	n, _, _, err := e.c.EnsurePullRequest(ctx(t), owner, name, github.PullRequestSpec{Head: "topic", Base: "main", Title: "t", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := e.c.CreateIssueComment(ctx(t), owner, name, n, "hello")
	if err != nil {
		t.Fatal(err)
	}
	e.srv.SetPermission(full, "octocat", "admin")
	treeBody := fmt.Sprintf(`{"base_tree":%q,"tree":[{"path":"file.rb","mode":"100644","type":"blob","content":"puts 1\n"}]}`, e.git(t, "rev-parse", e.base+"^{tree}"))

	cases := []struct {
		fixture      string
		method, path string
		body         string
		status       int
		into         func() any
	}{
		{"pulls-create.json", "GET", fmt.Sprintf("repos/%s/pulls/%d", full, n), "", 200, func() any { return new(gogithub.PullRequest) }},
		{"issues-create-comment.json", "GET", fmt.Sprintf("repos/%s/issues/comments/%d", full, cm.ID), "", 200, func() any { return new(gogithub.IssueComment) }},
		{"git-create-ref.json", "GET", "repos/" + full + "/git/ref/heads/topic", "", 200, func() any { return new(gogithub.Reference) }},
		{"git-update-ref.json", "PATCH", "repos/" + full + "/git/refs/heads/topic", fmt.Sprintf(`{"sha":%q,"force":true}`, sha), 200, func() any { return new(gogithub.Reference) }},
		{"git-create-commit.json", "GET", "repos/" + full + "/git/commits/" + sha, "", 200, func() any { return new(gogithub.Commit) }},
		{"git-create-tree.json", "POST", "repos/" + full + "/git/trees", treeBody, 201, func() any { return new(gogithub.Tree) }},
		{"git-create-blob.json", "POST", "repos/" + full + "/git/blobs", `{"content":"aGk=","encoding":"base64"}`, 201, func() any { return new(gogithub.Blob) }},
		{"collaborator-permission.json", "GET", "repos/" + full + "/collaborators/octocat/permission", "", 200, func() any { return new(gogithub.RepositoryPermissionLevel) }},
		{"repos-get-content-file.json", "GET", "repos/" + full + "/contents/README.md", "", 200, func() any { return new(gogithub.RepositoryContent) }},
		{"repos-get-content-directory.json", "GET", "repos/" + full + "/contents/pkg", "", 200, func() any { return new([]*gogithub.RepositoryContent) }},
		{"reactions-create-for-issue-comment.json", "POST", fmt.Sprintf("repos/%s/issues/comments/%d/reactions", full, cm.ID), `{"content":"heart"}`, 201, func() any { return new(gogithub.Reaction) }},
		{"git-create-ref-422-already-exists.json", "POST", "repos/" + full + "/git/refs", fmt.Sprintf(`{"ref":"refs/heads/topic","sha":%q}`, sha), 422, func() any { return new(gogithub.ErrorResponse) }},
		{"git-update-ref-422-not-fast-forward.json", "PATCH", "repos/" + full + "/git/refs/heads/topic", fmt.Sprintf(`{"sha":%q}`, e.base), 422, func() any { return new(gogithub.ErrorResponse) }},
		{"pulls-create-422-already-exists.json", "POST", "repos/" + full + "/pulls", `{"title":"x","head":"octo:topic","base":"main"}`, 422, func() any { return new(gogithub.ErrorResponse) }},
		{"pulls-create-422-no-commits.json", "POST", "repos/" + full + "/pulls", `{"title":"x","head":"main","base":"main"}`, 422, func() any { return new(gogithub.ErrorResponse) }},
		{"issues-create-comment-422-body-too-long.json", "POST", "repos/" + full + "/issues/1/comments", fmt.Sprintf(`{"body":%q}`, strings.Repeat("x", 65537)), 422, func() any { return new(gogithub.ErrorResponse) }},
	}
	for _, tc := range cases {
		if tc.into == nil {
			continue
		}
		t.Run(tc.fixture+" "+tc.method, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(fixtureDir, tc.fixture))
			if err != nil {
				t.Skip(err)
			}
			status, got := e.raw(t, tc.method, tc.path, tc.body)
			if status != tc.status {
				t.Fatalf("%s %s: status %d, want %d: %s", tc.method, tc.path, status, tc.status, got)
			}
			// Both decode into the same go-github type.
			if err := json.Unmarshal(want, tc.into()); err != nil {
				t.Fatalf("fixture does not decode into %T: %v", tc.into(), err)
			}
			if err := json.Unmarshal(got, tc.into()); err != nil {
				t.Fatalf("double's answer does not decode into %T: %v", tc.into(), err)
			}
			// Every key of the real body is in the double's.
			if missing := missingKeys(want, got); len(missing) > 0 {
				t.Errorf("double's answer lacks %v", missing)
			}
		})
	}

	t.Run("app-installation-access-token.json", func(t *testing.T) {
		want, err := os.ReadFile(filepath.Join(fixtureDir, "app-installation-access-token.json"))
		if err != nil {
			t.Skip(err)
		}
		// Capture the token answer through a transport that records bodies.
		rec := &recorder{next: http.DefaultTransport}
		app, _ := github.New(github.Config{AppID: e.srv.AppID, PrivateKey: e.srv.PrivateKeyPEM, BaseURL: e.srv.URL, Transport: rec})
		c, _ := app.Installation(inst)
		if _, err := c.Token(ctx(t)); err != nil {
			t.Fatal(err)
		}
		got := rec.bodies["/api/v3/app/installations/7/access_tokens"]
		var wt, gt gogithub.InstallationToken
		if json.Unmarshal(want, &wt) != nil || json.Unmarshal(got, &gt) != nil || gt.GetToken() == "" || len(gt.Repositories) != 1 || gt.Repositories[0].GetFullName() != full {
			t.Fatalf("token answer %s", got)
		}
		if missing := missingKeys(want, got); len(missing) > 0 {
			t.Errorf("token answer lacks %v", missing)
		}
	})
}

type recorder struct {
	next   http.RoundTripper
	bodies map[string][]byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	if r.bodies == nil {
		r.bodies = map[string][]byte{}
	}
	r.bodies[req.URL.Path] = data
	return resp, nil
}

func TestConcurrentInstallations(t *testing.T) {
	e := setup(t)
	e.srv.AddInstallation(8, full)
	c8, err := e.app.Installation(8)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 20)
	for i := range 20 {
		c := e.c
		if i%2 == 1 {
			c = c8
		}
		go func() {
			_, _, err := c.FetchFile(ctx(t), owner, name, "README.md", "")
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	per := map[int64]int{}
	for _, r := range e.srv.Requests() {
		if r.Route == "/repos/{owner}/{repo}/contents/*" {
			per[r.Installation]++
		}
	}
	if per[inst] != 10 || per[8] != 10 {
		t.Errorf("contents requests per installation = %v", per)
	}
	if n := len(e.srv.Tokens()); n != 2 {
		t.Errorf("%d tokens minted for 2 installations, want 2", n)
	}
}
