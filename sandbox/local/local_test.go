package local

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bestofn/bestofn/sandbox"
	"github.com/bestofn/bestofn/sandbox/sandboxtest"
)

// mode is one way the provider can run on this machine.
type mode struct {
	name        string
	opts        Options
	needOverlay bool
	needBwrap   bool
}

var modes = []mode{
	{"overlay", Options{}, true, true},
	{"copy", Options{ForceCopy: true}, false, true},
	{"unisolated-copy", Options{ForceCopy: true, ForceUnisolated: true}, false, false},
}

// newProvider makes a provider in a fresh temporary Dir (unless opts has
// one) and checks at the end of the test that it left no mount behind.
func newProvider(t *testing.T, opts Options) *Provider {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	p, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if mps, _ := mountsUnder(p.Dir()); len(mps) > 0 {
			t.Errorf("mounts left under %s: %q", p.Dir(), mps)
			for _, mp := range mps {
				_ = unmount(mp)
			}
		}
	})
	return p
}

// providerFor makes a provider for m, skipping the test when this machine
// cannot run that mode.
func providerFor(t *testing.T, m mode, dir string) *Provider {
	t.Helper()
	o := m.opts
	o.Dir = dir
	p := newProvider(t, o)
	iso := p.Isolation()
	if m.needOverlay && !iso.CopyOnWrite {
		t.Skipf("overlay mode unavailable: %q", iso.Notes)
	}
	if m.needBwrap && !iso.Namespaces {
		t.Skipf("bubblewrap unavailable: %q", iso.Notes)
	}
	return p
}

// forModes runs f as a subtest for each mode.
func forModes(t *testing.T, f func(t *testing.T, m mode)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { f(t, m) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mkbox(t *testing.T, p *Provider) sandbox.Sandbox {
	t.Helper()
	s, err := p.Create(ctxT(t), sandbox.CreateOptions{})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func shell(t *testing.T, s sandbox.Sandbox, script string) sandbox.ExecResult {
	t.Helper()
	res, err := s.Exec(ctxT(t), sandbox.ExecRequest{Shell: script})
	if err != nil {
		t.Fatalf("Exec %q: %v", script, err)
	}
	return res
}

func TestConformance(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		providerFor(t, m, "") // skip early when unavailable
		sandboxtest.Run(t, func(t *testing.T) sandbox.Provider { return providerFor(t, m, "") })
	})
}

func TestIsolationReport(t *testing.T) {
	p := newProvider(t, Options{})
	iso := p.Isolation()
	t.Logf("isolation here: %+v", iso)
	if iso.Namespaces && iso.CopyOnWrite && len(iso.Notes) != 0 {
		t.Errorf("full isolation with notes: %q", iso.Notes)
	}
	if !iso.CopyOnWrite && !hasNote(iso, "overlayfs") {
		t.Errorf("no overlay and no note: %q", iso.Notes)
	}
	if !iso.Namespaces && !hasNote(iso, "bubblewrap") {
		t.Errorf("no bubblewrap and no note: %q", iso.Notes)
	}
	if os.Geteuid() == 0 && !iso.CopyOnWrite {
		t.Logf("running as root yet overlayfs is unavailable: %q", iso.Notes)
	}

	iso = newProvider(t, Options{ForceCopy: true, ForceUnisolated: true}).Isolation()
	if iso.Namespaces || iso.CopyOnWrite || !hasNote(iso, "overlayfs disabled") || !hasNote(iso, "bubblewrap disabled") {
		t.Errorf("forced fallbacks: %+v", iso)
	}

	t.Setenv("PATH", t.TempDir()) // no bwrap on PATH
	iso = newProvider(t, Options{ForceCopy: true}).Isolation()
	if iso.Namespaces || !hasNote(iso, "bubblewrap not found") {
		t.Errorf("without bwrap on PATH: %+v", iso)
	}
}

func hasNote(iso sandbox.Isolation, s string) bool {
	for _, n := range iso.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// procsWith returns the command lines of live (non-zombie) processes whose
// argv contains arg.
func procsWith(arg string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cl) == 0 {
			continue
		}
		for _, a := range strings.Split(string(cl), "\x00") {
			if a == arg {
				out = append(out, strings.ReplaceAll(string(cl), "\x00", " "))
				break
			}
		}
	}
	return out
}

