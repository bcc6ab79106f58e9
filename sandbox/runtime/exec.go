package runtime

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bestofn/bestofn/sandbox"
)

// nonStreamCap is what Runtime keeps of each stream in a non-streamed exec
// answer when timeoutMs <= 60000 (runtime-api.md, "Exec").
const nonStreamCap = 64 << 10

// maxTimeout is the longest timeoutMs Runtime takes (24 h); a request
// without Timeout is sent with it.
const maxTimeout = 24 * time.Hour

type execBody struct {
	Argv        []string          `json:"argv,omitempty"`
	Command     string            `json:"command,omitempty"`
	Cwd         string            `json:"cwd,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	StdinBase64 string            `json:"stdinBase64,omitempty"`
	TimeoutMs   int64             `json:"timeoutMs"`
	Stream      bool              `json:"stream,omitempty"`
}

type execAnswer struct {
	ExitCode        *int   `json:"exitCode"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	TimedOut        bool   `json:"timedOut"`
	StdoutTruncated bool   `json:"stdoutTruncated"`
	StderrTruncated bool   `json:"stderrTruncated"`
	DurationMs      *int64 `json:"durationMs"`
}

// Exec runs a command with POST /v1/sandboxes/{id}:exec (argv or command,
// cwd, env, stdinBase64, timeoutMs). It waits for the non-streamed answer
// when Timeout is 1..60 s and OutputLimit fits Runtime's 64 KiB answer cap;
// otherwise (no Timeout, a longer one, or a larger cap) it streams NDJSON
// and resumes with GET .../processes/{pid}/output?follow=true&cursor=N on a
// continue line or a dropped connection. Output keeps the last OutputLimit
// bytes of each stream. HOME=/bestofn/home and LANG=C.UTF-8 are added unless
// Env sets them. When req.Network differs from the sandbox's last setting it
// first puts PUT .../network {internet}. ErrStopped after Stop.
func (s *Sandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if err := s.live(); err != nil {
		return sandbox.ExecResult{}, err
	}
	body, limit, err := s.execBody(req)
	if err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("runtime: exec in %s: %w", s.id, err)
	}
	if err := ctx.Err(); err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("runtime: exec in %s: %w", s.id, err)
	}
	if err := s.setNetwork(ctx, req.Network); err != nil {
		return sandbox.ExecResult{}, err
	}
	began := time.Now()
	if !body.Stream {
		var ans execAnswer
		if err := s.p.doJSON(ctx, &request{method: "POST", path: s.path(":exec")}, body, &ans); err != nil {
			return sandbox.ExecResult{}, err
		}
		res := sandbox.ExecResult{ExitCode: -1, TimedOut: ans.TimedOut, Duration: time.Since(began)}
		if ans.ExitCode != nil && !ans.TimedOut {
			res.ExitCode = *ans.ExitCode
		}
		if ans.DurationMs != nil {
			res.Duration = time.Duration(*ans.DurationMs) * time.Millisecond
		}
		out, errOut := newTail(limit), newTail(limit)
		out.Write([]byte(ans.Stdout))
		errOut.Write([]byte(ans.Stderr))
		res.Stdout, res.Stderr = out.bytes(), errOut.bytes()
		res.StdoutTruncated = ans.StdoutTruncated || out.truncated()
		res.StderrTruncated = ans.StderrTruncated || errOut.truncated()
		return res, nil
	}
	return s.execStream(ctx, body, limit, began)
}

// execBody checks req and builds the wire body; limit is the output cap.
func (s *Sandbox) execBody(req sandbox.ExecRequest) (execBody, int, error) {
	var b execBody
	switch {
	case len(req.Argv) > 0 && req.Shell != "":
		return b, 0, errors.New("both Argv and Shell are set")
	case len(req.Argv) > 0:
		b.Argv = req.Argv
	case req.Shell != "":
		b.Command = req.Shell
	default:
		return b, 0, errors.New("neither Argv nor Shell is set")
	}
	if req.OutputLimit < 0 {
		return b, 0, fmt.Errorf("OutputLimit %d is negative", req.OutputLimit)
	}
	if req.Timeout < 0 {
		return b, 0, fmt.Errorf("Timeout %v is negative", req.Timeout)
	}
	if req.Timeout > maxTimeout {
		return b, 0, fmt.Errorf("Timeout %v is over Runtime's 24 h", req.Timeout)
	}
	limit := req.OutputLimit
	if limit == 0 {
		limit = sandbox.DefaultOutputLimit
	}
	if req.Dir != "" {
		if err := checkPath(req.Dir, true); err != nil {
			return b, 0, fmt.Errorf("Dir: %w", err)
		}
		b.Cwd = req.Dir
	} else {
		b.Cwd = sandbox.Workspace
	}
	b.Env = map[string]string{"HOME": sandbox.Scratch + "/home", "LANG": "C.UTF-8"}
	for k, v := range req.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return b, 0, fmt.Errorf("bad environment variable name %q", k)
		}
		if strings.ContainsRune(v, 0) {
			return b, 0, fmt.Errorf("environment variable %s has a NUL byte", k)
		}
		b.Env[k] = v
	}
	if len(req.Stdin) > 0 {
		b.StdinBase64 = base64.StdEncoding.EncodeToString(req.Stdin)
	}
	timeout := req.Timeout
	if timeout == 0 {
		timeout = maxTimeout
	}
	b.TimeoutMs = int64((timeout + time.Millisecond - 1) / time.Millisecond)
	b.Stream = timeout > 60*time.Second || limit > nonStreamCap
	return b, limit, nil
}

