package githubtest

import (
	"bytes"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// fixtures are verbatim copies of shared/fixtures/github-api/*.json (real
// GitHub bodies) plus webhook-issues.opened.json (for the issue object). Every
// answer of the double starts from one of them, with the real values filled
// in, so its shape is GitHub's.
//
//go:embed fixtures/*.json
var fixtures embed.FS

// fixture returns a fresh decoded copy of fixtures/name (maps, slices,
// json.Number, strings, bools, nil).
func fixture(name string) any {
	data, err := fixtures.ReadFile("fixtures/" + name)
	if err != nil {
		panic("githubtest: missing fixture " + name)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic("githubtest: fixture " + name + ": " + err.Error())
	}
	return v
}

// fixtureObject is fixture for a JSON object.
func fixtureObject(name string) map[string]any { return fixture(name).(map[string]any) }

// fixtureBytes returns the raw bytes of a fixture (error bodies are served
// verbatim).
func fixtureBytes(name string) []byte {
	data, err := fixtures.ReadFile("fixtures/" + name)
	if err != nil {
		panic("githubtest: missing fixture " + name)
	}
	return data
}

// rewrite applies r to every string inside v, in place where possible.
func rewrite(v any, r *strings.Replacer) any {
	switch t := v.(type) {
	case string:
		return r.Replace(t)
	case map[string]any:
		for k, x := range t {
			t[k] = rewrite(x, r)
		}
		return t
	case []any:
		for i, x := range t {
			t[i] = rewrite(x, r)
		}
		return t
	default:
		return v
	}
}

// timestamp formats t the way GitHub does ("2011-04-14T16:00:49Z").
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// nodeID imitates GitHub's legacy global node ids: base64("0<len>:<Type><id>").
func nodeID(typ string, id any) string {
	s := fmt.Sprintf("%s%v", typ, id)
	return base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("0%d:%s", len(typ), s)))
}

// wrap64 base64-encodes data with a "\n" after every 60 characters, the last
// line included, as GitHub's contents and blob APIs do.
func wrap64(data []byte) string {
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	for len(enc) > 60 {
		b.WriteString(enc[:60])
		b.WriteByte('\n')
		enc = enc[60:]
	}
	if enc != "" {
		b.WriteString(enc)
		b.WriteByte('\n')
	}
	return b.String()
}

// writeJSON writes v with status and GitHub's usual headers.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeBody(w, status, data)
}

// writeBody writes a JSON body verbatim.
func writeBody(w http.ResponseWriter, status int, data []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	w.Write(data)
}

// errorBody is GitHub's error object.
func errorBody(message, docURL string) map[string]any {
	if docURL == "" {
		docURL = "https://docs.github.com/rest"
	}
	return map[string]any{"message": message, "documentation_url": docURL}
}

// writeError writes GitHub's {"message", "documentation_url"} error.
func writeError(w http.ResponseWriter, status int, message, docURL string) {
	writeJSON(w, status, errorBody(message, docURL))
}

// writeValidation writes a 422 "Validation Failed" with one errors[] entry.
func writeValidation(w http.ResponseWriter, resource, field, code, message, docURL string) {
	e := map[string]any{"resource": resource, "code": code}
	if field != "" {
		e["field"] = field
	}
	if message != "" {
		e["message"] = message
	}
	b := errorBody("Validation Failed", docURL)
	b["errors"] = []any{e}
	writeJSON(w, http.StatusUnprocessableEntity, b)
}

// serverError writes a 500 naming what failed inside the double.
func serverError(w http.ResponseWriter, err error) {
	msg := "Server Error"
	if err != nil {
		msg += " (githubtest: " + err.Error() + ")"
	}
	writeError(w, http.StatusInternalServerError, msg, "")
}

// notFound writes GitHub's 404 body.
func notFound(w http.ResponseWriter, docURL string) {
	writeError(w, http.StatusNotFound, "Not Found", docURL)
}