// waitGone waits (bounded) until no process has arg in its argv.
func waitGone(t *testing.T, arg string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := procsWith(arg)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still running: %q", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// uniqueSleep returns a sleep duration argument no other process uses.
func uniqueSleep() string { return fmt.Sprintf("%d", 100000+rand.IntN(800000)) }

// orphanZombies counts zombie bwrap processes whose parent is init: what
// bwrap's own pid-1 reaper leaves behind when bwrap exits before it.
func orphanZombies() int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err == nil && strings.Contains(string(b), "(bwrap) Z 1 ") {
			n++
		}
	}
	return n
}

func TestTimeoutKillsProcessTree(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := mkbox(t, providerFor(t, m, ""))
		zombies := orphanZombies()
		defer func() {
			if n := orphanZombies(); n > zombies {
				t.Errorf("%d bwrap processes orphaned", n-zombies)
			}
		}()
		a, b := uniqueSleep(), uniqueSleep()
		res, err := s.Exec(ctxT(t), sandbox.ExecRequest{
			Shell:   fmt.Sprintf("sleep %s & (sleep %s &); sleep %s", a, b, a),
			Timeout: 300 * time.Millisecond,
		})
		if err != nil || !res.TimedOut || res.ExitCode != -1 {
			t.Fatalf("timeout: %+v %v", res, err)
		}
		waitGone(t, a)
		if m.needBwrap {
			waitGone(t, b) // even the double-forked one: the pid namespace is gone
		} else if left := procsWith(b); len(left) > 0 {
			// Unisolated, a process that left the group (setsid) survives;
			// `( cmd & )` stays in the group, so it is killed too.
			t.Errorf("unisolated: grandchild survived: %q", left)
		}
	})
}

func TestBackgroundKilledAfterExit(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := mkbox(t, providerFor(t, m, ""))
		a := uniqueSleep()
		res := shell(t, s, fmt.Sprintf("sleep %s & echo left", a))
		if res.ExitCode != 0 || string(res.Stdout) != "left\n" {
			t.Fatalf("%+v", res)
		}
		waitGone(t, a)
	})
}

func TestStopKillsRunningCommand(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := mkbox(t, providerFor(t, m, ""))
		a := uniqueSleep()
		done := make(chan error, 1)
		go func() {
			_, err := s.Exec(ctxT(t), sandbox.ExecRequest{Argv: []string{"sleep", a}})
			done <- err
		}()
		deadline := time.Now().Add(10 * time.Second)
		for len(procsWith(a)) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("command never started")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := s.Stop(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, sandbox.ErrStopped) {
			t.Errorf("Exec interrupted by Stop: err %v, want ErrStopped", err)
		}
		waitGone(t, a)
	})
}

func TestNetwork(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		if !m.needBwrap {
			t.Skip("unisolated mode cannot cut the network")
		}
		s := mkbox(t, providerFor(t, m, ""))
		ifaces := func(network bool) []string {
			res, err := s.Exec(ctxT(t), sandbox.ExecRequest{Argv: []string{"cat", "/proc/net/dev"}, Network: network})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("cat /proc/net/dev: %v %+v", err, res)
			}
			var names []string
			for _, line := range strings.Split(string(res.Stdout), "\n") {
				if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
					names = append(names, strings.TrimSpace(name))
				}
			}
			return names
		}
		if got := ifaces(false); len(got) != 1 || got[0] != "lo" {
			t.Errorf("without Network: interfaces %q, want only lo", got)
		}
		host, _ := os.ReadFile("/proc/net/dev")
		if strings.Count(string(host), ":") > 1 {
			if got := ifaces(true); len(got) < 2 {
				t.Errorf("with Network: interfaces %q, want the host's", got)
			}
		}
	})
}

// visibleTempDir makes a folder outside /tmp (which commands never see
// anyway) so that hiding it means something.
func visibleTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "bestofn-localtest-")
	if err != nil {
		t.Skipf("no folder outside /tmp to test hiding: %v", err)
	}
	t.Cleanup(func() {
		if mps, _ := mountsUnder(d); len(mps) == 0 {
			_ = removeAll(d)
		}
	})
	return d
}

