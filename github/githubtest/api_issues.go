package githubtest

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// maxCommentLength is GitHub's limit on a comment body, in characters.
const maxCommentLength = 65536

// paginate writes the page of items asked by ?page=&per_page= (GitHub's
// defaults: 30, at most 100) with a Link header for next/last/first/prev.
func (s *Server) paginate(w http.ResponseWriter, r *http.Request, items []any) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	last := max((len(items)+per-1)/per, 1)
	lo := min((page-1)*per, len(items))
	hi := min(lo+per, len(items))

	link := func(p int) string {
		u := url.URL{Scheme: "http", Host: s.host, Path: info(r).origPath}
		qq := r.URL.Query()
		qq.Set("page", strconv.Itoa(p))
		qq.Set("per_page", strconv.Itoa(per))
		u.RawQuery = qq.Encode()
		return "<" + u.String() + ">"
	}
	var rels []string
	if page < last {
		rels = append(rels, link(page+1)+`; rel="next"`, link(last)+`; rel="last"`)
	}
	if page > 1 {
		rels = append(rels, link(1)+`; rel="first"`, link(page-1)+`; rel="prev"`)
	}
	if len(rels) > 0 {
		w.Header().Set("Link", strings.Join(rels, ", "))
	}
	writeJSON(w, http.StatusOK, items[lo:hi])
}

// getRepo is GET /repos/{o}/{r}.
func (s *Server) getRepo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.repoJSON(repoOf(r)))
}

func (s *Server) issueNumber(w http.ResponseWriter, r *http.Request, doc string) (int, bool) {
	n, err := strconv.Atoi(chi.URLParam(r, "number"))
	if err != nil || n <= 0 {
		notFound(w, doc)
		return 0, false
	}
	return n, true
}

func (s *Server) commentHTMLURL(rp *repo, c *comment) string {
	kind := "issues"
	if _, ok := rp.pulls[c.issue]; ok {
		kind = "pull"
	}
	return fmt.Sprintf("%s%s/%s/%d#issuecomment-%d", s.htmlBase, rp.full(), kind, c.issue, c.id)
}

// commentJSON must be called with s.mu held.
func (s *Server) commentJSONLocked(rp *repo, c *comment) map[string]any {
	m := fixtureObject("issues-create-comment.json")
	m["id"] = c.id
	m["node_id"] = nodeID("IssueComment", c.id)
	m["url"] = fmt.Sprintf("%srepos/%s/issues/comments/%d", s.apiBase, rp.full(), c.id)
	m["html_url"] = s.commentHTMLURL(rp, c)
	m["issue_url"] = fmt.Sprintf("%srepos/%s/issues/%d", s.apiBase, rp.full(), c.issue)
	m["body"] = c.body
	m["created_at"] = timestamp(c.created)
	m["updated_at"] = timestamp(c.updated)
	m["author_association"] = "NONE"
	if c.user == rp.owner {
		m["author_association"] = "OWNER"
	}
	return m
}

// commentJSON returns the comment object; user objects need the lock released.
func (s *Server) commentJSON(rp *repo, c *comment) map[string]any {
	s.mu.Lock()
	m := s.commentJSONLocked(rp, c)
	user := c.user
	s.mu.Unlock()
	m["user"] = s.userJSON(user)
	if strings.HasSuffix(user, "[bot]") {
		m["performed_via_github_app"] = map[string]any{"id": s.AppID, "slug": s.AppSlug, "name": s.AppSlug}
	}
	return m
}

// listComments is GET /repos/{o}/{r}/issues/{n}/comments (paginated).
func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	n, ok := s.issueNumber(w, r, docComments)
	if !ok {
		return
	}
	s.mu.Lock()
	var cs []*comment
	for _, c := range rp.comments {
		if c.issue == n {
			cs = append(cs, c)
		}
	}
	s.mu.Unlock()
	items := make([]any, 0, len(cs))
	for _, c := range cs {
		items = append(items, s.commentJSON(rp, c))
	}
	s.paginate(w, r, items)
}

