package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bestofn/bestofn/sandbox"
)

// drainBound is how long Exec waits for each step of ending a command: for
// the namespace init to exit after a signal, and for the output pipes to
// close after the process group is killed (a process that left the group
// may still hold them).
const drainBound = 2 * time.Second

// Exec runs a command in the sandbox and waits for it (see the package doc
// for what it can see). A non-zero exit or a timeout is a result. The error
// is non-nil, and the result empty, when the request is invalid, the working
// folder is missing or a symlink, the sandbox is frozen (ErrFrozen) or
// stopped (sandbox.ErrStopped, also when Stop interrupts the command), or ctx
// ends (its error; the command is killed).
func (b *box) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	res, err := b.exec(ctx, req)
	if err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("exec in %s: %w", b.id, err)
	}
	return res, nil
}

func (b *box) exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	var argv []string
	switch {
	case len(req.Argv) > 0 && req.Shell != "":
		return sandbox.ExecResult{}, errors.New("both Argv and Shell are set")
	case len(req.Argv) > 0:
		argv = append([]string(nil), req.Argv...)
	case req.Shell != "":
		argv = []string{"bash", "-c", req.Shell}
	default:
		return sandbox.ExecResult{}, errors.New("neither Argv nor Shell is set")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return sandbox.ExecResult{}, errors.New("argument has a NUL byte")
		}
	}
	if argv[0] == "" {
		return sandbox.ExecResult{}, errors.New("empty program name")
	}
	limit := req.OutputLimit
	switch {
	case limit < 0:
		return sandbox.ExecResult{}, fmt.Errorf("OutputLimit is negative (%d)", limit)
	case limit == 0:
		limit = sandbox.DefaultOutputLimit
	}
	if req.Timeout < 0 {
		return sandbox.ExecResult{}, fmt.Errorf("Timeout is negative (%v)", req.Timeout)
	}
	dir := req.Dir
	if dir == "" {
		dir = sandbox.Workspace
	}
	dirParts, err := splitPath(dir)
	if err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("dir: %w", err)
	}
	dir = "/" + strings.Join(dirParts, "/")
	env := map[string]string{
		"PATH":   b.p.path,
		"HOME":   sandbox.Scratch + "/home",
		"TMPDIR": "/tmp",
		"LANG":   "C.UTF-8",
	}
	for k, v := range req.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return sandbox.ExecResult{}, fmt.Errorf("bad environment variable %q", k)
		}
		env[k] = v
	}

	release, err := b.begin(true)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	defer release()
	if err := ctx.Err(); err != nil {
		return sandbox.ExecResult{}, err
	}
	tree := b.treePath()
	if err := prepareDirs(tree, dirParts); err != nil {
		return sandbox.ExecResult{}, err
	}

	cmd := &exec.Cmd{SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
	var info *os.File
	if b.p.bwrap != "" {
		// bwrap reports the host pid of the namespace's init on fd 3; killing
		// that init ends every process inside while bwrap lives on to reap
		// it (and count its CPU time).
		infoR, infoW, err := os.Pipe()
		if err != nil {
			return sandbox.ExecResult{}, fmt.Errorf("pipe: %w", err)
		}
		defer infoW.Close()
		info = infoR
		cmd.ExtraFiles = []*os.File{infoW}
		cmd.Path = b.p.bwrap
		cmd.Args = append([]string{"bwrap", "--info-fd", "3"}, b.p.bwrapArgs(tree, dir, req.Network, argv)...)
		cmd.Dir = "/"
	} else {
		rw := func(s string) string { return rewritePaths(s, tree) }
		for i := range argv {
			argv[i] = rw(argv[i])
		}
		for k, v := range env {
			env[k] = rw(v)
		}
		cmd.Dir = rw(dir)
		if _, set := req.Env["TMPDIR"]; !set {
			// The host's /tmp is shared; give each sandbox its own, outside
			// the tree so Fork does not copy it. Stop deletes it.
			tmp := filepath.Join(b.dir, "tmp")
			if err := os.Mkdir(tmp, 0o1777); err != nil && !errors.Is(err, fs.ErrExist) {
				return sandbox.ExecResult{}, fmt.Errorf("make TMPDIR: %w", err)
			}
			env["TMPDIR"] = tmp
		}
		prog, ok := lookPath(argv[0], env["PATH"], cmd.Dir)
		if !ok {
			return sandbox.ExecResult{ExitCode: 127, Stderr: []byte(argv[0] + ": command not found\n")}, nil
		}
		cmd.Path = prog
		cmd.Args = argv
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	sort.Strings(cmd.Env)
	return b.run(ctx, cmd, info, req.Stdin, limit, req.Timeout)
}

// prepareDirs checks that the working folder is a real folder in the tree
// (no symlinks on the way) and makes sure the HOME folder exists.
func prepareDirs(tree string, dirParts []string) error {
	root, err := openTree(tree)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	if fd, err := walkDirs(root, []string{"bestofn", "home"}, true, "/bestofn/home"); err == nil {
		unix.Close(fd)
	}
	fd, err := walkDirs(root, dirParts, false, "/"+strings.Join(dirParts, "/"))
	if err != nil {
		return fmt.Errorf("dir: %w", err)
	}
	unix.Close(fd)
	return nil
}

// run starts cmd in its own process group and waits for it. On timeout,
// ctx end or Stop it kills the command: through the namespace init that
// bwrap reports on info when known (bwrap then reaps it), else by killing
// the whole group. Once the command has exited, whatever is left in its
// group is killed too.
func (b *box) run(ctx context.Context, cmd *exec.Cmd, info *os.File, stdin []byte, limit int, timeout time.Duration) (sandbox.ExecResult, error) {
	var toClose []*os.File
	defer func() {
		for _, f := range toClose {
			_ = f.Close()
		}
	}()
	if info != nil {
		toClose = append(toClose, info)
	}
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err != nil {
			return nil, nil, fmt.Errorf("pipe: %w", err)
		}
		toClose = append(toClose, r, w)
		return r, w, nil
	}
	outR, outW, err := pipe()
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	errR, errW, err := pipe()
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	var inR, inW *os.File
	if len(stdin) > 0 {
		if inR, inW, err = pipe(); err != nil {
			return sandbox.ExecResult{}, err
		}
		cmd.Stdin = inR
	}
	cmd.Stdout, cmd.Stderr = outW, errW

	start := time.Now()
	// The parent-death signal fires when the thread that forked exits; a Go
	// thread only exits when a goroutine locked to it ends, so fork from a
	// thread we lock and then give back.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	// Our copies of the child's ends: closing them lets readers see EOF.
	outW.Close()
	errW.Close()
	if inR != nil {
		inR.Close()
	}
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	if err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	pid := cmd.Process.Pid

	stdout, stderr := &tailBuffer{limit: limit}, &tailBuffer{limit: limit}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); _, _ = io.Copy(stdout, outR) }()
	go func() { defer readers.Done(); _, _ = io.Copy(stderr, errR) }()
	if inW != nil {
		go func() { _, _ = inW.Write(stdin); _ = inW.Close() }()
	}

	nsInit := newInitWatch(info, pid)

	// Wait for the exit without reaping, so the process group id cannot be
	// reused before the group is killed.
	exited := make(chan struct{})
	var reaped bool
	var waitErr error
	go func() {
		defer close(exited)
		if err := waitNoReap(pid); err != nil {
			waitErr, reaped = cmd.Wait(), true
		}
	}()
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	var timedOut bool
	var cause error
	select {
	case <-exited:
	case <-timer:
		timedOut = true
	case <-ctx.Done():
		cause = ctx.Err()
	case <-b.stopCh:
		cause = sandbox.ErrStopped
	}
	if timedOut || cause != nil {
		// Ask the init to kill and reap everything (so the CPU time is
		// counted), then force it, then fall back to the group.
		for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGKILL} {
			if !nsInit.signal(sig) || closedWithin(exited, drainBound) {
				break
			}
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL) // the command if still there, its leftovers otherwise
	<-exited
	if !reaped {
		waitErr = cmd.Wait()
	}
	duration := time.Since(start)
	nsInit.close()
	if inW != nil {
		_ = inW.Close()
	}
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	if !closedWithin(drained, drainBound) {
		outR.Close() // a process outside the group still holds the pipe
		errR.Close()
		<-drained
	}

	state := cmd.ProcessState
	if state == nil {
		return sandbox.ExecResult{}, fmt.Errorf("wait: %w", waitErr)
	}
	if ru, ok := state.SysUsage().(*syscall.Rusage); ok && ru != nil {
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		b.mu.Lock()
		b.cpu += cpu
		b.maxRSS = max(b.maxRSS, ru.Maxrss*1024)
		b.mu.Unlock()
	}
	if cause != nil {
		return sandbox.ExecResult{}, cause
	}
	res := sandbox.ExecResult{
		ExitCode:        state.ExitCode(),
		Stdout:          stdout.Bytes(),
		Stderr:          stderr.Bytes(),
		StdoutTruncated: stdout.Truncated(),
		StderrTruncated: stderr.Truncated(),
		TimedOut:        timedOut,
		Duration:        duration,
	}
	if timedOut {
		res.ExitCode = -1
	}
	return res, nil
}