func TestHide(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		if !m.needBwrap {
			t.Skip("unisolated mode cannot hide host files")
		}
		base := visibleTempDir(t)
		secretFile := filepath.Join(base, "key.pem")
		secretDir := filepath.Join(base, "data")
		os.WriteFile(secretFile, []byte("PRIVATE KEY"), 0o600)
		os.MkdirAll(filepath.Join(secretDir, "db"), 0o700)
		os.WriteFile(filepath.Join(secretDir, "db", "bot.sqlite"), []byte("rows"), 0o600)
		missing := filepath.Join(base, "not-there")
		o := m.opts
		o.Dir = filepath.Join(base, "sandboxes")
		o.Hide = []string{secretFile, secretDir, missing}
		p := newProvider(t, o)
		if m.needOverlay && !p.Isolation().CopyOnWrite {
			t.Skip("overlay unavailable")
		}
		s := mkbox(t, p)
		other := mkbox(t, p)
		if err := other.WriteFile(ctxT(t), "/workspace/other.txt", []byte("other"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := shell(t, s, fmt.Sprintf(`cat %s; echo "[$(ls -A %s)]"; echo "[$(ls -A %s)]"; touch %s/x 2>/dev/null && echo writable; cat %s/*/upper/workspace/other.txt 2>/dev/null; echo end`,
			secretFile, secretDir, p.Dir(), secretDir, p.Dir()))
		if got := string(res.Stdout); got != "[]\n[]\nend\n" {
			t.Errorf("hidden paths visible inside: %q (stderr %q)", got, res.Stderr)
		}
		// The files are still there on the host, and the sandbox works.
		if b, _ := os.ReadFile(secretFile); string(b) != "PRIVATE KEY" {
			t.Errorf("host file changed: %q", b)
		}
		if got := shell(t, s, "echo ok > f && cat f"); string(got.Stdout) != "ok\n" {
			t.Errorf("sandbox broken by hiding: %+v", got)
		}

		// Dir inside a hidden folder (DATA_DIR/sandboxes with DATA_DIR hidden).
		o.Dir = filepath.Join(secretDir, "sandboxes")
		o.Hide = []string{secretDir}
		p2 := newProvider(t, o)
		s2 := mkbox(t, p2)
		res = shell(t, s2, fmt.Sprintf(`echo "[$(ls -A %s)]"; echo hi > /workspace/f && cat /workspace/f`, secretDir))
		if got := string(res.Stdout); got != "[]\nhi\n" {
			t.Errorf("Dir under a hidden folder: %q (stderr %q)", got, res.Stderr)
		}
	})
}

func TestNoCapabilities(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		if !m.needBwrap {
			t.Skip("unisolated")
		}
		s := mkbox(t, providerFor(t, m, ""))
		res := shell(t, s, `grep CapEff /proc/self/status; mount -o remount,rw / 2>/dev/null && echo remounted; touch /usr/x 2>/dev/null && echo wrote-host; hostname`)
		if got := string(res.Stdout); got != "CapEff:\t0000000000000000\nbestofn\n" {
			t.Errorf("inside: %q (stderr %q)", got, res.Stderr)
		}
	})
}

func tarBytes(t *testing.T, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(h.Linkname)) // body carried in Linkname for brevity
			body := h.Linkname
			h.Linkname = ""
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			io.WriteString(tw, body)
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	return buf.Bytes()
}

