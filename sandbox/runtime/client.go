package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ClientHeader is the x-runtime-client value sent on every request
// (runtime-api.md, "Basics").
const ClientHeader = "http/2026-10-04"

// Error is an error answer of the Runtime API (the envelope of runtime-api.md,
// "Errors, retries, idempotency, limits"), or a late answer carrying one.
// The API key never appears in it.
type Error struct {
	// Op is the request, such as "POST /v1/sandboxes/sbx-1:exec".
	Op string
	// Status is the HTTP status (the envelope's status for a late answer).
	Status int
	// Code, Message, Hint and RequestID are the envelope's fields
	// (RequestID falls back to the x-request-id header).
	Code, Message, Hint, RequestID string
	// Details is the envelope's details object, raw.
	Details json.RawMessage
	// RetryAfter is the wait asked by Retry-After or retryAfterMs; -1 when absent.
	RetryAfter time.Duration
	// Late says the error came in a 200 answer with runtime-late-answer: true.
	Late bool
}

// Error returns "runtime: <op>: <status> <code>: <message> (request <id>)".
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "runtime: %s: %d %s", e.Op, e.Status, e.Code)
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Late {
		b.WriteString(" (late answer)")
	}
	if e.RequestID != "" {
		b.WriteString(" (request " + e.RequestID + ")")
	}
	return b.String()
}

// StartedSandboxIDs returns details.startedSandboxIds of a partial fork
// failure; nil when absent.
func (e *Error) StartedSandboxIDs() []string {
	var d struct {
		Started []string `json:"startedSandboxIds"`
	}
	if len(e.Details) > 0 && json.Unmarshal(e.Details, &d) == nil {
		return d.Started
	}
	return nil
}

// Retryable says the request may be sent again with the same
// Idempotency-Key, following runtime-api.md's retry list: 429; 409 and 503
// with a retryable code (old and new names of renamed codes); 502, 504 and
// other 5xx; never 400/401/403/404/422, 402, *_unavailable (except
// host_unavailable and api_unavailable) or 409 state errors, and never a
// partial fork (details.startedSandboxIds set).
func (e *Error) Retryable() bool {
	if e.StartedSandboxIDs() != nil {
		return false
	}
	code := e.Code
	if retryCodes[code] {
		return true
	}
	if code == "unavailable" || strings.HasSuffix(code, "_unavailable") {
		return false
	}
	switch {
	case e.Status == 429:
		return true
	case e.Status >= 500:
		return true
	}
	return false
}

// retryCodes are the codes runtime-api.md lists as retryable, with the
// names they had before the 3-5 Oct 2026 renames.
var retryCodes = map[string]bool{
	"rate_limited": true, "no_credit_build_limit": true,
	"busy": true, "fence_conflict": true, "host_unavailable": true, "api_unavailable": true, "guest_busy": true,
	"no_capacity": true, "no_credit_running_limit": true, "trial_busy": true, "no_credit_domain_limit": true,
	"no_credit_capacity_full": true, "trial_capacity": true,
	"quota_exceeded": true, "volume_releasing": true, "build_in_progress": true,
	"internal_error": true, "sandbox_not_ready": true,
}

// request is one logical API call, sent once or retried.
type request struct {
	method string
	path   string // under BaseURL, starting with /v1
	query  url.Values
	body   []byte // JSON unless contentType says otherwise
	ctype  string
	accept string
	prefer string
}

// newKey returns a fresh Idempotency-Key.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (p *Provider) op(r *request) string { return r.method + " " + r.path }

// do sends r, retrying as runtime-api.md says with one Idempotency-Key
// (POST/PUT/DELETE), and returns a 2xx response whose body the caller closes.
// A non-2xx answer or a late answer with an error body is an *Error.
func (p *Provider) do(ctx context.Context, r *request) (*http.Response, error) {
	key := ""
	if r.method != http.MethodGet {
		key = newKey()
	}
	return p.doKey(ctx, r, key)
}

func (p *Provider) doKey(ctx context.Context, r *request, key string) (*http.Response, error) {
	start := time.Now()
	var waited time.Duration
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("runtime: %s: %w", p.op(r), err)
		}
		resp, err := p.send(ctx, r, key)
		var last error
		wait := time.Duration(-1)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("runtime: %s: %w", p.op(r), ctx.Err())
			}
			last = fmt.Errorf("runtime: %s: %s", p.op(r), p.redact(err.Error()))
		} else {
			apiErr, resp2, rerr := p.check(r, resp)
			switch {
			case rerr != nil:
				if ctx.Err() != nil {
					return nil, fmt.Errorf("runtime: %s: %w", p.op(r), ctx.Err())
				}
				last = rerr
			case apiErr == nil:
				return resp2, nil
			case !apiErr.Retryable():
				return nil, apiErr
			default:
				last, wait = apiErr, apiErr.RetryAfter
			}
		}
		if wait < 0 {
			wait = backoff(attempt)
		}
		if time.Since(start)+waited+wait > p.opts.RetryDeadline {
			return nil, last
		}
		waited += wait
		if err := p.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("runtime: %s: %w (after %v)", p.op(r), err, last)
		}
	}
}