// initWatch holds a pidfd of the pid namespace init that bwrap reports.
type initWatch struct {
	done  chan struct{} // closed when the report was read (or is not coming)
	info  *os.File
	mu    sync.Mutex
	pidfd int // -1 until known
}

// newInitWatch reads bwrap's {"child-pid": N} report from info in the
// background and opens a pidfd for N, checking that N is a child of bwrap
// (bwrapPid, not yet reaped) so that a reused pid is never signalled. info
// may be nil.
func newInitWatch(info *os.File, bwrapPid int) *initWatch {
	w := &initWatch{done: make(chan struct{}), info: info, pidfd: -1}
	if info == nil {
		close(w.done)
		return w
	}
	go func() {
		defer close(w.done)
		var report struct {
			ChildPid int `json:"child-pid"`
		}
		if err := json.NewDecoder(info).Decode(&report); err != nil || report.ChildPid <= 0 {
			return
		}
		fd, err := unix.PidfdOpen(report.ChildPid, 0)
		if err != nil {
			return
		}
		if parentOf(report.ChildPid) != bwrapPid {
			unix.Close(fd)
			return
		}
		w.mu.Lock()
		w.pidfd = fd
		w.mu.Unlock()
	}()
	return w
}

// signal sends sig to the namespace init; false when it is not known.
func (w *initWatch) signal(sig unix.Signal) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pidfd >= 0 && unix.PidfdSendSignal(w.pidfd, sig, nil, 0) == nil
}