// createComment is POST /repos/{o}/{r}/issues/{n}/comments. The author is the
// App's bot. A number that is neither an issue nor a pull request becomes an
// issue (real GitHub would answer 404).
func (s *Server) createComment(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	n, ok := s.issueNumber(w, r, docComments)
	if !ok {
		return
	}
	text, ok := commentBody(w, r, docComments)
	if !ok {
		return
	}
	id := s.nextID()
	now := time.Now()
	c := &comment{id: id, issue: n, user: s.BotLogin, body: text, created: now, updated: now}
	s.mu.Lock()
	s.ensureIssueLocked(rp, n)
	rp.comments = append(rp.comments, c)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, s.commentJSON(rp, c))
}

func (s *Server) findComment(rp *repo, r *http.Request) *comment {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range rp.comments {
		if c.id == id {
			return c
		}
	}
	return nil
}

// getComment is GET /repos/{o}/{r}/issues/comments/{id}.
func (s *Server) getComment(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	c := s.findComment(rp, r)
	if c == nil {
		notFound(w, docEditComment)
		return
	}
	writeJSON(w, http.StatusOK, s.commentJSON(rp, c))
}

// editComment is PATCH /repos/{o}/{r}/issues/comments/{id}; it counts edits.
func (s *Server) editComment(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	c := s.findComment(rp, r)
	if c == nil {
		notFound(w, docEditComment)
		return
	}
	text, ok := commentBody(w, r, docEditComment)
	if !ok {
		return
	}
	s.mu.Lock()
	if c.user != s.BotLogin {
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, "Resource not accessible by integration", docEditComment)
		return
	}
	c.body = text
	c.edits++
	c.updated = time.Now()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.commentJSON(rp, c))
}

var reactionContents = map[string]bool{"+1": true, "-1": true, "laugh": true, "confused": true, "heart": true, "hooray": true, "rocket": true, "eyes": true}

