package github

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gogithub "github.com/google/go-github/v66/github"
)

// Comment is an issue or pull request conversation comment.
type Comment struct {
	ID       int64
	User     string // login, e.g. "octocat" or "bestofn[bot]"
	UserType string // "User", "Bot" or "Organization"
	Body     string
	HTMLURL  string
}

func commentFrom(c *gogithub.IssueComment) Comment {
	return Comment{
		ID:       c.GetID(),
		User:     c.GetUser().GetLogin(),
		UserType: c.GetUser().GetType(),
		Body:     c.GetBody(),
		HTMLURL:  c.GetHTMLURL(),
	}
}

// Repository is what the bot needs to know about a repository.
type Repository struct {
	Owner, Name, FullName string
	DefaultBranch         string
	CloneURL              string // https clone URL, without credentials
	HTMLURL               string
	Private               bool
}

// Issue is an issue or a pull request seen through the issues API.
type Issue struct {
	Number      int
	Title, Body string
	User        string
	State       string // "open" or "closed"
	HTMLURL     string
	PullRequest bool // the number is a pull request
}

// FetchFile returns the content of the file at path on ref (the default
// branch when ref is empty), following
// https://docs.github.com/rest/repos/contents#get-repository-content.
// A missing path (404) gives found=false and a nil error; a directory or a
// symlink is an error. Files GitHub serves without content (1–100 MB) are read
// through the blob API instead.
func (c *Client) FetchFile(ctx context.Context, owner, repo, path, ref string) ([]byte, bool, error) {
	var opts *gogithub.RepositoryContentGetOptions
	if ref != "" {
		opts = &gogithub.RepositoryContentGetOptions{Ref: ref}
	}
	where := fmt.Sprintf("%s in %s/%s at %s", path, owner, repo, ref)
	if ref == "" {
		where = fmt.Sprintf("%s in %s/%s", path, owner, repo)
	}
	file, dir, _, err := c.gh.Repositories.GetContents(ctx, owner, repo, path, opts)
	if err != nil {
		if IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("get contents of %s: %w", where, err)
	}
	if file == nil || dir != nil {
		return nil, false, fmt.Errorf("get contents of %s: is a directory", where)
	}
	if t := file.GetType(); t != "file" {
		return nil, false, fmt.Errorf("get contents of %s: is a %s, not a file", where, t)
	}
	if file.GetEncoding() == "none" || (file.Content == nil && file.GetSize() > 0) {
		data, _, err := c.gh.Git.GetBlobRaw(ctx, owner, repo, file.GetSHA())
		if err != nil {
			return nil, false, fmt.Errorf("get blob %s for %s: %w", file.GetSHA(), where, err)
		}
		return data, true, nil
	}
	s, err := file.GetContent()
	if err != nil {
		return nil, false, fmt.Errorf("decode contents of %s: %w", where, err)
	}
	return []byte(s), true, nil
}

