package github

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	gogithub "github.com/google/go-github/v66/github"
)

// File modes accepted in a FileChange.
const (
	ModeFile       = "100644"
	ModeExecutable = "100755"
	ModeSymlink    = "120000"
)

// CommitRequest describes one commit made through the Git Data API.
type CommitRequest struct {
	// BaseCommit is the sha of the single parent; its tree is the base tree.
	BaseCommit string
	// Message is the commit message.
	Message string
	// Changes are the files to add, modify or delete; paths are relative to
	// the repository root, with "/" separators.
	Changes []FileChange
}

// FileChange is one path in a CommitRequest.
type FileChange struct {
	Path string
	// Mode is ModeFile (the default when empty), ModeExecutable or ModeSymlink
	// (Content is then the link target).
	Mode    string
	Content []byte
	// Delete removes Path; Mode and Content are ignored.
	Delete bool
}

// CommitFiles makes one commit on top of req.BaseCommit with req.Changes and
// returns its sha, following https://docs.github.com/rest/git: it reads the
// base commit to learn its tree, creates one blob per added or modified file
// (base64), a tree over the base tree (a deleted path is an entry with a null
// sha), and a commit whose only parent is BaseCommit. No author or committer
// is sent, so GitHub attributes the commit to the App and signs it (verified).
// The commit is not on any branch until SetBranch.
func (c *Client) CommitFiles(ctx context.Context, owner, repo string, req CommitRequest) (string, error) {
	if req.BaseCommit == "" {
		return "", fmt.Errorf("commit on %s/%s: no base commit", owner, repo)
	}
	if len(req.Changes) == 0 {
		return "", fmt.Errorf("commit on %s/%s: %w", owner, repo, errNoChanges)
	}
	changes := make([]FileChange, 0, len(req.Changes))
	seen := make(map[string]bool, len(req.Changes))
	for _, ch := range req.Changes {
		p := strings.TrimPrefix(ch.Path, "/")
		if p == "" || strings.HasSuffix(p, "/") || strings.Contains(p, "//") {
			return "", fmt.Errorf("commit on %s/%s: bad path %q", owner, repo, ch.Path)
		}
		if seen[p] {
			return "", fmt.Errorf("commit on %s/%s: path %q changed twice", owner, repo, p)
		}
		seen[p] = true
		ch.Path = p
		if ch.Mode == "" || ch.Delete {
			ch.Mode = ModeFile
		}
		switch ch.Mode {
		case ModeFile, ModeExecutable, ModeSymlink:
		default:
			return "", fmt.Errorf("commit on %s/%s: path %q: unsupported mode %q", owner, repo, p, ch.Mode)
		}
		changes = append(changes, ch)
	}

	base, _, err := c.gh.Git.GetCommit(ctx, owner, repo, req.BaseCommit)
	if err != nil {
		return "", fmt.Errorf("get commit %s in %s/%s: %w", req.BaseCommit, owner, repo, err)
	}
	entries := make([]*gogithub.TreeEntry, 0, len(changes))
	for _, ch := range changes {
		if ch.Delete {
			// go-github sends "sha": null for an entry with neither SHA nor Content.
			entries = append(entries, &gogithub.TreeEntry{Path: gogithub.String(ch.Path), Mode: gogithub.String(ch.Mode), Type: gogithub.String("blob")})
			continue
		}
		blob, _, err := c.gh.Git.CreateBlob(ctx, owner, repo, &gogithub.Blob{
			Content:  gogithub.String(base64.StdEncoding.EncodeToString(ch.Content)),
			Encoding: gogithub.String("base64"),
		})
		if err != nil {
			return "", fmt.Errorf("create blob for %s in %s/%s: %w", ch.Path, owner, repo, err)
		}
		entries = append(entries, &gogithub.TreeEntry{Path: gogithub.String(ch.Path), Mode: gogithub.String(ch.Mode), Type: gogithub.String("blob"), SHA: blob.SHA})
	}
	tree, _, err := c.gh.Git.CreateTree(ctx, owner, repo, base.GetTree().GetSHA(), entries)
	if err != nil {
		return "", fmt.Errorf("create tree in %s/%s: %w", owner, repo, err)
	}
	commit, _, err := c.gh.Git.CreateCommit(ctx, owner, repo, &gogithub.Commit{
		Message: gogithub.String(req.Message),
		Tree:    &gogithub.Tree{SHA: tree.SHA},
		Parents: []*gogithub.Commit{{SHA: gogithub.String(req.BaseCommit)}},
	}, nil)
	if err != nil {
		return "", fmt.Errorf("create commit in %s/%s: %w", owner, repo, err)
	}
	return commit.GetSHA(), nil
}

