package githubtest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// treeEntry is one line of `git ls-tree -l`.
type treeEntry struct {
	mode, typ, sha string
	size           int64 // -1 for trees and submodules
	path           string
}

// lsTree lists treeish (optionally restricted to paths) with sizes.
func (s *Server) lsTree(rp *repo, treeish string, paths ...string) ([]treeEntry, error) {
	args := append([]string{"ls-tree", "-l", "-z", "--full-tree", treeish, "--"}, paths...)
	out, err := s.git(rp.dir, nil, nil, args...)
	if err != nil {
		return nil, err
	}
	var entries []treeEntry
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 4 {
			continue
		}
		size, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			size = -1
		}
		entries = append(entries, treeEntry{mode: f[0], typ: f[1], sha: f[2], size: size, path: path})
	}
	return entries, nil
}

// contentURLs fills the url fields of a contents object.
func (s *Server) contentURLs(rp *repo, m map[string]any, e treeEntry, ref string) {
	full := rp.full()
	self := s.apiBase + "repos/" + full + "/contents/" + e.path + "?ref=" + url.QueryEscape(ref)
	kind, gitKind := "blob", "blobs"
	if e.typ == "tree" {
		kind, gitKind = "tree", "trees"
	}
	gitURL := s.apiBase + "repos/" + full + "/git/" + gitKind + "/" + e.sha
	htmlURL := s.htmlBase + full + "/" + kind + "/" + ref + "/" + e.path
	m["url"], m["git_url"], m["html_url"] = self, gitURL, htmlURL
	if e.typ == "blob" {
		m["download_url"] = s.htmlBase + full + "/raw/" + ref + "/" + e.path
	} else {
		m["download_url"] = nil
	}
	m["_links"] = map[string]any{"self": self, "git": gitURL, "html": htmlURL}
}

func contentType(e treeEntry) string {
	switch {
	case e.typ == "tree":
		return "dir"
	case e.typ == "commit":
		return "submodule"
	case e.mode == "120000":
		return "symlink"
	default:
		return "file"
	}
}

// getContents is GET /repos/{o}/{r}/contents/{path}?ref=.
func (s *Server) getContents(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	path := strings.Trim(wildcard(r), "/")
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		ref = rp.defaultBranch
	}
	commit, ok := s.resolve(rp, ref)
	if !ok {
		writeError(w, http.StatusNotFound, "No commit found for the ref "+ref, docContents)
		return
	}
	if strings.Contains(path, "..") || strings.Contains(path, "//") {
		notFound(w, docContents)
		return
	}
	var listing []treeEntry
	var self *treeEntry
	if path != "" {
		es, err := s.lsTree(rp, commit, path)
		if err != nil || len(es) != 1 || es[0].path != path {
			notFound(w, docContents)
			return
		}
		self = &es[0]
	}
	if self == nil || self.typ == "tree" {
		treeish := commit
		if self != nil {
			treeish = self.sha
		}
		es, err := s.lsTree(rp, treeish)
		if err != nil {
			notFound(w, docContents)
			return
		}
		for _, e := range es {
			if path != "" {
				e.path = path + "/" + e.path
			}
			listing = append(listing, e)
		}
		tmpl := fixture("repos-get-content-directory.json").([]any)
		out := []any{}
		for _, e := range listing {
			m := tmpl[0].(map[string]any)
			if e.typ == "tree" {
				m = tmpl[1].(map[string]any)
			}
			o := map[string]any{}
			for k, v := range m {
				o[k] = v
			}
			o["type"] = contentType(e)
			o["name"] = e.path[strings.LastIndex(e.path, "/")+1:]
			o["path"] = e.path
			o["sha"] = e.sha
			o["size"] = max(e.size, 0)
			s.contentURLs(rp, o, e, ref)
			out = append(out, o)
		}
		writeJSON(w, http.StatusOK, out)
		return
	}

	data, err := s.git(rp.dir, nil, nil, "cat-file", self.typ, self.sha)
	if err != nil && self.typ != "commit" {
		serverError(w, err)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "raw") && self.typ == "blob" {
		w.Header().Set("Content-Type", "application/vnd.github.raw")
		w.Write(data)
		return
	}
	m := fixtureObject("repos-get-content-file.json")
	m["type"] = contentType(*self)
	m["name"] = path[strings.LastIndex(path, "/")+1:]
	m["path"] = path
	m["sha"] = self.sha
	m["size"] = max(self.size, 0)
	s.contentURLs(rp, m, *self, ref)
	switch m["type"] {
	case "file":
		m["encoding"] = "base64"
		m["content"] = wrap64(data)
	case "symlink":
		delete(m, "encoding")
		delete(m, "content")
		m["target"] = string(data)
	default:
		delete(m, "encoding")
		delete(m, "content")
	}
	writeJSON(w, http.StatusOK, m)
}