// IssueComments returns every comment on issue or pull request number, oldest
// first, reading all pages of
// https://docs.github.com/rest/issues/comments#list-issue-comments.
func (c *Client) IssueComments(ctx context.Context, owner, repo string, number int) ([]Comment, error) {
	opts := &gogithub.IssueListCommentsOptions{ListOptions: gogithub.ListOptions{PerPage: 100}}
	var out []Comment
	for {
		page, resp, err := c.gh.Issues.ListComments(ctx, owner, repo, number, opts)
		if err != nil {
			return nil, fmt.Errorf("list comments %s/%s#%d: %w", owner, repo, number, err)
		}
		for _, ic := range page {
			out = append(out, commentFrom(ic))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// CreateIssueComment posts body on issue or pull request number and returns
// the new comment, following
// https://docs.github.com/rest/issues/comments#create-an-issue-comment.
// A body over 65,536 characters is refused by GitHub (422).
func (c *Client) CreateIssueComment(ctx context.Context, owner, repo string, number int, body string) (Comment, error) {
	ic, _, err := c.gh.Issues.CreateComment(ctx, owner, repo, number, &gogithub.IssueComment{Body: &body})
	if err != nil {
		return Comment{}, fmt.Errorf("create comment on %s/%s#%d: %w", owner, repo, number, err)
	}
	return commentFrom(ic), nil
}

// EditIssueComment replaces the body of comment commentID, following
// https://docs.github.com/rest/issues/comments#update-an-issue-comment.
func (c *Client) EditIssueComment(ctx context.Context, owner, repo string, commentID int64, body string) error {
	_, _, err := c.gh.Issues.EditComment(ctx, owner, repo, commentID, &gogithub.IssueComment{Body: &body})
	if err != nil {
		return fmt.Errorf("edit comment %d on %s/%s: %w", commentID, owner, repo, err)
	}
	return nil
}

// AddCommentReaction reacts to comment commentID with content ("+1", "-1",
// "laugh", "confused", "heart", "hooray", "rocket" or "eyes"), following
// https://docs.github.com/rest/reactions/reactions#create-reaction-for-an-issue-comment.
// Reacting twice with the same content is not an error.
func (c *Client) AddCommentReaction(ctx context.Context, owner, repo string, commentID int64, content string) error {
	_, _, err := c.gh.Reactions.CreateIssueCommentReaction(ctx, owner, repo, commentID, content)
	if err != nil {
		return fmt.Errorf("react %q to comment %d on %s/%s: %w", content, commentID, owner, repo, err)
	}
	return nil
}

// AddIssueReaction reacts to issue or pull request number itself, following
// https://docs.github.com/rest/reactions/reactions#create-reaction-for-an-issue.
func (c *Client) AddIssueReaction(ctx context.Context, owner, repo string, number int, content string) error {
	_, _, err := c.gh.Reactions.CreateIssueReaction(ctx, owner, repo, number, content)
	if err != nil {
		return fmt.Errorf("react %q to %s/%s#%d: %w", content, owner, repo, number, err)
	}
	return nil
}

// Permission returns user's role on the repository: "admin", "maintain",
// "write", "triage", "read" or "none" (role_name when GitHub sends it, which
// distinguishes maintain and triage, else permission), following
// https://docs.github.com/rest/collaborators/collaborators#get-repository-permissions-for-a-user.
// A 404 (no such user, or none visible to the App) gives "none" and no error.
func (c *Client) Permission(ctx context.Context, owner, repo, user string) (string, error) {
	p, _, err := c.gh.Repositories.GetPermissionLevel(ctx, owner, repo, user)
	if err != nil {
		if IsNotFound(err) {
			return "none", nil
		}
		return "", fmt.Errorf("get permission of %s on %s/%s: %w", user, owner, repo, err)
	}
	if r := p.GetRoleName(); r != "" {
		return r, nil
	}
	if perm := p.GetPermission(); perm != "" {
		return perm, nil
	}
	return "none", nil
}

// Repository returns the repository's default branch, clone URL and
// visibility, following https://docs.github.com/rest/repos/repos#get-a-repository.
func (c *Client) Repository(ctx context.Context, owner, repo string) (Repository, error) {
	r, _, err := c.gh.Repositories.Get(ctx, owner, repo)
	if err != nil {
		return Repository{}, fmt.Errorf("get repository %s/%s: %w", owner, repo, err)
	}
	return Repository{
		Owner:         r.GetOwner().GetLogin(),
		Name:          r.GetName(),
		FullName:      r.GetFullName(),
		DefaultBranch: r.GetDefaultBranch(),
		CloneURL:      r.GetCloneURL(),
		HTMLURL:       r.GetHTMLURL(),
		Private:       r.GetPrivate(),
	}, nil
}

// Issue returns issue (or pull request) number, following
// https://docs.github.com/rest/issues/issues#get-an-issue.
func (c *Client) Issue(ctx context.Context, owner, repo string, number int) (Issue, error) {
	is, _, err := c.gh.Issues.Get(ctx, owner, repo, number)
	if err != nil {
		return Issue{}, fmt.Errorf("get issue %s/%s#%d: %w", owner, repo, number, err)
	}
	return Issue{
		Number:      is.GetNumber(),
		Title:       is.GetTitle(),
		Body:        is.GetBody(),
		User:        is.GetUser().GetLogin(),
		State:       is.GetState(),
		HTMLURL:     is.GetHTMLURL(),
		PullRequest: is.IsPullRequest(),
	}, nil
}

// BranchSHA returns the commit branch points at, following
// https://docs.github.com/rest/git/refs#get-a-reference. A missing branch
// gives found=false and a nil error.
func (c *Client) BranchSHA(ctx context.Context, owner, repo, branch string) (sha string, found bool, err error) {
	ref, _, err := c.gh.Git.GetRef(ctx, owner, repo, "heads/"+strings.TrimPrefix(branch, "refs/heads/"))
	if err != nil {
		if IsNotFound(err) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("get branch %s on %s/%s: %w", branch, owner, repo, err)
	}
	return ref.GetObject().GetSHA(), true, nil
}

// errNoChanges is returned by CommitFiles for an empty change list.
var errNoChanges = errors.New("no changes to commit")

// ReviewComment is a pull request review comment on a line of a file.
type ReviewComment struct {
	User string
	Path string
	Line int
	Body string
}

// ReviewComments returns every review comment on pull request number (all
// pages), following
// https://docs.github.com/rest/pulls/comments#list-review-comments-on-a-pull-request.
func (c *Client) ReviewComments(ctx context.Context, owner, repo string, number int) ([]ReviewComment, error) {
	opts := &gogithub.PullRequestListCommentsOptions{ListOptions: gogithub.ListOptions{PerPage: 100}}
	var out []ReviewComment
	for {
		page, resp, err := c.gh.PullRequests.ListComments(ctx, owner, repo, number, opts)
		if err != nil {
			return nil, fmt.Errorf("list review comments on %s/%s#%d: %w", owner, repo, number, err)
		}
		for _, rc := range page {
			if rc.GetUser().GetType() == "Bot" || strings.HasSuffix(rc.GetUser().GetLogin(), "[bot]") {
				continue
			}
			line := rc.GetLine()
			if line == 0 {
				line = rc.GetOriginalLine()
			}
			out = append(out, ReviewComment{User: rc.GetUser().GetLogin(), Path: rc.GetPath(), Line: line, Body: rc.GetBody()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}