// close waits for the reader (unblocking it if the report never came) and
// releases the pidfd.
func (w *initWatch) close() {
	if w.info != nil {
		_ = w.info.SetReadDeadline(time.Now())
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pidfd >= 0 {
		unix.Close(w.pidfd)
		w.pidfd = -1
	}
}

// parentOf returns the parent pid of pid from /proc, or -1.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return -1
	}
	return ppid
}

// closedWithin reports whether ch is closed within d.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// waitNoReap blocks until process pid has exited, leaving it a zombie.
func waitNoReap(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

// bwrapArgs returns bubblewrap's arguments to run argv with tree's
// workspace/ and bestofn/ at /workspace and /bestofn, in folder dir.
func (p *Provider) bwrapArgs(tree, dir string, network bool, argv []string) []string {
	var a []string
	for _, r := range p.roots {
		if r.link != "" {
			a = append(a, "--symlink", r.link, "/"+r.name)
		} else {
			a = append(a, "--ro-bind-try", "/"+r.name, "/"+r.name)
		}
	}
	a = append(a, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
	if network && p.resolv != "" {
		a = append(a, "--ro-bind-try", p.resolv, p.resolv)
	}
	dirs, files := p.hidden()
	for _, d := range dirs {
		a = append(a, "--tmpfs", d)
	}
	for _, f := range files {
		a = append(a, "--ro-bind", "/dev/null", f)
	}
	for _, d := range dirs {
		a = append(a, "--remount-ro", d)
	}
	a = append(a,
		"--bind", filepath.Join(tree, "workspace"), sandbox.Workspace,
		"--bind", filepath.Join(tree, "bestofn"), sandbox.Scratch,
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "bestofn",
		"--as-pid-1", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
	)
	if !network {
		a = append(a, "--unshare-net")
	}
	a = append(a, "--chdir", dir, "--", "bash", "-c", initScript, "bestofn-init")
	return append(a, argv...)
}

// initScript is pid 1 of a bubblewrap sandbox. bwrap's own init would leave
// bwrap unable to reap it (losing the command's CPU time and leaving a
// zombie for the host's init), so bwrap runs with --as-pid-1 and this
// script: it starts the command as its child (with the real stdin; bash's
// own job messages go to /dev/null) and exits with the command's status
// (128+n when killed by signal n). On SIGTERM (a timeout) it kills every
// other process of the namespace and reaps them before exiting, so their
// CPU time is counted. When it exits the kernel kills whatever is left.
const initScript = `trap 'kill -KILL -1; wait; exit 137' TERM; exec 3<&0 4>&2 2>/dev/null; exec -- "$@" <&3 2>&4 3<&- 4>&- & wait $!`

// hidden returns the folders and files to cover inside bubblewrap: the
// existing Hide paths and Dir, symlinks resolved, leaving out those already
// invisible (not under a folder mirrored from the host, or under another
// hidden folder).
func (p *Provider) hidden() (dirs, files []string) {
	bound := map[string]bool{}
	for _, r := range p.roots {
		if r.link == "" {
			bound[r.name] = true
		}
	}
	type item struct {
		path string
		dir  bool
	}
	var items []item
	for _, h := range append(append([]string(nil), p.hide...), p.dir) {
		real, err := filepath.EvalSymlinks(h)
		if err != nil {
			continue
		}
		top, _, _ := strings.Cut(strings.TrimPrefix(real, "/"), "/")
		if real == "/" || !bound[top] {
			continue
		}
		fi, err := os.Stat(real)
		if err != nil {
			continue
		}
		items = append(items, item{real, fi.IsDir()})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].path < items[j].path })
	for _, it := range items {
		covered := false
		for _, d := range dirs {
			if it.path == d || strings.HasPrefix(it.path, d+"/") {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		if it.dir {
			dirs = append(dirs, it.path)
		} else if !slicesContains(files, it.path) {
			files = append(files, it.path)
		}
	}
	return dirs, files
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// rewritePaths replaces, in s, each /workspace and /bestofn that starts a
// path with the matching folder of tree (unisolated mode).
func rewritePaths(s, tree string) string {
	prefixes := [...]string{sandbox.Workspace, sandbox.Scratch}
	if !strings.Contains(s, prefixes[0]) && !strings.Contains(s, prefixes[1]) {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '/' || (i > 0 && isPathByte(s[i-1])) {
			continue
		}
		for _, pre := range prefixes {
			j := i + len(pre)
			if strings.HasPrefix(s[i:], pre) && (j == len(s) || !isNameByte(s[j])) {
				b.WriteString(s[last:i])
				b.WriteString(tree + pre)
				last = j
				i = j - 1
				break
			}
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// isNameByte says c can be part of a file name in a path written in a command.
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c >= 0x80
}

// isPathByte says c can come before a '/' inside a longer path.
func isPathByte(c byte) bool { return isNameByte(c) || c == '/' || c == '~' || c == '$' || c == '}' }

// lookPath finds prog in pathEnv the way a shell would (unisolated mode).
// A name with a slash is taken as is, relative to dir.
func lookPath(prog, pathEnv, dir string) (string, bool) {
	if strings.Contains(prog, "/") {
		p := prog
		if !path.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p, isExecutable(p)
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, prog)
		if isExecutable(p) {
			return p, true
		}
	}
	return "", false
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && unix.Access(p, unix.X_OK) == nil
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	limit int
	buf   []byte
	total int64
}

// Write appends p, dropping the oldest bytes beyond the limit; it never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	t.total += int64(n)
	if n >= t.limit {
		t.buf = append(t.buf[:0], p[n-t.limit:]...)
		return n, nil
	}
	if len(t.buf)+n > 2*t.limit { // compact to the last limit-n bytes
		keep := t.limit - n
		copy(t.buf, t.buf[len(t.buf)-keep:])
		t.buf = t.buf[:keep]
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// Bytes returns a copy of the last limit bytes written.
func (t *tailBuffer) Bytes() []byte {
	b := t.buf
	if len(b) > t.limit {
		b = b[len(b)-t.limit:]
	}
	return append([]byte(nil), b...)
}

// Truncated says more than limit bytes were written.
func (t *tailBuffer) Truncated() bool { return t.total > int64(t.limit) }