// createBlob is POST /repos/{o}/{r}/git/blobs.
func (s *Server) createBlob(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	var body struct {
		Content  *string `json:"content"`
		Encoding string  `json:"encoding"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Content == nil {
		writeValidation(w, "Blob", "content", "missing_field", "", docCreateBlob)
		return
	}
	var data []byte
	switch body.Encoding {
	case "", "utf-8":
		data = []byte(*body.Content)
	case "base64":
		var err error
		data, err = base64.StdEncoding.DecodeString(*body.Content)
		if err != nil {
			writeValidation(w, "Blob", "content", "invalid", "content is not valid Base64", docCreateBlob)
			return
		}
	default:
		writeValidation(w, "Blob", "encoding", "invalid", "encoding must be utf-8 or base64", docCreateBlob)
		return
	}
	sha, err := s.gitLine(rp.dir, nil, data, "hash-object", "-w", "--stdin")
	if err != nil {
		serverError(w, err)
		return
	}
	m := fixtureObject("git-create-blob.json")
	m["sha"] = sha
	m["url"] = s.apiBase + "repos/" + rp.full() + "/git/blobs/" + sha
	writeJSON(w, http.StatusCreated, m)
}

// getBlob is GET /repos/{o}/{r}/git/blobs/{sha} (JSON, or raw bytes for a raw Accept).
func (s *Server) getBlob(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	sha := chi.URLParam(r, "sha")
	if s.objectType(rp, sha) != "blob" {
		notFound(w, docGetBlob)
		return
	}
	data, err := s.git(rp.dir, nil, nil, "cat-file", "blob", sha)
	if err != nil {
		serverError(w, err)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "raw") {
		w.Header().Set("Content-Type", "application/vnd.github.raw")
		w.Write(data)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"sha":      sha,
		"node_id":  nodeID("Blob", sha),
		"size":     len(data),
		"url":      s.apiBase + "repos/" + rp.full() + "/git/blobs/" + sha,
		"content":  wrap64(data),
		"encoding": "base64",
	})
}

var validModes = map[string]string{"100644": "blob", "100755": "blob", "120000": "blob", "040000": "tree", "160000": "commit"}

// badPath reports a path GitHub would refuse in a tree.
func badPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return true
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") {
			return true
		}
	}
	return false
}

// createTree is POST /repos/{o}/{r}/git/trees, applied with a temporary index:
// read-tree base_tree, then update-index per entry (--force-remove for a null
// sha), then write-tree.
func (s *Server) createTree(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	var body struct {
		BaseTree string                       `json:"base_tree"`
		Tree     []map[string]json.RawMessage `json:"tree"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Tree == nil {
		writeValidation(w, "Tree", "tree", "missing_field", "", docCreateTree)
		return
	}
	index := s.tmpPath("index")
	defer os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}
	if body.BaseTree != "" {
		if s.objectType(rp, body.BaseTree) != "tree" {
			writeValidation(w, "Tree", "base_tree", "invalid", "base_tree is not a valid tree oid", docCreateTree)
			return
		}
		if _, err := s.git(rp.dir, env, nil, "read-tree", body.BaseTree); err != nil {
			serverError(w, err)
			return
		}
	} else if _, err := s.git(rp.dir, env, nil, "read-tree", "--empty"); err != nil {
		serverError(w, err)
		return
	}
	s.mu.Lock()
	workflows := s.workflows
	s.mu.Unlock()

	for _, raw := range body.Tree {
		var path, mode, typ string
		json.Unmarshal(raw["path"], &path)
		json.Unmarshal(raw["mode"], &mode)
		json.Unmarshal(raw["type"], &typ)
		if badPath(path) {
			writeValidation(w, "Tree", "path", "invalid", "tree.path contains a malformed path component", docCreateTree)
			return
		}
		want, ok := validModes[mode]
		if !ok {
			writeValidation(w, "Tree", "mode", "invalid", "tree.mode must be one of 100644, 100755, 040000, 160000, 120000", docCreateTree)
			return
		}
		if typ != "" && typ != want {
			writeValidation(w, "Tree", "type", "invalid", "tree.type does not match tree.mode", docCreateTree)
			return
		}
		if !workflows && strings.HasPrefix(path, ".github/workflows/") {
			writeBody(w, http.StatusForbidden, fixtureBytes("git-create-tree-403-workflows.json"))
			return
		}
		shaRaw, hasSHA := raw["sha"]
		contentRaw, hasContent := raw["content"]
		switch {
		case hasSHA && string(shaRaw) == "null":
			// Deletion: the path itself, or everything below it.
			out, err := s.git(rp.dir, env, nil, "ls-files", "-z", "--", path)
			if err != nil {
				serverError(w, err)
				return
			}
			// --index-info with mode 0 removes a path (--force-remove wants a work tree).
			var info strings.Builder
			for _, p := range strings.Split(string(out), "\x00") {
				if p != "" {
					info.WriteString("0 0000000000000000000000000000000000000000\t" + p + "\x00")
				}
			}
			if info.Len() > 0 {
				if _, err := s.git(rp.dir, env, []byte(info.String()), "update-index", "-z", "--index-info"); err != nil {
					serverError(w, err)
					return
				}
			}
			continue
		case hasSHA:
			var sha string
			if json.Unmarshal(shaRaw, &sha) != nil || s.objectType(rp, sha) != want {
				writeValidation(w, "Tree", "sha", "invalid", "tree.sha "+strings.Trim(string(shaRaw), `"`)+" is not a valid "+want, docCreateTree)
				return
			}
			if want == "tree" {
				writeValidation(w, "Tree", "sha", "invalid", "the GitHub double supports blob entries only", docCreateTree)
				return
			}
			if err := s.addIndexEntry(rp, env, mode, sha, path); err != nil {
				writeValidation(w, "Tree", "path", "invalid", err.Error(), docCreateTree)
				return
			}
		case hasContent:
			var content string
			if json.Unmarshal(contentRaw, &content) != nil || want != "blob" {
				writeValidation(w, "Tree", "content", "invalid", "tree.content must be a string for a blob", docCreateTree)
				return
			}
			sha, err := s.gitLine(rp.dir, nil, []byte(content), "hash-object", "-w", "--stdin")
			if err != nil {
				serverError(w, err)
				return
			}
			if err := s.addIndexEntry(rp, env, mode, sha, path); err != nil {
				writeValidation(w, "Tree", "path", "invalid", err.Error(), docCreateTree)
				return
			}
		default:
			writeValidation(w, "Tree", "sha", "missing_field", "Must supply either tree.sha or tree.content", docCreateTree)
			return
		}
	}
	tree, err := s.gitLine(rp.dir, env, nil, "write-tree")
	if err != nil {
		serverError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.treeJSON(rp, tree))
}