func TestSymlinkEscapeRefused(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := mkbox(t, providerFor(t, m, ""))
		outside := t.TempDir()
		secret := filepath.Join(outside, "secret")
		os.WriteFile(secret, []byte("host secret"), 0o600)
		ctx := ctxT(t)
		res := shell(t, s, fmt.Sprintf("ln -s %s /workspace/pw && ln -s %s /workspace/out && mkdir /workspace/d && ln -s ../out /workspace/d/up && mkfifo /workspace/fifo", secret, outside))
		if res.ExitCode != 0 {
			t.Fatalf("planting symlinks: %+v", res)
		}
		for _, p := range []string{"/workspace/pw", "/workspace/out/secret", "/workspace/d/up/secret", "/workspace/fifo"} {
			if b, err := s.ReadFile(ctx, p); err == nil {
				t.Errorf("ReadFile %s through a symlink: %q", p, b)
			}
		}
		for _, p := range []string{"/workspace/pw", "/workspace/out/new", "/workspace/d/up/new"} {
			if err := s.WriteFile(ctx, p, []byte("pwned"), 0o644); err == nil {
				t.Errorf("WriteFile %s through a symlink succeeded", p)
			}
		}
		reg := func(name string) *tar.Header {
			return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Linkname: "pwned"}
		}
		if err := s.PutArchive(ctx, "/workspace/out", bytes.NewReader(tarBytes(t, reg("new")))); err == nil {
			t.Errorf("PutArchive into a symlinked folder succeeded")
		}
		if err := s.PutArchive(ctx, "/workspace", bytes.NewReader(tarBytes(t, reg("out/new")))); err == nil {
			t.Errorf("PutArchive of an entry under a symlink succeeded")
		}
		// An entry that plants a symlink and then writes through it.
		evil := tarBytes(t,
			&tar.Header{Name: "trap", Typeflag: tar.TypeSymlink, Linkname: outside},
			reg("trap/new"))
		if err := s.PutArchive(ctx, "/workspace", bytes.NewReader(evil)); err == nil {
			t.Errorf("PutArchive writing through its own symlink succeeded")
		}
		if _, err := os.Stat(filepath.Join(outside, "new")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a file was written outside the sandbox: %v", err)
		}
		// A file entry where a symlink is replaces the symlink, not its target.
		if err := s.PutArchive(ctx, "/workspace", bytes.NewReader(tarBytes(t, reg("pw")))); err != nil {
			t.Errorf("PutArchive replacing a symlink: %v", err)
		}
		if b, _ := os.ReadFile(secret); string(b) != "host secret" {
			t.Errorf("host file changed: %q", b)
		}
		if b, err := s.ReadFile(ctx, "/workspace/pw"); err != nil || string(b) != "pwned" {
			t.Errorf("replaced symlink: %q %v", b, err)
		}
		if _, err := s.GetArchive(ctx, "/workspace/out"); err == nil {
			t.Errorf("GetArchive of a symlinked folder succeeded")
		}
		if _, err := s.Exec(ctx, sandbox.ExecRequest{Argv: []string{"true"}, Dir: "/workspace/out"}); err == nil {
			t.Errorf("Exec in a symlinked Dir succeeded")
		}
		rc, err := s.GetArchive(ctx, "/workspace")
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		var names []string
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, h.Name)
			if h.Name == "out" && (h.Typeflag != tar.TypeSymlink || h.Linkname != outside) {
				t.Errorf("out archived as %+v", h)
			}
		}
		if want := "d/ d/up out pw trap"; strings.Join(names, " ") != want {
			t.Errorf("archive names %q, want %q (sorted, symlinks not followed, fifo left out)", names, want)
		}

		if !m.needBwrap {
			// Unisolated, a command can even replace the workspace folder.
			shell(t, s, "rm -rf /workspace && ln -s "+outside+" /workspace")
			if b, err := s.ReadFile(ctx, "/workspace/secret"); err == nil {
				t.Errorf("ReadFile through a symlinked workspace: %q", b)
			}
		}
	})
}

func TestFrozenParent(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := mkbox(t, providerFor(t, m, ""))
		ctx := ctxT(t)
		s.WriteFile(ctx, "/workspace/f", []byte("f"), 0o644)
		kids, err := s.Fork(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kids[0].Stop(context.Background()) })
		if err := s.WriteFile(ctx, "/workspace/g", []byte("g"), 0o644); !errors.Is(err, ErrFrozen) {
			t.Errorf("WriteFile on a forked parent: %v", err)
		}
		if _, err := s.Exec(ctx, sandbox.ExecRequest{Argv: []string{"true"}}); !errors.Is(err, ErrFrozen) {
			t.Errorf("Exec on a forked parent: %v", err)
		}
		if err := s.PutArchive(ctx, "/workspace", bytes.NewReader(tarBytes(t))); !errors.Is(err, ErrFrozen) {
			t.Errorf("PutArchive on a forked parent: %v", err)
		}
		if b, err := s.ReadFile(ctx, "/workspace/f"); err != nil || string(b) != "f" {
			t.Errorf("ReadFile on a forked parent: %q %v", b, err)
		}
		// A forked copy frozen in turn (overlay: remounted read-only).
		gk, err := kids[0].Fork(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { gk[0].Stop(context.Background()) })
		if b, err := kids[0].ReadFile(ctx, "/workspace/f"); err != nil || string(b) != "f" {
			t.Errorf("ReadFile on a forked copy: %q %v", b, err)
		}
	})
}