// setNetwork puts the internet setting when it differs from the last one.
func (s *Sandbox) setNetwork(ctx context.Context, internet bool) error {
	s.mu.Lock()
	same := s.internet != nil && *s.internet == internet
	s.mu.Unlock()
	if same {
		return nil
	}
	body := map[string]any{"internet": internet}
	if internet && len(s.p.opts.AllowHosts) > 0 {
		// Only the hosts the agent needs (its model's API): runtime-api.md,
		// "Egress secrets and network rules".
		body["allow"] = s.p.opts.AllowHosts
	}
	if err := s.p.doJSON(ctx, &request{method: "PUT", path: s.path("/network")}, body, nil); err != nil {
		return err
	}
	s.mu.Lock()
	s.internet = &internet
	s.mu.Unlock()
	return nil
}

// streamLine is one NDJSON line of a streamed exec.
type streamLine struct {
	Type         string          `json:"type"`
	ProcessID    string          `json:"processId"`
	Data         string          `json:"data"`
	Offset       *int64          `json:"offset"`
	Base64       bool            `json:"base64"`
	ExitCode     *int            `json:"exitCode"`
	State        string          `json:"state"`
	TimedOut     bool            `json:"timedOut"`
	DurationMs   *int64          `json:"durationMs"`
	DroppedBytes int64           `json:"droppedBytes"`
	ResumeAt     *int64          `json:"resumeAt"`
	Cursor       *int64          `json:"cursor"`
	Error        json.RawMessage `json:"error"`
}

// streamState collects a streamed command's output across connections.
type streamState struct {
	pid            string
	cursor         int64 // byte offset over stdout+stderr received so far
	stdout, stderr *tail
	outCut, errCut bool
	exit           *streamLine
}

// execStream runs a streamed exec and follows its output to the exit line.
func (s *Sandbox) execStream(ctx context.Context, body execBody, limit int, began time.Time) (sandbox.ExecResult, error) {
	st := &streamState{stdout: newTail(limit), stderr: newTail(limit)}
	b, err := json.Marshal(body)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	key := newKey()
	first := &request{method: "POST", path: s.path(":exec"), body: b, accept: "application/x-ndjson"}
	fails := 0
	var waited time.Duration
	for {
		var r *request
		k := ""
		if st.pid == "" {
			r, k = first, key // before a start line: the same POST, replayed by its key
		} else {
			q := url.Values{"follow": {"true"}, "cursor": {strconv.FormatInt(st.cursor, 10)}}
			r = &request{method: "GET", path: s.path("/processes/" + url.PathEscape(st.pid) + "/output"), query: q, accept: "application/x-ndjson"}
		}
		before := st.cursor
		hadPID := st.pid != ""
		resp, err := s.p.doKey(ctx, r, k)
		if err != nil {
			return sandbox.ExecResult{}, err
		}
		done, rerr := s.readStream(resp.Body, st)
		resp.Body.Close()
		if done {
			break
		}
		if ctx.Err() != nil {
			return sandbox.ExecResult{}, fmt.Errorf("runtime: exec in %s: %w", s.id, ctx.Err())
		}
		var ae *Error
		if errors.As(rerr, &ae) && !ae.Retryable() {
			return sandbox.ExecResult{}, ae
		}
		// A continue line, or a dropped connection: resume from the cursor.
		if st.cursor > before || (!hadPID && st.pid != "") || rerr == nil {
			fails = 0
			continue
		}
		fails++
		wait := backoff(fails - 1)
		if waited+wait > s.p.opts.RetryDeadline {
			return sandbox.ExecResult{}, fmt.Errorf("runtime: exec in %s: stream kept failing: %w", s.id, rerr)
		}
		waited += wait
		if err := s.p.sleep(ctx, wait); err != nil {
			return sandbox.ExecResult{}, fmt.Errorf("runtime: exec in %s: %w", s.id, err)
		}
	}
	e := st.exit
	res := sandbox.ExecResult{ExitCode: -1, TimedOut: e.TimedOut, Duration: time.Since(began)}
	if e.ExitCode != nil && !e.TimedOut {
		res.ExitCode = *e.ExitCode
	}
	if e.DurationMs != nil {
		res.Duration = time.Duration(*e.DurationMs) * time.Millisecond
	}
	res.Stdout, res.Stderr = st.stdout.bytes(), st.stderr.bytes()
	res.StdoutTruncated = st.outCut || st.stdout.truncated()
	res.StderrTruncated = st.errCut || st.stderr.truncated()
	return res, nil
}