// SetBranch points refs/heads/<branch> at sha: it creates the branch
// (https://docs.github.com/rest/git/refs#create-a-reference) and, when GitHub
// answers 422 "Reference already exists", force-updates it
// (https://docs.github.com/rest/git/refs#update-a-reference). It never fails
// because the branch exists.
func (c *Client) SetBranch(ctx context.Context, owner, repo, branch, sha string) error {
	branch = strings.TrimPrefix(branch, "refs/heads/")
	ref := &gogithub.Reference{
		Ref:    gogithub.String("refs/heads/" + branch),
		Object: &gogithub.GitObject{SHA: gogithub.String(sha)},
	}
	_, _, err := c.gh.Git.CreateRef(ctx, owner, repo, ref)
	if err == nil {
		return nil
	}
	if !errorMentions(err, http.StatusUnprocessableEntity, "already exists") {
		return fmt.Errorf("create branch %s on %s/%s: %w", branch, owner, repo, err)
	}
	if _, _, err := c.gh.Git.UpdateRef(ctx, owner, repo, ref, true); err != nil {
		return fmt.Errorf("update branch %s on %s/%s: %w", branch, owner, repo, err)
	}
	return nil
}

// PullRequestSpec describes the pull request EnsurePullRequest keeps.
type PullRequestSpec struct {
	Head  string // branch in the same repository (or "owner:branch")
	Base  string // target branch, usually the default branch
	Title string
	Body  string
	Draft bool
}

// EnsurePullRequest makes sure one open pull request exists from spec.Head
// into spec.Base and returns its number and URL. It looks for an open pull
// request with that head (https://docs.github.com/rest/pulls/pulls#list-pull-requests,
// head=owner:branch); when there is one it updates its title and body
// (created=false), else it creates one
// (https://docs.github.com/rest/pulls/pulls#create-a-pull-request). A draft
// refused with 422 "Draft pull requests are not supported" is retried as a
// normal pull request; a 422 "A pull request already exists" (a race with
// another run) falls back to updating the existing one.
func (c *Client) EnsurePullRequest(ctx context.Context, owner, repo string, spec PullRequestSpec) (number int, htmlURL string, created bool, err error) {
	head := spec.Head
	if !strings.Contains(head, ":") {
		head = owner + ":" + head
	}
	if n, u, ok, err := c.updateOpenPull(ctx, owner, repo, head, spec); err != nil || ok {
		return n, u, false, err
	}
	np := &gogithub.NewPullRequest{
		Title: gogithub.String(spec.Title),
		Head:  gogithub.String(spec.Head),
		Base:  gogithub.String(spec.Base),
		Body:  gogithub.String(spec.Body),
		Draft: gogithub.Bool(spec.Draft),
	}
	pr, _, err := c.gh.PullRequests.Create(ctx, owner, repo, np)
	if err != nil && spec.Draft && errorMentions(err, http.StatusUnprocessableEntity, "draft pull requests are not supported") {
		np.Draft = gogithub.Bool(false)
		pr, _, err = c.gh.PullRequests.Create(ctx, owner, repo, np)
	}
	if err != nil && errorMentions(err, http.StatusUnprocessableEntity, "a pull request already exists") {
		if n, u, ok, err2 := c.updateOpenPull(ctx, owner, repo, head, spec); err2 == nil && ok {
			return n, u, false, nil
		}
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("create pull request %s/%s (head %s, base %s): %w", owner, repo, spec.Head, spec.Base, err)
	}
	return pr.GetNumber(), pr.GetHTMLURL(), true, nil
}

// updateOpenPull updates the title and body of the open pull request from
// head ("owner:branch"), if there is one.
func (c *Client) updateOpenPull(ctx context.Context, owner, repo, head string, spec PullRequestSpec) (int, string, bool, error) {
	prs, _, err := c.gh.PullRequests.List(ctx, owner, repo, &gogithub.PullRequestListOptions{
		State:       "open",
		Head:        head,
		ListOptions: gogithub.ListOptions{PerPage: 100},
	})
	if err != nil {
		return 0, "", false, fmt.Errorf("list pull requests %s/%s head %s: %w", owner, repo, head, err)
	}
	for _, pr := range prs {
		// Compare the head ourselves too: GitHub ignores a malformed head filter.
		label := pr.GetHead().GetLabel()
		if label != head && (label != "" || owner+":"+pr.GetHead().GetRef() != head) {
			continue
		}
		edit := &gogithub.PullRequest{Title: gogithub.String(spec.Title), Body: gogithub.String(spec.Body)}
		upd, _, err := c.gh.PullRequests.Edit(ctx, owner, repo, pr.GetNumber(), edit)
		if err != nil {
			return 0, "", false, fmt.Errorf("update pull request %s/%s#%d: %w", owner, repo, pr.GetNumber(), err)
		}
		return upd.GetNumber(), upd.GetHTMLURL(), true, nil
	}
	return 0, "", false, nil
}