func (s *Server) addIndexEntry(rp *repo, env []string, mode, sha, path string) error {
	_, err := s.git(rp.dir, env, nil, "update-index", "--add", "--replace", "--cacheinfo", mode+","+sha+","+path)
	return err
}

// treeJSON is the create-tree answer: the tree's top level.
func (s *Server) treeJSON(rp *repo, tree string) map[string]any {
	m := fixtureObject("git-create-tree.json")
	m["sha"] = tree
	m["url"] = s.apiBase + "repos/" + rp.full() + "/git/trees/" + tree
	m["truncated"] = false
	entries, _ := s.lsTree(rp, tree)
	list := []any{}
	for _, e := range entries {
		o := map[string]any{"path": e.path, "mode": e.mode, "type": e.typ, "sha": e.sha}
		switch e.typ {
		case "blob":
			o["size"] = e.size
			o["url"] = s.apiBase + "repos/" + rp.full() + "/git/blobs/" + e.sha
		case "tree":
			o["url"] = s.apiBase + "repos/" + rp.full() + "/git/trees/" + e.sha
		}
		list = append(list, o)
	}
	m["tree"] = list
	return m
}

// gitIdent is a parsed author/committer line.
type gitIdent struct {
	name, email string
	when        time.Time
}

func parseIdent(line string) gitIdent {
	lt, gt := strings.Index(line, "<"), strings.LastIndex(line, ">")
	if lt < 0 || gt < lt {
		return gitIdent{name: line}
	}
	id := gitIdent{name: strings.TrimSpace(line[:lt]), email: line[lt+1 : gt]}
	f := strings.Fields(line[gt+1:])
	if len(f) >= 1 {
		if sec, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			id.when = time.Unix(sec, 0)
		}
	}
	return id
}

