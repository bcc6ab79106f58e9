// Package sandboxtest is a conformance suite for sandbox.Provider backends.
// A backend's tests call Run with a function that makes a fresh provider;
// every check uses only the sandbox interfaces, with real commands.
//
// Commands the suite runs inside sandboxes: bash, cat, echo, env, false,
// kill, mkdir, printf, readlink, rm, seq, sleep, stat (GNU), test, true, wc.
// The Timeout and ContextEnd checks take about a second in all.
package sandboxtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bestofn/bestofn/sandbox"
)

// bound is the longest any single step of the suite may take; it only guards
// against hangs, no check depends on timing.
const bound = 60 * time.Second

// Run runs the conformance suite as subtests of t. newProvider is called
// once per subtest and returns the provider under test; sandboxes the suite
// creates are stopped by t.Cleanup. Run fails t on any mismatch with the
// sandbox interfaces' documented behaviour.
func Run(t *testing.T, newProvider func(t *testing.T) sandbox.Provider) {
	t.Helper()
	tests := []struct {
		name string
		f    func(t *testing.T, p sandbox.Provider)
	}{
		{"ExecArgv", testExecArgv},
		{"ExecShell", testExecShell},
		{"ExitCodes", testExitCodes},
		{"BadRequests", testBadRequests},
		{"Stdin", testStdin},
		{"Env", testEnv},
		{"Dir", testDir},
		{"Timeout", testTimeout},
		{"ContextEnd", testContextEnd},
		{"OutputLimit", testOutputLimit},
		{"ConcurrentExec", testConcurrentExec},
		{"Files", testFiles},
		{"MissingFile", testMissingFile},
		{"BadPaths", testBadPaths},
		{"TarRoundTrip", testTarRoundTrip},
		{"PutArchiveRefusesEscape", testPutArchiveRefusesEscape},
		{"ForkIsolation", testForkIsolation},
		{"ForkIDs", testForkIDs},
		{"ForkOfFork", testForkOfFork},
		{"Usage", testUsage},
		{"Stop", testStop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t)
			if p == nil {
				t.Fatal("newProvider returned nil")
			}
			tc.f(t, p)
		})
	}
}

// ctxFor returns a context bounded by bound and ended with the test.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	t.Cleanup(cancel)
	return ctx
}

// create makes a sandbox stopped at the end of the test.
func create(t *testing.T, p sandbox.Provider) sandbox.Sandbox {
	t.Helper()
	s, err := p.Create(ctxFor(t), sandbox.CreateOptions{Labels: map[string]string{"test": t.Name()}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if s == nil {
		t.Fatal("Create returned a nil sandbox")
	}
	stopAtEnd(t, s)
	return s
}

// stopAtEnd registers s's Stop; cleanups run last-in first-out, so copies
// made later stop before their parent.
func stopAtEnd(t *testing.T, s sandbox.Sandbox) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop %s: %v", s.ID(), err)
		}
	})
}

// fork forks s into n copies stopped at the end of the test.
func fork(t *testing.T, s sandbox.Sandbox, n int) []sandbox.Sandbox {
	t.Helper()
	kids, err := s.Fork(ctxFor(t), n)
	for _, k := range kids {
		stopAtEnd(t, k)
	}
	if err != nil {
		t.Fatalf("Fork(%d): %v", n, err)
	}
	if len(kids) != n {
		t.Fatalf("Fork(%d) returned %d sandboxes", n, len(kids))
	}
	return kids
}

// run executes req and fails the test on an error.
func run(t *testing.T, s sandbox.Sandbox, req sandbox.ExecRequest) sandbox.ExecResult {
	t.Helper()
	res, err := s.Exec(ctxFor(t), req)
	if err != nil {
		t.Fatalf("Exec(%q%q): %v", req.Argv, req.Shell, err)
	}
	return res
}

// sh runs a shell string and fails the test unless it exits 0; it returns stdout.
func sh(t *testing.T, s sandbox.Sandbox, script string) string {
	t.Helper()
	res := run(t, s, sandbox.ExecRequest{Shell: script})
	if res.ExitCode != 0 {
		t.Fatalf("%q: exit %d, stdout %q, stderr %q", script, res.ExitCode, res.Stdout, res.Stderr)
	}
	return string(res.Stdout)
}

