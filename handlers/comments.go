package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bestofn/bestofn/store"
)

// Job kinds besides JobRun. None of them holds the per-issue run lock.
const (
	JobReply        = "reply"        // post a reply (and a reaction)
	JobCommand      = "command"      // pick, cancel, status
	JobPRClosed     = "pr_closed"    // record how the bot's pull request ended
	JobInstallation = "installation" // record an installation's creation or removal
)

// replyRequest is a reply job's payload.
type replyRequest struct {
	Owner, Name string
	Number      int
	// CommentID, when set, gets Reaction ("-1" for a refusal, "eyes" when taken).
	CommentID int64
	Reaction  string
	Body      string
	// Busy asks for the "a run is already in progress" text, written when
	// the job runs (who started the active run and how long ago).
	Busy  bool
	Issue int
}

// commandRequest is a command job's payload.
type commandRequest struct {
	Owner, Name   string
	DefaultBranch string
	CloneURL      string
	// Number is where the command was given (issue or pull request);
	// Issue is the issue it is about.
	Number, Issue int
	PR            int
	Sender        string
	Association   string
	CommentID     int64
	Verb          string
	Pick          int
}

func jobOf(kind string, installation int64, repo string, issue int, payload any) (*store.Job, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	return &store.Job{Kind: kind, InstallationID: installation, Repo: repo, Issue: issue, Payload: data}, nil
}

// busyReply is the job recorded instead of a run when one is already active.
func busyReply(run *store.Job, owner, name string, number int, commentID int64) *store.Job {
	j, _ := jobOf(JobReply, run.InstallationID, run.Repo, run.Issue,
		replyRequest{Owner: owner, Name: name, Number: number, CommentID: commentID, Reaction: "-1", Busy: true, Issue: run.Issue})
	return j
}

// decideIssueComment handles the issue_comment event
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#issue_comment).
// Only new comments by people that hold a /bestofn command count. The
// payload's issue.pull_request key tells a pull request's conversation from
// an issue's: run commands go on issues, retry, revise and pick on pull
// requests the bot opened (known from the store), cancel and status on
// either. Anything the bot cannot do gets a reply job, never silence.
func (s *Server) decideIssueComment(ctx context.Context, body []byte) (decision, error) {
	var ev gogithub.IssueCommentEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	if ev.GetAction() != "created" {
		return decision{reason: "issue_comment action " + ev.GetAction()}, nil
	}
	if isBot(ev.GetSender()) || isBot(ev.GetComment().GetUser()) {
		return decision{reason: "comment by a bot"}, nil
	}
	if ev.Issue == nil || ev.Repo == nil || ev.Comment == nil {
		return decision{}, errors.New("issue_comment without issue, repository or comment")
	}
	inst := ev.GetInstallation().GetID()
	if inst == 0 {
		return decision{reason: "no installation in the payload (not a GitHub App delivery)"}, nil
	}
	p := ParseCommand(ev.Comment.GetBody())
	if p.Ignore {
		return decision{reason: "no command"}, nil
	}
	owner, name := ev.Repo.GetOwner().GetLogin(), ev.Repo.GetName()
	repo, number, isPR := owner+"/"+name, ev.Issue.GetNumber(), ev.Issue.IsPullRequest()
	if owner == "" || name == "" || number == 0 {
		return decision{}, errors.New("issue_comment without repository owner, name or issue number")
	}
	commentID := ev.Comment.GetID()
	replyJob := func(reaction, text string) (decision, error) {
		j, err := jobOf(JobReply, inst, repo, number, replyRequest{Owner: owner, Name: name, Number: number,
			CommentID: commentID, Reaction: reaction, Body: text})
		return decision{job: j}, err
	}
	if p.Reply != "" {
		return replyJob("-1", p.Reply)
	}
	cmd := p.Command
	if cmd.Verb == VerbHelp {
		return replyJob("eyes", Usage)
	}
	// On a pull request, the issue is the one the bot's run was for.
	issue := number
	pr := 0
	if isPR {
		switch cmd.Verb {
		case VerbRun:
			return replyJob("-1", "On a pull request, use `/bestofn retry` for a fresh run or `/bestofn revise <what to change>`; `/bestofn` and `/bestofn <k>` go on the issue.")
		}
		run, err := s.opts.Store.RunForPR(ctx, repo, number)
		if errors.Is(err, store.ErrNotFound) {
			return replyJob("-1", "bestofn did not open this pull request, so it takes no commands here. Start a run on the issue with `/bestofn`.")
		}
		if err != nil {
			return decision{}, fmt.Errorf("look up pull request: %w", err)
		}
		if outcome, err := s.opts.Store.PROutcome(ctx, run.ID); err != nil {
			return decision{}, fmt.Errorf("look up pull request: %w", err)
		} else if outcome != "" && cmd.Verb != VerbStatus {
			return replyJob("-1", fmt.Sprintf("This pull request was %s; bestofn takes no more commands here. Start a new run on #%d with `/bestofn`.", outcome, run.Issue))
		}
		issue, pr = run.Issue, number
	} else if cmd.Verb == VerbRetry || cmd.Verb == VerbRevise || cmd.Verb == VerbPick {
		return replyJob("-1", fmt.Sprintf("`/bestofn %s` works on a pull request bestofn opened; on an issue, use `/bestofn` or `/bestofn <k>`.", cmd.Verb))
	}
	switch cmd.Verb {
	case VerbRun, VerbRetry, VerbRevise:
		req := runRequest{
			Owner: owner, Name: name, CloneURL: ev.Repo.GetCloneURL(), DefaultBranch: ev.Repo.GetDefaultBranch(),
			Issue: issue, IssueURL: ev.Issue.GetHTMLURL(), Sender: ev.GetSender().GetLogin(),
			Association: ev.Comment.GetAuthorAssociation(), CommentID: commentID, Attempts: cmd.Attempts,
			Trigger: TriggerComment, PR: pr, Revise: cmd.Text,
		}
		if !isPR {
			req.Title, req.Body = ev.Issue.GetTitle(), ev.Issue.GetBody()
		} else {
			req.Trigger = cmd.Verb
		}
		if req.CloneURL == "" {
			return decision{}, errors.New("issue_comment without repository clone_url")
		}
		j, err := jobOf(JobRun, inst, repo, issue, req)
		if err != nil {
			return decision{}, err
		}
		// Only a likely maintainer (by author_association) takes the issue's
		// run lock at once, so a drive-by comment cannot hold it; the others
		// are checked by the job, which takes the lock then.
		return decision{job: j, exclusive: likelyWriter[req.Association], busy: busyReply(j, owner, name, number, commentID)}, nil
	}
	j, err := jobOf(JobCommand, inst, repo, issue, commandRequest{
		Owner: owner, Name: name, DefaultBranch: ev.Repo.GetDefaultBranch(), CloneURL: ev.Repo.GetCloneURL(),
		Number: number, Issue: issue, PR: pr, Sender: ev.GetSender().GetLogin(),
		Association: ev.Comment.GetAuthorAssociation(), CommentID: commentID, Verb: cmd.Verb, Pick: cmd.Pick,
	})
	return decision{job: j}, err
}