// commitJSON describes commit sha in the create-commit fixture's shape.
func (s *Server) commitJSON(rp *repo, sha string) (map[string]any, bool) {
	if s.objectType(rp, sha) != "commit" {
		return nil, false
	}
	raw, err := s.git(rp.dir, nil, nil, "cat-file", "commit", sha)
	if err != nil {
		return nil, false
	}
	head, msg, _ := strings.Cut(string(raw), "\n\n")
	var tree string
	var parents []string
	var author, committer gitIdent
	for _, line := range strings.Split(head, "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "tree":
			tree = v
		case "parent":
			parents = append(parents, v)
		case "author":
			author = parseIdent(v)
		case "committer":
			committer = parseIdent(v)
		}
	}
	full := rp.full()
	m := fixtureObject("git-create-commit.json")
	m["sha"] = sha
	m["node_id"] = nodeID("Commit", sha)
	m["url"] = s.apiBase + "repos/" + full + "/git/commits/" + sha
	m["html_url"] = s.htmlBase + full + "/commit/" + sha
	m["author"] = map[string]any{"date": timestamp(author.when), "name": author.name, "email": author.email}
	m["committer"] = map[string]any{"date": timestamp(committer.when), "name": committer.name, "email": committer.email}
	m["message"] = strings.TrimSuffix(msg, "\n")
	m["tree"] = map[string]any{"sha": tree, "url": s.apiBase + "repos/" + full + "/git/trees/" + tree}
	ps := []any{}
	for _, p := range parents {
		ps = append(ps, map[string]any{
			"sha":      p,
			"url":      s.apiBase + "repos/" + full + "/git/commits/" + p,
			"html_url": s.htmlBase + full + "/commit/" + p,
		})
	}
	m["parents"] = ps
	s.mu.Lock()
	verified := s.verified[sha]
	s.mu.Unlock()
	if verified {
		m["verification"] = map[string]any{"verified": true, "reason": "valid", "signature": nil, "payload": nil, "verified_at": timestamp(committer.when)}
	} else {
		m["verification"] = map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil}
	}
	return m, true
}