// react records a reaction by the bot: 201, or 200 with the same reaction
// when the bot already reacted so.
func (s *Server) react(w http.ResponseWriter, r *http.Request, rx Reaction) {
	var body struct {
		Content string `json:"content"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if !reactionContents[body.Content] {
		writeValidation(w, "Reaction", "content", "invalid", "", docReactions)
		return
	}
	rx.Content, rx.User = body.Content, s.BotLogin
	status := http.StatusCreated
	s.mu.Lock()
	for _, old := range s.reactions {
		if old == rx {
			status = http.StatusOK
		}
	}
	if status == http.StatusCreated {
		s.reactions = append(s.reactions, rx)
	}
	s.mu.Unlock()
	m := fixtureObject("reactions-create-for-issue-comment.json")
	id := s.nextID()
	m["id"] = id
	m["node_id"] = nodeID("Reaction", id)
	m["user"] = s.userJSON(s.BotLogin)
	m["content"] = body.Content
	m["created_at"] = timestamp(time.Now())
	writeJSON(w, status, m)
}

// createCommentReaction is POST /repos/{o}/{r}/issues/comments/{id}/reactions.
func (s *Server) createCommentReaction(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	c := s.findComment(rp, r)
	if c == nil {
		notFound(w, docReactions)
		return
	}
	s.react(w, r, Reaction{Repo: rp.full(), CommentID: c.id})
}

// createIssueReaction is POST /repos/{o}/{r}/issues/{n}/reactions.
func (s *Server) createIssueReaction(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	n, ok := s.issueNumber(w, r, docReactions)
	if !ok {
		return
	}
	s.mu.Lock()
	_, isIssue := rp.issues[n]
	_, isPull := rp.pulls[n]
	s.mu.Unlock()
	if !isIssue && !isPull {
		notFound(w, docReactions)
		return
	}
	s.react(w, r, Reaction{Repo: rp.full(), Issue: n})
}

// getIssue is GET /repos/{o}/{r}/issues/{n} (pull requests included).
func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	n, ok := s.issueNumber(w, r, docIssue)
	if !ok {
		return
	}
	s.mu.Lock()
	is, isIssue := rp.issues[n]
	p, isPull := rp.pulls[n]
	var title, body, user, state string
	var created time.Time
	var comments int
	for _, c := range rp.comments {
		if c.issue == n {
			comments++
		}
	}
	switch {
	case isIssue:
		title, body, user, state, created = is.title, is.body, is.user, is.state, is.created
	case isPull:
		title, body, user, state, created = p.title, p.body, p.user, p.state, p.created
	}
	s.mu.Unlock()
	if !isIssue && !isPull {
		notFound(w, docIssue)
		return
	}
	payload := fixtureObject("webhook-issues.opened.json")
	m := payload["issue"].(map[string]any)
	rewrite(m, strings.NewReplacer(
		"https://api.github.com/repos/Codertocat/Hello-World", s.apiBase+"repos/"+rp.full(),
		"https://github.com/Codertocat/Hello-World", s.htmlBase+rp.full(),
	))
	full := rp.full()
	id := int64(n) + rp.id*100000
	kind := "issues"
	if isPull {
		kind = "pull"
	}
	m["url"] = fmt.Sprintf("%srepos/%s/issues/%d", s.apiBase, full, n)
	m["repository_url"] = s.apiBase + "repos/" + full
	m["labels_url"] = fmt.Sprintf("%srepos/%s/issues/%d/labels{/name}", s.apiBase, full, n)
	m["comments_url"] = fmt.Sprintf("%srepos/%s/issues/%d/comments", s.apiBase, full, n)
	m["events_url"] = fmt.Sprintf("%srepos/%s/issues/%d/events", s.apiBase, full, n)
	m["html_url"] = fmt.Sprintf("%s%s/%s/%d", s.htmlBase, full, kind, n)
	m["id"] = id
	m["node_id"] = nodeID("Issue", id)
	m["number"] = n
	m["title"] = title
	m["body"] = body
	m["user"] = s.userJSON(user)
	m["labels"] = []any{}
	m["state"] = state
	m["locked"] = false
	m["assignee"] = nil
	m["assignees"] = []any{}
	m["milestone"] = nil
	m["comments"] = comments
	m["created_at"] = timestamp(created)
	m["updated_at"] = timestamp(created)
	m["closed_at"] = nil
	m["author_association"] = "OWNER"
	if isPull {
		m["pull_request"] = map[string]any{
			"url":       fmt.Sprintf("%srepos/%s/pulls/%d", s.apiBase, full, n),
			"html_url":  fmt.Sprintf("%s%s/pull/%d", s.htmlBase, full, n),
			"diff_url":  fmt.Sprintf("%s%s/pull/%d.diff", s.htmlBase, full, n),
			"patch_url": fmt.Sprintf("%s%s/pull/%d.patch", s.htmlBase, full, n),
			"merged_at": nil,
		}
	}
	writeJSON(w, http.StatusOK, m)
}

// roles maps a role to the legacy permission GitHub reports beside role_name.
var roles = map[string]string{"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read", "none": "none"}

// getPermission is GET /repos/{o}/{r}/collaborators/{user}/permission.
func (s *Server) getPermission(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	login := chi.URLParam(r, "user")
	s.mu.Lock()
	role, ok := s.perms[rp.full()][login]
	s.mu.Unlock()
	if !ok {
		role = "read"
	}
	perm, known := roles[role]
	if !known {
		perm = "read" // a custom role
	}
	m := fixtureObject("collaborator-permission.json")
	m["permission"] = perm
	m["role_name"] = role
	u := s.userJSON(login)
	u["permissions"] = map[string]any{
		"admin": perm == "admin", "maintain": role == "maintain" || perm == "admin",
		"push": perm == "admin" || perm == "write", "triage": role == "triage" || perm == "admin" || perm == "write",
		"pull": perm != "none",
	}
	u["role_name"] = role
	m["user"] = u
	writeJSON(w, http.StatusOK, m)
}

// --- pull requests ---

func (s *Server) pullJSON(rp *repo, p pull) map[string]any {
	full := rp.full()
	n := strconv.Itoa(p.number)
	m := fixtureObject("pulls-create.json")
	rewrite(m, strings.NewReplacer(
		"https://api.github.com/repos/octocat/Hello-World/pulls/1347", s.apiBase+"repos/"+full+"/pulls/"+n,
		"https://api.github.com/repos/octocat/Hello-World/issues/1347", s.apiBase+"repos/"+full+"/issues/"+n,
		"https://github.com/octocat/Hello-World/pull/1347", s.htmlBase+full+"/pull/"+n,
		"https://api.github.com/repos/octocat/Hello-World", s.apiBase+"repos/"+full,
		"https://github.com/octocat/Hello-World", s.htmlBase+full,
		"https://api.github.com/", s.apiBase,
		"https://github.com/", s.htmlBase,
	))
	headSHA, _ := s.resolve(rp, "refs/heads/"+p.head)
	baseSHA, _ := s.resolve(rp, "refs/heads/"+p.base)
	m["id"] = p.id
	m["node_id"] = nodeID("PullRequest", p.id)
	m["number"] = p.number
	m["statuses_url"] = s.apiBase + "repos/" + full + "/statuses/" + headSHA
	m["state"] = p.state
	m["locked"] = false
	m["title"] = p.title
	m["user"] = s.userJSON(p.user)
	m["body"] = p.body
	m["labels"] = []any{}
	m["milestone"] = nil
	m["active_lock_reason"] = nil
	m["created_at"] = timestamp(p.created)
	m["updated_at"] = timestamp(p.updated)
	m["closed_at"] = nil
	if p.closed != nil {
		m["closed_at"] = timestamp(*p.closed)
	}
	m["merged_at"] = nil
	m["merge_commit_sha"] = nil
	m["assignee"] = nil
	m["assignees"] = []any{}
	m["requested_reviewers"] = []any{}
	m["requested_teams"] = []any{}
	owner := s.userJSON(rp.owner)
	repoObj := s.repoJSON(rp)
	side := func(key, branch, sha string) {
		o := m[key].(map[string]any)
		o["label"] = rp.owner + ":" + branch
		o["ref"] = branch
		o["sha"] = sha
		o["user"] = owner
		o["repo"] = repoObj
	}
	side("head", p.head, headSHA)
	side("base", p.base, baseSHA)
	m["_links"] = map[string]any{
		"self":            map[string]any{"href": s.apiBase + "repos/" + full + "/pulls/" + n},
		"html":            map[string]any{"href": s.htmlBase + full + "/pull/" + n},
		"issue":           map[string]any{"href": s.apiBase + "repos/" + full + "/issues/" + n},
		"comments":        map[string]any{"href": s.apiBase + "repos/" + full + "/issues/" + n + "/comments"},
		"review_comments": map[string]any{"href": s.apiBase + "repos/" + full + "/pulls/" + n + "/comments"},
		"review_comment":  map[string]any{"href": s.apiBase + "repos/" + full + "/pulls/comments{/number}"},
		"commits":         map[string]any{"href": s.apiBase + "repos/" + full + "/pulls/" + n + "/commits"},
		"statuses":        map[string]any{"href": s.apiBase + "repos/" + full + "/statuses/" + headSHA},
	}
	m["author_association"] = "NONE"
	m["auto_merge"] = nil
	m["draft"] = p.draft
	m["merged"] = false
	m["mergeable"] = nil
	m["rebaseable"] = nil
	m["mergeable_state"] = "unknown"
	m["merged_by"] = nil
	s.mu.Lock()
	comments := 0
	for _, c := range rp.comments {
		if c.issue == p.number {
			comments++
		}
	}
	s.mu.Unlock()
	m["comments"] = comments
	m["review_comments"] = 0
	m["maintainer_can_modify"] = false
	commits, _ := s.gitLine(rp.dir, nil, nil, "rev-list", "--count", baseSHA+".."+headSHA)
	m["commits"], _ = strconv.Atoi(commits)
	m["additions"], m["deletions"], m["changed_files"] = 0, 0, 0
	if stat, err := s.gitLine(rp.dir, nil, nil, "diff", "--numstat", baseSHA+"..."+headSHA); err == nil {
		add, del, files := 0, 0, 0
		for _, line := range strings.Split(stat, "\n") {
			f := strings.Fields(line)
			if len(f) < 3 {
				continue
			}
			a, _ := strconv.Atoi(f[0])
			d, _ := strconv.Atoi(f[1])
			add, del, files = add+a, del+d, files+1
		}
		m["additions"], m["deletions"], m["changed_files"] = add, del, files
	}
	return m
}

// splitHead turns "owner:branch" or "branch" into the branch, checking the owner.
func splitHead(rp *repo, head string) (string, bool) {
	if o, b, ok := strings.Cut(head, ":"); ok {
		return b, o == rp.owner && b != ""
	}
	return head, head != ""
}

// listPulls is GET /repos/{o}/{r}/pulls?state=&head=owner:branch&base=.
// Like GitHub, a head filter without "owner:" is ignored.
func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head := q.Get("head")
	var headOwner, headBranch string
	if o, b, ok := strings.Cut(head, ":"); ok {
		headOwner, headBranch = o, b
	}
	base := q.Get("base")
	s.mu.Lock()
	var ps []pull
	for _, p := range rp.pulls {
		if state != "all" && p.state != state {
			continue
		}
		if headOwner != "" && (headOwner != rp.owner || p.head != headBranch) {
			continue
		}
		if base != "" && p.base != base {
			continue
		}
		ps = append(ps, *p)
	}
	s.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool { return ps[i].number > ps[j].number })
	items := make([]any, 0, len(ps))
	for _, p := range ps {
		items = append(items, s.pullJSON(rp, p))
	}
	s.paginate(w, r, items)
}

// createPull is POST /repos/{o}/{r}/pulls, with GitHub's 422s: unknown
// head/base, no commits between them, an open pull request for the head
// already, a draft where drafts are not supported.
func (s *Server) createPull(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	var body struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
		Draft bool   `json:"draft"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Title == "" {
		writeValidation(w, "PullRequest", "title", "missing_field", "", docPulls)
		return
	}
	head, ok := splitHead(rp, body.Head)
	if !ok {
		writeValidation(w, "PullRequest", "head", "invalid", "", docPulls)
		return
	}
	headSHA, ok := s.resolve(rp, "refs/heads/"+head)
	if !ok {
		writeValidation(w, "PullRequest", "head", "invalid", "", docPulls)
		return
	}
	baseSHA, ok := s.resolve(rp, "refs/heads/"+body.Base)
	if !ok {
		writeValidation(w, "PullRequest", "base", "invalid", "", docPulls)
		return
	}
	if _, err := s.git(rp.dir, nil, nil, "merge-base", "--is-ancestor", headSHA, baseSHA); err == nil {
		b := fixtureObject("pulls-create-422-no-commits.json")
		b["errors"].([]any)[0].(map[string]any)["message"] = fmt.Sprintf("No commits between %s:%s and %s:%s", rp.owner, body.Base, rp.owner, head)
		writeJSON(w, http.StatusUnprocessableEntity, b)
		return
	}
	s.mu.Lock()
	draftUnsupported := s.draftUnsupported[rp.full()]
	for _, p := range rp.pulls {
		if p.state == "open" && p.head == head && p.base == body.Base {
			s.mu.Unlock()
			b := fixtureObject("pulls-create-422-already-exists.json")
			b["errors"].([]any)[0].(map[string]any)["message"] = fmt.Sprintf("A pull request already exists for %s:%s.", rp.owner, head)
			writeJSON(w, http.StatusUnprocessableEntity, b)
			return
		}
	}
	if body.Draft && draftUnsupported {
		s.mu.Unlock()
		writeValidation(w, "PullRequest", "", "custom", "Draft pull requests are not supported in this repository.", docPulls)
		return
	}
	s.ids++
	now := time.Now()
	p := &pull{
		id: s.ids, number: rp.next, title: body.Title, body: body.Body, head: head, base: body.Base,
		draft: body.Draft, state: "open", user: s.BotLogin, created: now, updated: now,
	}
	rp.next++
	rp.pulls[p.number] = p
	cp := *p
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, s.pullJSON(rp, cp))
}