// backoff is the growing delay before retry attempt+1: 250 ms doubling to 8 s.
func backoff(attempt int) time.Duration {
	d := 250 * time.Millisecond << min(attempt, 5)
	return d
}

func (p *Provider) sleep(ctx context.Context, d time.Duration) error {
	if p.opts.Sleep != nil {
		p.opts.Sleep(d)
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Provider) send(ctx context.Context, r *request, key string) (*http.Response, error) {
	u := p.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.opts.APIKey)
	req.Header.Set("x-runtime-client", ClientHeader)
	if r.body != nil {
		ct := r.ctype
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if r.prefer != "" {
		req.Header.Set("Prefer", r.prefer)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return p.hc.Do(req)
}

// check turns a response into an *Error when it is one. For a late answer
// it reads the body and returns a fresh response holding it. rerr is a
// failure to read the body (a transport error, retryable).
func (p *Provider) check(r *request, resp *http.Response) (apiErr *Error, out *http.Response, rerr error) {
	late := strings.EqualFold(resp.Header.Get("runtime-late-answer"), "true")
	if resp.StatusCode < 300 && !late {
		return nil, resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("runtime: %s: reading answer: %s", p.op(r), p.redact(err.Error()))
	}
	if resp.StatusCode < 300 {
		var env struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(body, &env) != nil || len(env.Error) == 0 || string(env.Error) == "null" {
			resp.Body = io.NopCloser(bytes.NewReader(body))
			return nil, resp, nil
		}
	}
	e := p.parseError(r, resp, body)
	e.Late = late && resp.StatusCode < 300
	return e, nil, nil
}

func (p *Provider) parseError(r *request, resp *http.Response, body []byte) *Error {
	e := &Error{Op: p.op(r), Status: resp.StatusCode, RetryAfter: -1, RequestID: resp.Header.Get("x-request-id")}
	var env struct {
		Error struct {
			Code         string          `json:"code"`
			Status       int             `json:"status"`
			Message      string          `json:"message"`
			Hint         string          `json:"hint"`
			Details      json.RawMessage `json:"details"`
			RequestID    string          `json:"requestId"`
			RetryAfterMs *int64          `json:"retryAfterMs"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil {
		ee := env.Error
		e.Code, e.Message, e.Hint, e.Details = ee.Code, p.redact(ee.Message), p.redact(ee.Hint), ee.Details
		if ee.RequestID != "" {
			e.RequestID = ee.RequestID
		}
		if resp.StatusCode < 300 && ee.Status != 0 {
			e.Status = ee.Status
		}
		if ee.RetryAfterMs != nil && *ee.RetryAfterMs >= 0 {
			e.RetryAfter = time.Duration(*ee.RetryAfterMs) * time.Millisecond
		}
	} else {
		msg := strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200]
		}
		e.Message = p.redact(msg)
	}
	if ra := strings.TrimSpace(resp.Header.Get("Retry-After")); ra != "" {
		if secs, err := strconv.ParseFloat(ra, 64); err == nil && secs >= 0 {
			e.RetryAfter = time.Duration(secs * float64(time.Second))
		} else if t, err := http.ParseTime(ra); err == nil {
			e.RetryAfter = max(time.Until(t), 0)
		}
	}
	if e.Code == "" {
		e.Code = strings.ToLower(strings.ReplaceAll(http.StatusText(resp.StatusCode), " ", "_"))
	}
	return e
}

// redact removes the API key from text that may end up in an error.
func (p *Provider) redact(s string) string {
	if p.opts.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, p.opts.APIKey, "[redacted]")
}

// doJSON sends r with in as JSON body (nil for none) and decodes a JSON
// answer into out (nil to discard it).
func (p *Provider) doJSON(ctx context.Context, r *request, in, out any) error {
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("runtime: %s: %w", p.op(r), err)
		}
		r.body = b
	}
	resp, err := p.do(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("runtime: %s: %w", p.op(r), ctx.Err())
		}
		return fmt.Errorf("runtime: %s: decoding answer: %s", p.op(r), p.redact(err.Error()))
	}
	return nil
}
