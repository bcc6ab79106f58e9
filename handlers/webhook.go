package handlers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bestofn/bestofn/store"
)

// MaxPayloadBytes is the largest webhook body accepted, in bytes: GitHub caps
// payloads at 25 MB ("Webhook payload size" in GitHub's webhook docs).
const MaxPayloadBytes = 25 << 20

// decision is what a delivery means for the bot.
type decision struct {
	// job is the work to record; nil means "nothing to do".
	job *store.Job
	// exclusive marks a run job: it is recorded only when no run of the
	// same issue is active, and busy (a reply) is recorded instead otherwise.
	exclusive bool
	busy      *store.Job
	// reason says, for logs and the reply, why nothing is done.
	reason string
}

// webhook serves POST /webhook. The signature in X-Hub-Signature-256 is
// checked against the raw body before anything is parsed (missing or wrong:
// 401, nothing stored); ping answers 200; deliveries the bot does not act on
// answer 202 with nothing stored; a job is recorded durably together with
// its delivery id, then 202. A delivery id seen before answers 200 and
// starts nothing (GitHub reuses the id when it redelivers).
func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxPayloadBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			reply(w, http.StatusRequestEntityTooLarge, "payload larger than 25 MiB")
			return
		}
		reply(w, http.StatusBadRequest, "could not read the body")
		return
	}
	if !validSignature(r.Header.Get("X-Hub-Signature-256"), body, s.opts.Secret) {
		s.metrics.deliveries.WithLabelValues("unknown", "bad_signature").Inc()
		reply(w, http.StatusUnauthorized, "missing or wrong X-Hub-Signature-256")
		return
	}
	event := gogithub.WebHookType(r)
	delivery := gogithub.DeliveryID(r)
	log := s.log.With("github_event_type", event, "github_delivery_id", delivery)
	if event == "ping" {
		s.metrics.deliveries.WithLabelValues(event, "pong").Inc()
		reply(w, http.StatusOK, "pong")
		return
	}
	if event == "" || delivery == "" {
		reply(w, http.StatusBadRequest, "missing X-GitHub-Event or X-GitHub-Delivery")
		return
	}
	var d decision
	switch event {
	case "issues":
		d, err = decideIssues(body)
	case "issue_comment":
		d, err = s.decideIssueComment(r.Context(), body)
	case "pull_request":
		d, err = decidePullRequest(body)
	case "installation", "installation_repositories":
		d, err = decideInstallation(event, body)
	default:
		d = decision{reason: "event not handled"}
	}
	if err != nil {
		s.metrics.deliveries.WithLabelValues(event, "malformed").Inc()
		log.Warn("malformed payload", "err", err)
		reply(w, http.StatusBadRequest, "malformed payload: "+err.Error())
		return
	}
	if d.job == nil {
		s.metrics.deliveries.WithLabelValues(event, "ignored").Inc()
		log.Debug("delivery ignored", "reason", d.reason)
		reply(w, http.StatusAccepted, "ignored: "+d.reason)
		return
	}
	d.job.DeliveryID = delivery
	var payload struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(body, &payload)
	dlv := store.Delivery{ID: delivery, Event: event, Action: payload.Action, Repo: d.job.Repo, InstallationID: d.job.InstallationID}
	var jobID int64
	var dup bool
	var active *store.Job
	if d.exclusive {
		jobID, dup, active, err = s.opts.Store.RecordRunDelivery(r.Context(), dlv, d.job, d.busy)
	} else {
		d.job.Candidate = d.job.Kind == JobRun
		jobID, dup, err = s.opts.Store.RecordDelivery(r.Context(), dlv, d.job)
	}
	if err != nil {
		log.Error("record delivery", "err", err)
		reply(w, http.StatusInternalServerError, "could not record the delivery")
		return
	}
	if dup {
		s.metrics.deliveries.WithLabelValues(event, "duplicate").Inc()
		reply(w, http.StatusOK, "delivery already recorded")
		return
	}
	if active != nil {
		s.metrics.deliveries.WithLabelValues(event, "busy").Inc()
		log.Info("a run of this issue is active; replying instead", "active_job", active.ID, "repo", d.job.Repo, "issue", d.job.Issue)
		s.signal()
		reply(w, http.StatusAccepted, "a run is already in progress")
		return
	}
	s.metrics.deliveries.WithLabelValues(event, "queued").Inc()
	log.Info("job queued", "job", jobID, "kind", d.job.Kind, "repo", d.job.Repo, "issue", d.job.Issue, "github_installation_id", d.job.InstallationID)
	s.signal()
	reply(w, http.StatusAccepted, "queued")
}

// validSignature reports whether header is "sha256=" followed by the hex
// HMAC-SHA256 of body under secret, compared in constant time (GitHub docs,
// "Validating webhook deliveries"). SHA-1 signatures are not accepted.
func validSignature(header string, body, secret []byte) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(secret) == 0 {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

func reply(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}