func (s *Server) findPull(w http.ResponseWriter, r *http.Request, doc string) (*pull, bool) {
	rp := repoOf(r)
	n, ok := s.issueNumber(w, r, doc)
	if !ok {
		return nil, false
	}
	s.mu.Lock()
	p := rp.pulls[n]
	s.mu.Unlock()
	if p == nil {
		notFound(w, doc)
		return nil, false
	}
	return p, true
}

// getPull is GET /repos/{o}/{r}/pulls/{n}.
func (s *Server) getPull(w http.ResponseWriter, r *http.Request) {
	p, ok := s.findPull(w, r, "https://docs.github.com/rest/pulls/pulls#get-a-pull-request")
	if !ok {
		return
	}
	s.mu.Lock()
	cp := *p
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.pullJSON(repoOf(r), cp))
}

// updatePull is PATCH /repos/{o}/{r}/pulls/{n}: title, body, state, base.
func (s *Server) updatePull(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	p, ok := s.findPull(w, r, docUpdatePull)
	if !ok {
		return
	}
	var body struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.State != nil && *body.State != "open" && *body.State != "closed" {
		writeValidation(w, "PullRequest", "state", "invalid", "", docUpdatePull)
		return
	}
	if body.Base != nil {
		if _, ok := s.resolve(rp, "refs/heads/"+*body.Base); !ok {
			writeValidation(w, "PullRequest", "base", "invalid", "", docUpdatePull)
			return
		}
	}
	s.mu.Lock()
	if body.Title != nil {
		p.title = *body.Title
	}
	if body.Body != nil {
		p.body = *body.Body
	}
	if body.State != nil {
		p.state = *body.State
		if p.state == "closed" {
			now := time.Now()
			p.closed = &now
		} else {
			p.closed = nil
		}
	}
	if body.Base != nil {
		p.base = *body.Base
	}
	p.edits++
	p.updated = time.Now()
	cp := *p
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.pullJSON(rp, cp))
}