func TestStopCleansUp(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		p := providerFor(t, m, "")
		ctx := ctxT(t)
		root, err := p.Create(ctx, sandbox.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		shell(t, root, "mkdir -p ro/x && echo f > ro/x/f && chmod 444 ro/x/f && chmod 555 ro/x ro")
		kids, err := root.Fork(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		shell(t, kids[0], "echo k > k")
		gks, err := kids[0].Fork(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		shell(t, gks[0], "echo g > g && mkdir -p locked/in && echo z > locked/in/z && chmod 000 locked/in/z locked/in locked")
		if m.needOverlay {
			if mps, _ := mountsUnder(p.Dir()); len(mps) != 3 { // a copy, a copy remounted read-only, a grandchild
				t.Errorf("mounts while running: %q", mps)
			}
		}
		// Stop the parent first: copies keep working, files go with the last one.
		if err := root.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if b, err := gks[0].ReadFile(ctx, "/workspace/g"); err != nil || string(b) != "g\n" {
			t.Errorf("grandchild after root Stop: %q %v", b, err)
		}
		if res := shell(t, kids[1], "cat ro/x/f"); string(res.Stdout) != "f\n" {
			t.Errorf("copy after parent Stop: %+v", res)
		}
		for _, x := range []sandbox.Sandbox{kids[0], gks[0], kids[1]} {
			if err := x.Stop(ctx); err != nil {
				t.Errorf("Stop %s: %v", x.ID(), err)
			}
		}
		if mps, _ := mountsUnder(p.Dir()); len(mps) != 0 {
			t.Errorf("mounts after Stop: %q", mps)
		}
		if ents, _ := os.ReadDir(p.Dir()); len(ents) != 0 {
			t.Errorf("files left in %s: %v", p.Dir(), ents)
		}
	})
}

func TestUsageCounts(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := mkbox(t, providerFor(t, m, ""))
		// CPU time of a command that ends and of one killed on timeout is
		// counted (the bounds are far below what the loops use).
		shell(t, s, "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done")
		u, err := s.Usage(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if u.CPUSeconds < 0.02 || u.MaxRSSBytes < 1<<20 || u.Wall <= 0 {
			t.Errorf("usage after a busy loop: %+v", u)
		}
		res, err := s.Exec(ctxT(t), sandbox.ExecRequest{Shell: "while :; do :; done", Timeout: 300 * time.Millisecond})
		if err != nil || !res.TimedOut {
			t.Fatalf("busy loop with a timeout: %+v %v", res, err)
		}
		u2, err := s.Usage(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if u2.CPUSeconds-u.CPUSeconds < 0.02 {
			t.Errorf("CPU of a timed-out command not counted: %v then %v", u.CPUSeconds, u2.CPUSeconds)
		}
	})
}

func TestGetArchiveDeterministic(t *testing.T) {
	s := mkbox(t, providerFor(t, modes[2], ""))
	shell(t, s, "mkdir -p b/c a && echo 1 > b/c/z && echo 2 > a/y && echo 3 > x && ln -s x l")
	get := func() []byte {
		rc, err := s.GetArchive(ctxT(t), "/workspace")
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := get(), get()
	if !bytes.Equal(a, b) {
		t.Errorf("two archives of the same tree differ")
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(a))
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
	}
	if got, want := strings.Join(names, " "), "a/ a/y b/ b/c/ b/c/z l x"; got != want {
		t.Errorf("names %q, want %q", got, want)
	}
	// A reader that stops early does not block Stop.
	rc, err := s.GetArchive(ctxT(t), "/workspace")
	if err != nil {
		t.Fatal(err)
	}
	rc.Read(make([]byte, 10))
	if err := s.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rc); !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("reading an archive after Stop: %v", err)
	}
	rc.Close()
}