func writeFile(t *testing.T, s sandbox.Sandbox, p, data string, mode fs.FileMode) {
	t.Helper()
	if err := s.WriteFile(ctxFor(t), p, []byte(data), mode); err != nil {
		t.Fatalf("WriteFile %s: %v", p, err)
	}
}

// wantFile checks p holds want, through ReadFile and through a command.
func wantFile(t *testing.T, s sandbox.Sandbox, p, want string) {
	t.Helper()
	got, err := s.ReadFile(ctxFor(t), p)
	if err != nil {
		t.Fatalf("ReadFile %s in %s: %v", p, s.ID(), err)
	}
	if string(got) != want {
		t.Errorf("ReadFile %s in %s = %q, want %q", p, s.ID(), got, want)
	}
	res := run(t, s, sandbox.ExecRequest{Argv: []string{"cat", p}})
	if res.ExitCode != 0 || string(res.Stdout) != want {
		t.Errorf("cat %s in %s: exit %d, stdout %q, want %q (stderr %q)", p, s.ID(), res.ExitCode, res.Stdout, want, res.Stderr)
	}
}

// wantAbsent checks p does not exist, through ReadFile and a command.
func wantAbsent(t *testing.T, s sandbox.Sandbox, p string) {
	t.Helper()
	_, err := s.ReadFile(ctxFor(t), p)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile %s in %s: err %v, want fs.ErrNotExist", p, s.ID(), err)
	}
	res := run(t, s, sandbox.ExecRequest{Argv: []string{"test", "-e", p}})
	if res.ExitCode == 0 {
		t.Errorf("test -e %s in %s succeeded, want absent", p, s.ID())
	}
}

func testExecArgv(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	res := run(t, s, sandbox.ExecRequest{Argv: []string{"echo", "hello", "world"}})
	if res.ExitCode != 0 || string(res.Stdout) != "hello world\n" || len(res.Stderr) != 0 {
		t.Errorf("echo: %+v", res)
	}
	if res.TimedOut || res.StdoutTruncated || res.StderrTruncated {
		t.Errorf("echo: unexpected flags %+v", res)
	}
	if res.Duration <= 0 || res.Duration > bound {
		t.Errorf("echo: Duration %v", res.Duration)
	}
	// No shell: nothing is expanded or split.
	res = run(t, s, sandbox.ExecRequest{Argv: []string{"printf", "%s|", "a b", "$HOME", "'q'", "*", ""}})
	if want := "a b|$HOME|'q'|*||"; string(res.Stdout) != want {
		t.Errorf("printf stdout %q, want %q", res.Stdout, want)
	}
}