// readStream reads NDJSON lines into st until the exit line (done), a
// continue line (nil error), an error line (*Error) or a broken connection.
func (s *Sandbox) readStream(body io.Reader, st *streamState) (done bool, err error) {
	br := bufio.NewReaderSize(body, 64<<10)
	for {
		raw, rerr := br.ReadBytes('\n')
		if len(raw) > 0 && raw[len(raw)-1] == '\n' {
			var ln streamLine
			if err := json.Unmarshal(raw, &ln); err != nil {
				return false, fmt.Errorf("runtime: exec in %s: bad stream line: %w", s.id, err)
			}
			switch ln.Type {
			case "start":
				if ln.ProcessID != "" {
					st.pid = ln.ProcessID
				}
			case "stdout", "stderr":
				data := []byte(ln.Data)
				if ln.Base64 {
					if data, err = base64.StdEncoding.DecodeString(ln.Data); err != nil {
						return false, fmt.Errorf("runtime: exec in %s: bad base64 output: %w", s.id, err)
					}
				}
				off := st.cursor
				if ln.Offset != nil {
					off = *ln.Offset
				}
				if off > st.cursor { // a gap: bytes were lost
					st.outCut, st.errCut = st.outCut || ln.Type == "stdout", st.errCut || ln.Type == "stderr"
				} else if skip := st.cursor - off; skip > 0 { // already have these
					if skip >= int64(len(data)) {
						continue
					}
					data = data[skip:]
					off = st.cursor
				}
				if ln.Type == "stdout" {
					st.stdout.Write(data)
				} else {
					st.stderr.Write(data)
				}
				st.cursor = off + int64(len(data))
			case "truncated":
				st.outCut, st.errCut = true, true
				if ln.ResumeAt != nil && *ln.ResumeAt > st.cursor {
					st.cursor = *ln.ResumeAt
				}
			case "continue":
				if ln.ProcessID != "" {
					st.pid = ln.ProcessID
				}
				if ln.Cursor != nil {
					st.cursor = *ln.Cursor
				}
				return false, nil
			case "exit":
				st.exit = &ln
				return true, nil
			case "error":
				return false, s.lineError(ln.Error)
			}
		}
		if rerr != nil {
			if rerr == io.EOF {
				rerr = io.ErrUnexpectedEOF
			}
			return false, fmt.Errorf("runtime: exec in %s: stream: %s", s.id, s.p.redact(rerr.Error()))
		}
	}
}

func (s *Sandbox) lineError(raw json.RawMessage) error {
	var e struct {
		Code      string `json:"code"`
		Status    int    `json:"status"`
		Message   string `json:"message"`
		RequestID string `json:"requestId"`
	}
	_ = json.Unmarshal(raw, &e)
	return &Error{Op: "POST " + s.path(":exec") + " (stream)", Status: e.Status, Code: e.Code,
		Message: s.p.redact(e.Message), RequestID: e.RequestID, RetryAfter: -1}
}

// tail keeps the last limit bytes written to it.
type tail struct {
	limit int
	buf   []byte
	total int64
}

func newTail(limit int) *tail { return &tail{limit: limit} }

func (t *tail) Write(p []byte) {
	t.total += int64(len(p))
	if len(p) >= t.limit {
		t.buf = append(t.buf[:0], p[len(p)-t.limit:]...)
		return
	}
	if over := len(t.buf) + len(p) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
}

func (t *tail) bytes() []byte {
	if t.buf == nil {
		return []byte{}
	}
	return t.buf
}

func (t *tail) truncated() bool { return t.total > int64(t.limit) }