func TestPrune(t *testing.T) {
	p := newProvider(t, Options{})
	live := mkbox(t, p)
	live.WriteFile(ctxT(t), "/workspace/f", []byte("f"), 0o644)
	stale := filepath.Join(p.Dir(), "deadbeef0000")
	for _, d := range []string{"upper/workspace", "lower", "work", "merged"} {
		os.MkdirAll(filepath.Join(stale, d), 0o755)
	}
	if p.Isolation().CopyOnWrite {
		if err := mountOverlay(filepath.Join(stale, "merged"), []string{filepath.Join(stale, "lower")}, filepath.Join(stale, "upper"), filepath.Join(stale, "work")); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Prune(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale sandbox left: %v", err)
	}
	if b, err := live.ReadFile(ctxT(t), "/workspace/f"); err != nil || string(b) != "f" {
		t.Errorf("Prune hurt a live sandbox: %q %v", b, err)
	}
}

func TestBotEnvNotInherited(t *testing.T) {
	t.Setenv("WEBHOOK_SECRET", "hunter2")
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := mkbox(t, providerFor(t, m, ""))
			res := shell(t, s, "env; cat /proc/self/environ")
			if bytes.Contains(res.Stdout, []byte("hunter2")) {
				t.Errorf("bot environment leaked: %s", res.Stdout)
			}
		})
	}
}

func TestRewritePaths(t *testing.T) {
	const tree = "/d/x/upper"
	for in, want := range map[string]string{
		"/workspace":                    tree + "/workspace",
		"/workspace/a/b":                tree + "/workspace/a/b",
		"/bestofn/home":                 tree + "/bestofn/home",
		"cd /workspace && ls":           "cd " + tree + "/workspace && ls",
		"--out=/bestofn/p.diff":         "--out=" + tree + "/bestofn/p.diff",
		"a:/workspace/bin:/usr/bin":     "a:" + tree + "/workspace/bin:/usr/bin",
		`cat "/workspace/x" '/bestofn'`: `cat "` + tree + `/workspace/x" '` + tree + `/bestofn'`,
		"/workspaces/x":                 "/workspaces/x",
		"/workspace2":                   "/workspace2",
		"/x/workspace":                  "/x/workspace",
		"$HOME/workspace":               "$HOME/workspace",
		"~/workspace":                   "~/workspace",
		"no paths":                      "no paths",
		"/workspace.bak":                "/workspace.bak",
	} {
		if got := rewritePaths(in, tree); got != want {
			t.Errorf("rewritePaths(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTailBuffer(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, limit := range []int{1, 7, 64, 1000} {
		tb := &tailBuffer{limit: limit}
		var all []byte
		for range 500 {
			p := make([]byte, r.IntN(3*limit+2))
			for i := range p {
				p[i] = byte(r.IntN(256))
			}
			tb.Write(p)
			all = append(all, p...)
			want := all
			if len(want) > limit {
				want = want[len(want)-limit:]
			}
			if !bytes.Equal(tb.Bytes(), want) || tb.Truncated() != (len(all) > limit) {
				t.Fatalf("limit %d after %d bytes: got %d bytes, truncated %v", limit, len(all), len(tb.Bytes()), tb.Truncated())
			}
		}
	}
}

func TestBwrapMissingCommand(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := mkbox(t, providerFor(t, m, ""))
		res, err := s.Exec(ctxT(t), sandbox.ExecRequest{Argv: []string{"no-such-command-bestofn"}})
		if err != nil || res.ExitCode == 0 {
			t.Errorf("missing command: %+v %v", res, err)
		}
	})
}

// TestDirOutsideRefused checks a Dir outside the sandbox roots is refused.
func TestDirOutsideRefused(t *testing.T) {
	s := mkbox(t, providerFor(t, modes[2], ""))
	for _, d := range []string{"/etc", "/workspace/../etc", "/tmp"} {
		if _, err := s.Exec(ctxT(t), sandbox.ExecRequest{Argv: []string{"true"}, Dir: d}); err == nil {
			t.Errorf("Dir %q accepted", d)
		}
	}
}