// prClosed is a pr_closed job's payload.
type prClosed struct {
	Repo   string
	PR     int
	Merged bool
}

// decidePullRequest handles the pull_request event
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#pull_request):
// a closed pull request from a bestofn/ branch is recorded against its runs,
// merged or not, for stats. Branch deletion is left to the repository.
func decidePullRequest(body []byte) (decision, error) {
	var ev gogithub.PullRequestEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	if ev.GetAction() != "closed" {
		return decision{reason: "pull_request action " + ev.GetAction()}, nil
	}
	if ev.PullRequest == nil || ev.Repo == nil {
		return decision{}, errors.New("pull_request without pull_request or repository")
	}
	if !strings.HasPrefix(ev.PullRequest.GetHead().GetRef(), "bestofn/") {
		return decision{reason: "not a bestofn branch"}, nil
	}
	inst := ev.GetInstallation().GetID()
	if inst == 0 {
		return decision{reason: "no installation in the payload"}, nil
	}
	repo := ev.Repo.GetFullName()
	j, err := jobOf(JobPRClosed, inst, repo, 0, prClosed{Repo: repo, PR: ev.GetNumber(), Merged: ev.PullRequest.GetMerged()})
	return decision{job: j}, err
}

// installationChange is an installation job's payload.
type installationChange struct {
	ID      int64
	Account string
	Active  bool
	Action  string
}

// decideInstallation handles the installation and installation_repositories
// events (https://docs.github.com/en/webhooks/webhook-events-and-payloads#installation):
// they are recorded, and a removed installation's queued jobs are dropped.
func decideInstallation(event string, body []byte) (decision, error) {
	var ev struct {
		Action       string                 `json:"action"`
		Installation *gogithub.Installation `json:"installation"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	if ev.Installation == nil || ev.Installation.GetID() == 0 {
		return decision{}, errors.New(event + " without installation")
	}
	active := true
	switch {
	case event == "installation" && (ev.Action == "deleted" || ev.Action == "suspend"):
		active = false
	case event == "installation" && (ev.Action == "created" || ev.Action == "unsuspend" || ev.Action == "new_permissions_accepted"):
	case event == "installation_repositories":
	default:
		return decision{reason: event + " action " + ev.Action}, nil
	}
	id := ev.Installation.GetID()
	j, err := jobOf(JobInstallation, id, "", 0, installationChange{ID: id, Account: ev.Installation.GetAccount().GetLogin(), Active: active, Action: event + "." + ev.Action})
	return decision{job: j}, err
}