// Documentation URLs GitHub puts in its error bodies.
const (
	docContents     = "https://docs.github.com/rest/repos/contents#get-repository-content"
	docAccessToken  = "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"
	docCreateBlob   = "https://docs.github.com/rest/git/blobs#create-a-blob"
	docGetBlob      = "https://docs.github.com/rest/git/blobs#get-a-blob"
	docCreateTree   = "https://docs.github.com/rest/git/trees#create-a-tree"
	docGetCommit    = "https://docs.github.com/rest/git/commits#get-a-commit-object"
	docCreateCommit = "https://docs.github.com/rest/git/commits#create-a-commit"
	docCreateRef    = "https://docs.github.com/rest/git/refs#create-a-reference"
	docUpdateRef    = "https://docs.github.com/rest/git/refs#update-a-reference"
	docGetRef       = "https://docs.github.com/rest/git/refs#get-a-reference"
	docPulls        = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
	docUpdatePull   = "https://docs.github.com/rest/pulls/pulls#update-a-pull-request"
	docComments     = "https://docs.github.com/rest/issues/comments#create-an-issue-comment"
	docEditComment  = "https://docs.github.com/rest/issues/comments#update-an-issue-comment"
	docReactions    = "https://docs.github.com/rest/reactions/reactions#create-reaction-for-an-issue-comment"
	docIssue        = "https://docs.github.com/rest/issues/issues#get-an-issue"
	docPermission   = "https://docs.github.com/rest/collaborators/collaborators#get-repository-permissions-for-a-user"
	docRepo         = "https://docs.github.com/rest/repos/repos#get-a-repository"
	docInstallation = "https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app"
)

// userJSON returns a user object shaped like GitHub's (from the comment
// fixture's user), for login; bots get type "Bot" and /apps/<slug> html_url.
func (s *Server) userJSON(login string) map[string]any {
	u := fixtureObject("issues-create-comment.json")["user"].(map[string]any)
	esc := strings.NewReplacer("[", "%5B", "]", "%5D").Replace(login)
	rewrite(u, strings.NewReplacer(
		"https://api.github.com/users/octocat", s.apiBase+"users/"+esc,
		"https://github.com/octocat", s.htmlBase+esc,
	))
	id := s.userID(login)
	u["login"] = login
	u["id"] = id
	u["node_id"] = nodeID("User", id)
	u["avatar_url"] = s.htmlBase + "avatars/" + esc
	u["type"] = "User"
	if strings.HasSuffix(login, "[bot]") {
		u["type"] = "Bot"
		u["node_id"] = nodeID("Bot", id)
		u["html_url"] = s.htmlBase + "apps/" + strings.TrimSuffix(login, "[bot]")
	}
	return u
}

// repoReplacer rewrites the fixtures' octocat/Hello-World URLs to rp's.
func (s *Server) repoReplacer(rp *repo) *strings.Replacer {
	full := rp.full()
	return strings.NewReplacer(
		"https://api.github.com/repos/octocat/Hello-World", s.apiBase+"repos/"+full,
		"https://api.github.com/repos/octokit/octokit.rb", s.apiBase+"repos/"+full,
		"https://github.com/octocat/Hello-World", s.htmlBase+full,
		"https://github.com/octokit/octokit.rb", s.htmlBase+full,
		"octocat/Hello-World", full,
		"https://api.github.com/", s.apiBase,
		"https://github.com/", s.htmlBase,
	)
}

// repoJSON returns a full repository object (the access-token fixture's).
func (s *Server) repoJSON(rp *repo) map[string]any {
	tmpl := fixtureObject("app-installation-access-token.json")["repositories"].([]any)[0].(map[string]any)
	r := rewrite(tmpl, s.repoReplacer(rp)).(map[string]any)
	r["id"] = rp.id
	r["node_id"] = nodeID("Repository", rp.id)
	r["name"] = rp.name
	r["full_name"] = rp.full()
	r["owner"] = s.userJSON(rp.owner)
	r["private"] = rp.private
	r["visibility"] = map[bool]string{true: "private", false: "public"}[rp.private]
	r["description"] = nil
	r["homepage"] = nil
	r["fork"] = false
	r["default_branch"] = rp.defaultBranch
	r["clone_url"] = s.CloneURL(rp.full())
	r["git_url"] = "git://" + s.host + "/" + rp.full() + ".git"
	r["ssh_url"] = "git@" + s.host + ":" + rp.full() + ".git"
	r["svn_url"] = s.htmlBase + rp.full()
	r["mirror_url"] = nil
	r["is_template"] = false
	r["allow_forking"] = true
	r["topics"] = []any{}
	r["forks_count"], r["stargazers_count"], r["watchers_count"], r["forks"], r["watchers"] = 0, 0, 0, 0, 0
	r["permissions"] = map[string]any{"admin": false, "maintain": false, "push": true, "triage": false, "pull": true}
	r["temp_clone_token"] = ""
	r["created_at"] = timestamp(rp.created)
	r["updated_at"] = timestamp(rp.created)
	r["pushed_at"] = timestamp(rp.created)
	return r
}