// reviewComment is a pull request review comment on one line.
type reviewComment struct {
	id      int64
	pr      int
	user    string
	path    string
	line    int
	body    string
	created time.Time
}

// listReviewComments serves GET /repos/{o}/{r}/pulls/{n}/comments
// (https://docs.github.com/rest/pulls/comments#list-review-comments-on-a-pull-request).
func (s *Server) listReviewComments(w http.ResponseWriter, r *http.Request) {
	rp := repoOf(r)
	n, err := strconv.Atoi(chi.URLParam(r, "number"))
	if err != nil {
		notFound(w, "https://docs.github.com/rest/pulls/comments#list-review-comments-on-a-pull-request")
		return
	}
	s.mu.Lock()
	var cs []reviewComment
	for _, c := range rp.reviews {
		if c.pr == n {
			cs = append(cs, *c)
		}
	}
	s.mu.Unlock() // userJSON takes the lock itself
	items := []any{}
	for _, c := range cs {
		items = append(items, map[string]any{
			"id": c.id, "node_id": nodeID("PullRequestReviewComment", c.id), "path": c.path, "line": c.line,
			"original_line": c.line, "side": "RIGHT", "body": c.body, "user": s.userJSON(c.user),
			"created_at": timestamp(c.created), "updated_at": timestamp(c.created),
			"html_url":           fmt.Sprintf("%s%s/pull/%d#discussion_r%d", s.htmlBase, rp.full(), n, c.id),
			"author_association": "OWNER", "pull_request_review_id": c.id,
		})
	}
	s.paginate(w, r, items)
}

// commentBody reads a comment's body from a create or edit request, answering
// GitHub's 422s itself (missing body, body over the length limit); ok is
// false when it answered.
func commentBody(w http.ResponseWriter, r *http.Request, doc string) (string, bool) {
	var body struct {
		Body *string `json:"body"`
	}
	if !decodeBody(w, r, &body) {
		return "", false
	}
	if body.Body == nil || *body.Body == "" {
		writeValidation(w, "IssueComment", "body", "missing_field", "", doc)
		return "", false
	}
	if len([]rune(*body.Body)) > maxCommentLength {
		writeBody(w, http.StatusUnprocessableEntity, fixtureBytes("issues-create-comment-422-body-too-long.json"))
		return "", false
	}
	return *body.Body, true
}