func testExecShell(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	res := run(t, s, sandbox.ExecRequest{Shell: "echo out; echo err >&2; exit 3"})
	if res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Errorf("shell: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	res = run(t, s, sandbox.ExecRequest{Shell: `x=$((6*7)); [[ $x == 42 ]] && echo "$x"`})
	if res.ExitCode != 0 || string(res.Stdout) != "42\n" {
		t.Errorf("bash features: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}

func testExitCodes(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	for _, code := range []int{0, 1, 2, 42, 255} {
		res := run(t, s, sandbox.ExecRequest{Shell: fmt.Sprintf("exit %d", code)})
		if res.ExitCode != code {
			t.Errorf("exit %d: got %d", code, res.ExitCode)
		}
	}
	if res := run(t, s, sandbox.ExecRequest{Argv: []string{"false"}}); res.ExitCode != 1 {
		t.Errorf("false: exit %d", res.ExitCode)
	}
	// Killed by a signal: -1, or 128+9 when the backend runs commands
	// through a wrapper that reports it so.
	if res := run(t, s, sandbox.ExecRequest{Shell: "kill -9 $$"}); res.ExitCode != -1 && res.ExitCode != 137 {
		t.Errorf("kill -9: exit %d, want -1 or 137", res.ExitCode)
	}
}

func testBadRequests(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	ctx := ctxFor(t)
	for name, req := range map[string]sandbox.ExecRequest{
		"empty":            {},
		"argv and shell":   {Argv: []string{"true"}, Shell: "true"},
		"negative limit":   {Argv: []string{"true"}, OutputLimit: -1},
		"bad env name":     {Argv: []string{"true"}, Env: map[string]string{"A=B": "x"}},
		"dir outside":      {Argv: []string{"true"}, Dir: "relative"},
		"negative timeout": {Argv: []string{"true"}, Timeout: -time.Second},
	} {
		if _, err := s.Exec(ctx, req); err == nil {
			t.Errorf("%s: Exec succeeded, want an error", name)
		}
	}
}

func testStdin(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	res := run(t, s, sandbox.ExecRequest{Argv: []string{"cat"}, Stdin: []byte("line1\nline2\n")})
	if string(res.Stdout) != "line1\nline2\n" {
		t.Errorf("cat with stdin: %q", res.Stdout)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, more than a pipe holds
	res = run(t, s, sandbox.ExecRequest{Argv: []string{"wc", "-c"}, Stdin: big})
	if strings.TrimSpace(string(res.Stdout)) != fmt.Sprint(len(big)) {
		t.Errorf("wc -c of 1 MiB stdin: %q", res.Stdout)
	}
	// A command that ignores its input must not block on it.
	res = run(t, s, sandbox.ExecRequest{Argv: []string{"true"}, Stdin: big})
	if res.ExitCode != 0 {
		t.Errorf("true with unread stdin: exit %d", res.ExitCode)
	}
	res = run(t, s, sandbox.ExecRequest{Argv: []string{"cat"}})
	if res.ExitCode != 0 || len(res.Stdout) != 0 {
		t.Errorf("cat without stdin: exit %d stdout %q", res.ExitCode, res.Stdout)
	}
}

func testEnv(t *testing.T, p sandbox.Provider) {
	const leak = "BESTOFN_SANDBOXTEST_HOST_SECRET"
	t.Setenv(leak, "do-not-leak")
	s := create(t, p)
	res := run(t, s, sandbox.ExecRequest{
		Shell: `printf '%s|%s|%s' "$FOO" "${EMPTY-unset}" "${UNSET_VAR-unset}"`,
		Env:   map[string]string{"FOO": "bar baz", "EMPTY": ""},
	})
	if want := "bar baz||unset"; string(res.Stdout) != want {
		t.Errorf("env values: %q, want %q", res.Stdout, want)
	}
	out := sh(t, s, "env")
	if strings.Contains(out, leak) || strings.Contains(out, "do-not-leak") {
		t.Errorf("the host environment leaked into the sandbox:\n%s", out)
	}
	for _, name := range []string{"PATH", "HOME", "LANG", "TMPDIR"} {
		if !strings.Contains("\n"+out, "\n"+name+"=") {
			t.Errorf("%s is not set; env:\n%s", name, out)
		}
	}
	// HOME is under Scratch, usable, and survives between commands.
	writeFile(t, s, sandbox.Scratch+"/home/marker", "home", 0o644)
	if got := sh(t, s, `cat "$HOME/marker" && echo kept > "$HOME/.rc"`); got != "home" {
		t.Errorf("cat $HOME/marker: %q", got)
	}
	wantFile(t, s, sandbox.Scratch+"/home/.rc", "kept\n")
	if got := sh(t, s, `echo tmp > "$TMPDIR/x" && cat "$TMPDIR/x"`); got != "tmp\n" {
		t.Errorf("TMPDIR not writable: %q", got)
	}
}

func testDir(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	writeFile(t, s, sandbox.Workspace+"/top.txt", "top", 0o644)
	writeFile(t, s, sandbox.Workspace+"/sub/dir/m.txt", "sub", 0o644)
	writeFile(t, s, sandbox.Scratch+"/s.txt", "scratch", 0o644)
	for _, c := range []struct{ dir, file, want string }{
		{"", "top.txt", "top"},
		{sandbox.Workspace, "top.txt", "top"},
		{sandbox.Workspace + "/sub/dir", "m.txt", "sub"},
		{sandbox.Workspace + "/sub/dir/", "m.txt", "sub"},
		{sandbox.Scratch, "s.txt", "scratch"},
	} {
		res := run(t, s, sandbox.ExecRequest{Argv: []string{"cat", c.file}, Dir: c.dir})
		if res.ExitCode != 0 || string(res.Stdout) != c.want {
			t.Errorf("Dir %q: cat %s: exit %d stdout %q stderr %q", c.dir, c.file, res.ExitCode, res.Stdout, res.Stderr)
		}
	}
	// Absolute sandbox paths work in argv, in shell strings and in env.
	res := run(t, s, sandbox.ExecRequest{Argv: []string{"cat", sandbox.Workspace + "/top.txt", sandbox.Scratch + "/s.txt"}})
	if string(res.Stdout) != "topscratch" {
		t.Errorf("cat absolute paths: %q (stderr %q)", res.Stdout, res.Stderr)
	}
	res = run(t, s, sandbox.ExecRequest{
		Shell: `cd /workspace/sub && cat dir/m.txt "$F"`,
		Env:   map[string]string{"F": "/bestofn/s.txt"},
	})
	if string(res.Stdout) != "subscratch" {
		t.Errorf("shell with absolute paths: %q (stderr %q)", res.Stdout, res.Stderr)
	}
	// A missing folder cannot be used.
	res, err := s.Exec(ctxFor(t), sandbox.ExecRequest{Argv: []string{"true"}, Dir: sandbox.Workspace + "/nope"})
	if err == nil && res.ExitCode == 0 {
		t.Errorf("Exec in a missing Dir succeeded")
	}
}

func testTimeout(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	res, err := s.Exec(ctxFor(t), sandbox.ExecRequest{
		Shell:   "echo started; sleep 100 & sleep 100",
		Timeout: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Exec with a timeout: %v (a timeout is a result, not an error)", err)
	}
	if !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("timeout: TimedOut %v ExitCode %d, want true and -1", res.TimedOut, res.ExitCode)
	}
	if string(res.Stdout) != "started\n" {
		t.Errorf("output before the timeout lost: %q", res.Stdout)
	}
	if res.Duration < 500*time.Millisecond || res.Duration > bound {
		t.Errorf("timeout: Duration %v", res.Duration)
	}
	// A generous timeout does not fire.
	res = run(t, s, sandbox.ExecRequest{Argv: []string{"true"}, Timeout: time.Minute})
	if res.TimedOut || res.ExitCode != 0 {
		t.Errorf("true with a long timeout: %+v", res)
	}
	// The sandbox is still usable.
	if got := sh(t, s, "echo alive"); got != "alive\n" {
		t.Errorf("after a timeout: %q", got)
	}
}

func testContextEnd(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	ctx, cancel := context.WithTimeout(ctxFor(t), 300*time.Millisecond)
	defer cancel()
	_, err := s.Exec(ctx, sandbox.ExecRequest{Argv: []string{"sleep", "100"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Exec past its ctx deadline: err %v, want context.DeadlineExceeded", err)
	}
	done, cancel2 := context.WithCancel(ctxFor(t))
	cancel2()
	if _, err := s.Exec(done, sandbox.ExecRequest{Argv: []string{"true"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Exec with a cancelled ctx: err %v, want context.Canceled", err)
	}
	if got := sh(t, s, "echo alive"); got != "alive\n" {
		t.Errorf("after a cancelled command: %q", got)
	}
}

func testOutputLimit(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	var full strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&full, "%d\n", i)
	}
	want := full.String()[full.Len()-1000:]
	res := run(t, s, sandbox.ExecRequest{Shell: "seq 1 20000; seq 1 20000 >&2", OutputLimit: 1000})
	if string(res.Stdout) != want || !res.StdoutTruncated {
		t.Errorf("stdout: %d bytes, truncated %v, tail %q", len(res.Stdout), res.StdoutTruncated, tail(res.Stdout))
	}
	if string(res.Stderr) != want || !res.StderrTruncated {
		t.Errorf("stderr: %d bytes, truncated %v, tail %q", len(res.Stderr), res.StderrTruncated, tail(res.Stderr))
	}
	res = run(t, s, sandbox.ExecRequest{Shell: "printf 12345; printf abc >&2", OutputLimit: 5})
	if string(res.Stdout) != "12345" || res.StdoutTruncated || string(res.Stderr) != "abc" || res.StderrTruncated {
		t.Errorf("output that fits: %+v", res)
	}
	res = run(t, s, sandbox.ExecRequest{Shell: "seq 1 20000"})
	if string(res.Stdout) != full.String() || res.StdoutTruncated {
		t.Errorf("default limit cut %d bytes of output", full.Len()-len(res.Stdout))
	}
}

func tail(b []byte) []byte {
	if len(b) > 20 {
		return b[len(b)-20:]
	}
	return b
}

func testConcurrentExec(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			res, err := s.Exec(ctxFor(t), sandbox.ExecRequest{Shell: fmt.Sprintf("echo %d > /workspace/c%d; cat /workspace/c%d", i, i, i)})
			if err != nil || string(res.Stdout) != fmt.Sprintf("%d\n", i) {
				t.Errorf("concurrent exec %d: %v %q %q", i, err, res.Stdout, res.Stderr)
			}
		})
	}
	wg.Wait()
}

func testFiles(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	writeFile(t, s, sandbox.Workspace+"/a/b/c.txt", "hello", 0o640)
	wantFile(t, s, sandbox.Workspace+"/a/b/c.txt", "hello")
	if got := sh(t, s, "stat -c %a a/b/c.txt"); got != "640\n" {
		t.Errorf("mode of a/b/c.txt: %q, want 640", got)
	}
	writeFile(t, s, sandbox.Workspace+"/a/b/c.txt", "x", 0o600) // replace: shorter, new mode
	wantFile(t, s, sandbox.Workspace+"/a/b/c.txt", "x")
	if got := sh(t, s, "stat -c %a a/b/c.txt"); got != "600\n" {
		t.Errorf("mode after replace: %q, want 600", got)
	}
	writeFile(t, s, sandbox.Scratch+"/empty", "", 0o644)
	wantFile(t, s, sandbox.Scratch+"/empty", "")
	writeFile(t, s, sandbox.Workspace+"/run.sh", "#!/bin/sh\necho ran\n", 0o755)
	if got := sh(t, s, "./run.sh"); got != "ran\n" {
		t.Errorf("./run.sh: %q", got)
	}
	sh(t, s, "printf made > /bestofn/made.txt")
	wantFile(t, s, sandbox.Scratch+"/made.txt", "made")
	bin := make([]byte, 256*1024)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	if err := s.WriteFile(ctxFor(t), sandbox.Workspace+"/bin", bin, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadFile(ctxFor(t), sandbox.Workspace+"/bin")
	if err != nil || !bytes.Equal(got, bin) {
		t.Errorf("binary round trip: %v, %d bytes", err, len(got))
	}
	if _, err := s.ReadFile(ctxFor(t), sandbox.Workspace+"/a"); err == nil {
		t.Errorf("ReadFile of a folder succeeded")
	}
}

func testMissingFile(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	for _, path := range []string{sandbox.Workspace + "/missing", sandbox.Workspace + "/no/such/dir/file", sandbox.Scratch + "/missing"} {
		if _, err := s.ReadFile(ctxFor(t), path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile %s: err %v, want fs.ErrNotExist", path, err)
		}
	}
	if _, err := s.GetArchive(ctxFor(t), sandbox.Workspace+"/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("GetArchive of a missing folder: err %v, want fs.ErrNotExist", err)
	}
}

func testBadPaths(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	ctx := ctxFor(t)
	for _, path := range []string{"", "relative.txt", "workspace/x", "/etc/passwd", "/workspace/../etc/passwd", "/workspacex/y", "/"} {
		if _, err := s.ReadFile(ctx, path); err == nil {
			t.Errorf("ReadFile %q succeeded", path)
		}
		if err := s.WriteFile(ctx, path, []byte("x"), 0o644); err == nil {
			t.Errorf("WriteFile %q succeeded", path)
		}
		if err := s.PutArchive(ctx, path, bytes.NewReader(tarOf(t, []entry{{name: "f", body: "x", mode: 0o644}}))); err == nil {
			t.Errorf("PutArchive into %q succeeded", path)
		}
		if rc, err := s.GetArchive(ctx, path); err == nil {
			rc.Close()
			t.Errorf("GetArchive of %q succeeded", path)
		}
	}
}

// entry is one tar entry the suite builds or reads back.
type entry struct {
	name string
	typ  byte
	mode int64
	body string
	link string
}

// tarOf builds an uncompressed tar of entries (typ 0 means a regular file).
func tarOf(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: e.typ, Linkname: e.link, ModTime: time.Unix(1700000000, 0)}
		if e.typ == 0 {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readTar reads a GetArchive stream into entries keyed by name (folders
// without their trailing slash), modes reduced to permission bits.
func readTar(t *testing.T, rc io.ReadCloser) map[string]entry {
	t.Helper()
	defer rc.Close()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading archive: %v", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading archive entry %s: %v", h.Name, err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		if name == "" || name == "." {
			continue
		}
		if strings.HasPrefix(name, "/") || strings.Contains("/"+name+"/", "/../") {
			t.Errorf("archive entry with an unsafe name %q", h.Name)
		}
		typ := h.Typeflag
		if typ == tar.TypeRegA {
			typ = tar.TypeReg
		}
		if _, dup := out[name]; dup {
			t.Errorf("archive has entry %q twice", name)
		}
		out[name] = entry{name: name, typ: typ, mode: h.Mode & 0o777, body: string(body), link: h.Linkname}
	}
	return out
}

func testTarRoundTrip(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	in := []entry{
		{name: "d/", typ: tar.TypeDir, mode: 0o750},
		{name: "d/f.txt", mode: 0o640, body: "data"},
		{name: "d/run.sh", mode: 0o755, body: "#!/bin/sh\necho tar-ran\n"},
		{name: "d/link", typ: tar.TypeSymlink, mode: 0o777, link: "f.txt"},
		{name: "d/abs", typ: tar.TypeSymlink, mode: 0o777, link: "/workspace/tree/top.txt"},
		{name: "d/sub/", typ: tar.TypeDir, mode: 0o700},
		{name: "d/sub/deep.txt", mode: 0o600, body: "deep"},
		{name: "top.txt", mode: 0o644, body: "top"},
		{name: "implied/parent/file", mode: 0o644, body: "implied"},
	}
	want := map[string]entry{}
	for _, e := range in {
		name := strings.TrimSuffix(e.name, "/")
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		want[name] = entry{name: name, typ: typ, mode: e.mode, body: e.body, link: e.link}
	}
	raw := tarOf(t, in)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()

	for _, c := range []struct {
		dir  string
		data []byte
	}{{sandbox.Workspace + "/tree", raw}, {sandbox.Scratch + "/gz", gz.Bytes()}} {
		writeFile(t, s, c.dir+"/keep.txt", "kept", 0o644) // PutArchive merges
		if err := s.PutArchive(ctxFor(t), c.dir, bytes.NewReader(c.data)); err != nil {
			t.Fatalf("PutArchive into %s: %v", c.dir, err)
		}
		rc, err := s.GetArchive(ctxFor(t), c.dir)
		if err != nil {
			t.Fatalf("GetArchive %s: %v", c.dir, err)
		}
		got := readTar(t, rc)
		if k, ok := got["keep.txt"]; !ok || k.body != "kept" {
			t.Errorf("%s: keep.txt lost by PutArchive: %+v", c.dir, k)
		}
		delete(got, "keep.txt")
		for name, w := range want {
			g, ok := got[name]
			if !ok {
				t.Errorf("%s: entry %s missing from GetArchive", c.dir, name)
				continue
			}
			if name == "implied" || name == "implied/parent" {
				if g.typ != tar.TypeDir {
					t.Errorf("%s: %s is type %q, want a folder", c.dir, name, g.typ)
				}
				continue
			}
			if g.typ != w.typ || g.body != w.body || g.link != w.link || (w.typ != tar.TypeSymlink && g.mode != w.mode) {
				t.Errorf("%s: entry %s = %+v, want %+v", c.dir, name, g, w)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok && name != "implied" && name != "implied/parent" {
				t.Errorf("%s: unexpected entry %s", c.dir, name)
			}
		}
	}
	// The unpacked files work inside, symlinks as symlinks.
	if got := sh(t, s, "cat tree/d/link; tree/d/run.sh; readlink tree/d/link"); got != "datatar-ran\nf.txt\n" {
		t.Errorf("using unpacked files: %q", got)
	}
	// GetArchive of a single subfolder has names relative to it.
	rc, err := s.GetArchive(ctxFor(t), sandbox.Workspace+"/tree/d/sub")
	if err != nil {
		t.Fatal(err)
	}
	if got := readTar(t, rc); len(got) != 1 || got["deep.txt"].body != "deep" {
		t.Errorf("GetArchive of d/sub: %+v", got)
	}
}

func testPutArchiveRefusesEscape(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	writeFile(t, s, sandbox.Workspace+"/sub/keep", "k", 0o644)
	for _, name := range []string{"../x", "a/../../x", "/abs-x"} {
		data := tarOf(t, []entry{{name: name, mode: 0o644, body: "escaped"}})
		if err := s.PutArchive(ctxFor(t), sandbox.Workspace+"/sub", bytes.NewReader(data)); err == nil {
			t.Errorf("PutArchive with entry %q succeeded", name)
		}
	}
	wantAbsent(t, s, sandbox.Workspace+"/x")
	wantAbsent(t, s, "/workspace/abs-x")
	if err := s.PutArchive(ctxFor(t), sandbox.Workspace, strings.NewReader("this is not a tar stream, not at all, no")); err == nil {
		t.Errorf("PutArchive of garbage succeeded")
	}
}

func testForkIsolation(t *testing.T, p sandbox.Provider) {
	parent := create(t, p)
	writeFile(t, parent, sandbox.Workspace+"/shared.txt", "base", 0o644)
	writeFile(t, parent, sandbox.Workspace+"/dir/gone.txt", "gone", 0o644)
	writeFile(t, parent, sandbox.Scratch+"/prompt.md", "prompt", 0o644)
	kids := fork(t, parent, 2)
	for _, k := range kids {
		wantFile(t, k, sandbox.Workspace+"/shared.txt", "base")
		wantFile(t, k, sandbox.Scratch+"/prompt.md", "prompt")
	}
	writeFile(t, kids[0], sandbox.Workspace+"/only0.txt", "zero", 0o644)
	sh(t, kids[0], "echo changed > shared.txt && rm -r dir && echo s > /bestofn/s0")
	sh(t, kids[1], "rm /bestofn/prompt.md && mkdir -p new/deeper && echo one > new/deeper/f")

	wantFile(t, kids[0], sandbox.Workspace+"/shared.txt", "changed\n")
	wantAbsent(t, kids[0], sandbox.Workspace+"/dir/gone.txt")
	wantFile(t, kids[0], sandbox.Scratch+"/prompt.md", "prompt")
	wantAbsent(t, kids[0], sandbox.Workspace+"/new/deeper/f")

	wantFile(t, kids[1], sandbox.Workspace+"/shared.txt", "base")
	wantFile(t, kids[1], sandbox.Workspace+"/dir/gone.txt", "gone")
	wantAbsent(t, kids[1], sandbox.Workspace+"/only0.txt")
	wantAbsent(t, kids[1], sandbox.Scratch+"/s0")
	wantAbsent(t, kids[1], sandbox.Scratch+"/prompt.md")

	// The parent is unchanged and still readable.
	for path, want := range map[string]string{
		sandbox.Workspace + "/shared.txt":   "base",
		sandbox.Workspace + "/dir/gone.txt": "gone",
		sandbox.Scratch + "/prompt.md":      "prompt",
	} {
		got, err := parent.ReadFile(ctxFor(t), path)
		if err != nil || string(got) != want {
			t.Errorf("parent %s: %q %v, want %q", path, got, err, want)
		}
	}
	for _, path := range []string{sandbox.Workspace + "/only0.txt", sandbox.Workspace + "/new/deeper/f", sandbox.Scratch + "/s0"} {
		if _, err := parent.ReadFile(ctxFor(t), path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("parent sees %s written by a copy: err %v", path, err)
		}
	}
	rc, err := parent.GetArchive(ctxFor(t), sandbox.Workspace)
	if err != nil {
		t.Fatalf("GetArchive of a forked parent: %v", err)
	}
	if got := readTar(t, rc); len(got) != 3 || got["shared.txt"].body != "base" {
		t.Errorf("parent archive after fork: %+v", got)
	}
}

func testForkIDs(t *testing.T, p sandbox.Provider) {
	parent := create(t, p)
	other := create(t, p)
	if parent.ID() == "" || parent.ID() == other.ID() {
		t.Errorf("Create IDs %q and %q", parent.ID(), other.ID())
	}
	kids := fork(t, parent, 3)
	seen := map[string]bool{parent.ID(): true, other.ID(): true}
	for _, k := range kids {
		if k == nil || k.ID() == "" || seen[k.ID()] {
			t.Errorf("Fork returned a missing or repeated ID among %v", seen)
			continue
		}
		seen[k.ID()] = true
	}
	if kids, err := parent.Fork(ctxFor(t), 0); err == nil || len(kids) != 0 {
		t.Errorf("Fork(0): %d sandboxes, err %v; want an error", len(kids), err)
	}
	// A parent can be forked again.
	more := fork(t, parent, 1)
	if seen[more[0].ID()] {
		t.Errorf("second Fork reused ID %s", more[0].ID())
	}
}

func testForkOfFork(t *testing.T, p sandbox.Provider) {
	root := create(t, p)
	writeFile(t, root, sandbox.Workspace+"/a", "a", 0o644)
	writeFile(t, root, sandbox.Workspace+"/d/x", "x", 0o644)
	kid := fork(t, root, 1)[0]
	writeFile(t, kid, sandbox.Workspace+"/b", "b", 0o644)
	sh(t, kid, "rm -r d && mkdir d && echo y > d/y") // an opaque folder in the copy
	gks := fork(t, kid, 2)
	for _, g := range gks {
		wantFile(t, g, sandbox.Workspace+"/a", "a")
		wantFile(t, g, sandbox.Workspace+"/b", "b")
		wantFile(t, g, sandbox.Workspace+"/d/y", "y\n")
		wantAbsent(t, g, sandbox.Workspace+"/d/x")
	}
	sh(t, gks[0], "echo c > c && rm a && echo B > b")
	wantFile(t, gks[0], sandbox.Workspace+"/c", "c\n")
	wantFile(t, gks[0], sandbox.Workspace+"/b", "B\n")
	wantAbsent(t, gks[0], sandbox.Workspace+"/a")
	wantFile(t, gks[1], sandbox.Workspace+"/a", "a")
	wantFile(t, gks[1], sandbox.Workspace+"/b", "b")
	wantAbsent(t, gks[1], sandbox.Workspace+"/c")
	for _, path := range []string{sandbox.Workspace + "/c"} {
		if _, err := kid.ReadFile(ctxFor(t), path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("middle sandbox sees %s: %v", path, err)
		}
	}
	if got, err := kid.ReadFile(ctxFor(t), sandbox.Workspace+"/a"); err != nil || string(got) != "a" {
		t.Errorf("middle sandbox lost a: %q %v", got, err)
	}
	// A fork of the root made now does not see the copy's files.
	late := fork(t, root, 1)[0]
	wantAbsent(t, late, sandbox.Workspace+"/b")
	wantFile(t, late, sandbox.Workspace+"/d/x", "x")
}

func testUsage(t *testing.T, p sandbox.Provider) {
	s := create(t, p)
	sh(t, s, "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done")
	u, err := s.Usage(ctxFor(t))
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if u.Wall <= 0 || u.CPUSeconds < 0 || u.MaxRSSBytes < 0 {
		t.Errorf("Usage: %+v", u)
	}
}

func testStop(t *testing.T, p sandbox.Provider) {
	ctx := ctxFor(t)
	s, err := p.Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, s, sandbox.Workspace+"/f", "f", 0o644)
	kids, err := s.Fork(ctx, 1)
	if err != nil {
		for _, k := range kids {
			k.Stop(ctx)
		}
		s.Stop(ctx)
		t.Fatal(err)
	}
	// A command running when Stop is called ends.
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		_, err := kids[0].Exec(ctx, sandbox.ExecRequest{Argv: []string{"sleep", "100"}})
		done <- err
	}()
	<-started
	for _, x := range []sandbox.Sandbox{kids[0], s} {
		if err := x.Stop(ctx); err != nil {
			t.Errorf("Stop %s: %v", x.ID(), err)
		}
		if err := x.Stop(ctx); err != nil {
			t.Errorf("second Stop %s: %v", x.ID(), err)
		}
	}
	select {
	case <-done: // error or result: either way the command ended
	case <-ctx.Done():
		t.Fatalf("Exec still running after Stop")
	}
	var tarBuf bytes.Buffer
	tar.NewWriter(&tarBuf).Close()
	for _, x := range []sandbox.Sandbox{kids[0], s} {
		checks := map[string]error{}
		_, checks["Exec"] = x.Exec(ctx, sandbox.ExecRequest{Argv: []string{"true"}})
		checks["WriteFile"] = x.WriteFile(ctx, sandbox.Workspace+"/g", []byte("g"), 0o644)
		_, checks["ReadFile"] = x.ReadFile(ctx, sandbox.Workspace+"/f")
		checks["PutArchive"] = x.PutArchive(ctx, sandbox.Workspace, bytes.NewReader(tarBuf.Bytes()))
		var rc io.ReadCloser
		rc, checks["GetArchive"] = x.GetArchive(ctx, sandbox.Workspace)
		if rc != nil {
			rc.Close()
		}
		var forks []sandbox.Sandbox
		forks, checks["Fork"] = x.Fork(ctx, 1)
		for _, f := range forks {
			f.Stop(ctx)
		}
		_, checks["Usage"] = x.Usage(ctx)
		for name, err := range checks {
			if !errors.Is(err, sandbox.ErrStopped) {
				t.Errorf("%s after Stop: err %v, want sandbox.ErrStopped", name, err)
			}
		}
	}
}