// getCommit is GET /repos/{o}/{r}/git/commits/{sha}.
func (s *Server) getCommit(w http.ResponseWriter, r *http.Request) {
	m, ok := s.commitJSON(repoOf(r), chi.URLParam(r, "sha"))
	if !ok {
		notFound(w, docGetCommit)
		return
	}
	writeJSON(w, http.StatusOK, m)
}

type identBody struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

// createCommit is POST /repos/{o}/{r}/git/commits. With no author and no
// committer the commit is the App's (author <slug>[bot], committer GitHub)
// and marked verified, like GitHub's signed API commits.
func (s *Server) createCommit(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	var body struct {
		Message   *string    `json:"message"`
		Tree      string     `json:"tree"`
		Parents   []string   `json:"parents"`
		Author    *identBody `json:"author"`
		Committer *identBody `json:"committer"`
		Signature string     `json:"signature"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Message == nil {
		writeValidation(w, "Commit", "message", "missing_field", "", docCreateCommit)
		return
	}
	if s.objectType(rp, body.Tree) != "tree" {
		writeError(w, http.StatusUnprocessableEntity, "Tree SHA does not exist", docCreateCommit)
		return
	}
	args := []string{"commit-tree", body.Tree}
	for _, p := range body.Parents {
		if s.objectType(rp, p) != "commit" {
			writeError(w, http.StatusUnprocessableEntity, "Parent SHA does not exist or is not a commit object", docCreateCommit)
			return
		}
		args = append(args, "-p", p)
	}
	now := time.Now()
	bot := s.BotLogin
	botEmail := strconv.FormatInt(s.userID(bot), 10) + "+" + bot + "@users.noreply.github.com"
	author := identBody{Name: bot, Email: botEmail}
	committer := identBody{Name: "GitHub", Email: "noreply@github.com"}
	if body.Author != nil {
		author = *body.Author
		if body.Committer == nil {
			committer = author
		}
	}
	if body.Committer != nil {
		committer = *body.Committer
	}
	when := func(d string) string {
		if t, err := time.Parse(time.RFC3339, d); err == nil {
			return strconv.FormatInt(t.Unix(), 10) + " +0000"
		}
		return strconv.FormatInt(now.Unix(), 10) + " +0000"
	}
	env := []string{
		"GIT_AUTHOR_NAME=" + author.Name, "GIT_AUTHOR_EMAIL=" + author.Email, "GIT_AUTHOR_DATE=" + when(author.Date),
		"GIT_COMMITTER_NAME=" + committer.Name, "GIT_COMMITTER_EMAIL=" + committer.Email, "GIT_COMMITTER_DATE=" + when(committer.Date),
	}
	sha, err := s.gitLine(rp.dir, env, []byte(*body.Message), args...)
	if err != nil {
		serverError(w, err)
		return
	}
	if body.Author == nil && body.Committer == nil && body.Signature == "" {
		s.mu.Lock()
		s.verified[sha] = true
		s.mu.Unlock()
	}
	m, _ := s.commitJSON(rp, sha)
	writeJSON(w, http.StatusCreated, m)
}

// refJSON is the reference object.
func (s *Server) refJSON(rp *repo, ref, sha string) map[string]any {
	m := fixtureObject("git-create-ref.json")
	m["ref"] = ref
	m["node_id"] = nodeID("Ref", ref)
	m["url"] = s.apiBase + "repos/" + rp.full() + "/git/" + ref
	typ := s.objectType(rp, sha)
	m["object"] = map[string]any{"type": typ, "sha": sha, "url": s.apiBase + "repos/" + rp.full() + "/git/" + typ + "s/" + sha}
	return m
}

// refSHA returns what the full ref ("refs/heads/x") points at.
func (s *Server) refSHA(rp *repo, ref string) (string, bool) {
	sha, err := s.gitLine(rp.dir, nil, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", ref)
	if err != nil || sha == "" || strings.HasPrefix(ref, "-") {
		return "", false
	}
	// rev-parse also resolves shorthand; insist on the exact ref.
	if _, err := s.git(rp.dir, nil, nil, "show-ref", "--verify", "--quiet", ref); err != nil {
		return "", false
	}
	return sha, true
}

// validRefName is GitHub's rule for creating a reference, plus git's own.
func (s *Server) validRefName(ref string) bool {
	if !strings.HasPrefix(ref, "refs/") || strings.Count(ref, "/") < 2 {
		return false
	}
	_, err := s.git("", nil, nil, "check-ref-format", ref)
	return err == nil
}

// createRef is POST /repos/{o}/{r}/git/refs.
func (s *Server) createRef(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	var body struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if !s.validRefName(body.Ref) {
		writeError(w, http.StatusUnprocessableEntity, "Reference name must start with 'refs/' and have at least two slashes.", docCreateRef)
		return
	}
	if s.objectType(rp, body.SHA) == "" {
		writeError(w, http.StatusUnprocessableEntity, "Object does not exist", docCreateRef)
		return
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if _, exists := s.refSHA(rp, body.Ref); exists {
		writeBody(w, http.StatusUnprocessableEntity, fixtureBytes("git-create-ref-422-already-exists.json"))
		return
	}
	if _, err := s.git(rp.dir, nil, nil, "update-ref", "--end-of-options", body.Ref, body.SHA, ""); err != nil {
		writeError(w, http.StatusUnprocessableEntity, "Reference update failed", docCreateRef)
		return
	}
	writeJSON(w, http.StatusCreated, s.refJSON(rp, body.Ref, body.SHA))
}

// getRef is GET /repos/{o}/{r}/git/ref/{ref} (and git/refs/{ref}).
func (s *Server) getRef(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	ref := "refs/" + strings.TrimPrefix(wildcard(r), "refs/")
	sha, ok := s.refSHA(rp, ref)
	if !ok {
		notFound(w, docGetRef)
		return
	}
	writeJSON(w, http.StatusOK, s.refJSON(rp, ref, sha))
}

// updateRef is PATCH /repos/{o}/{r}/git/refs/{ref}: fast-forward only unless force.
func (s *Server) updateRef(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	ref := "refs/" + strings.TrimPrefix(wildcard(r), "refs/")
	var body struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if s.objectType(rp, body.SHA) == "" {
		writeError(w, http.StatusUnprocessableEntity, "Object does not exist", docUpdateRef)
		return
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	old, ok := s.refSHA(rp, ref)
	if !ok {
		writeError(w, http.StatusUnprocessableEntity, "Reference does not exist", docUpdateRef)
		return
	}
	if !body.Force && old != body.SHA {
		if _, err := s.git(rp.dir, nil, nil, "merge-base", "--is-ancestor", old, body.SHA); err != nil {
			writeBody(w, http.StatusUnprocessableEntity, fixtureBytes("git-update-ref-422-not-fast-forward.json"))
			return
		}
	}
	if _, err := s.git(rp.dir, nil, nil, "update-ref", "--end-of-options", ref, body.SHA, old); err != nil {
		writeError(w, http.StatusUnprocessableEntity, "Reference update failed", docUpdateRef)
		return
	}
	writeJSON(w, http.StatusOK, s.refJSON(rp, ref, body.SHA))
}

// deleteRef is DELETE /repos/{o}/{r}/git/refs/{ref}.
func (s *Server) deleteRef(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	ref := "refs/" + strings.TrimPrefix(wildcard(r), "refs/")
	rp.mu.Lock()
	defer rp.mu.Unlock()
	old, ok := s.refSHA(rp, ref)
	if !ok {
		writeError(w, http.StatusUnprocessableEntity, "Reference does not exist", "https://docs.github.com/rest/git/refs#delete-a-reference")
		return
	}
	if _, err := s.git(rp.dir, nil, nil, "update-ref", "-d", "--end-of-options", ref, old); err != nil {
		serverError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
