package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bestofn/bestofn/sandbox"
)

// box is one local sandbox.
type box struct {
	p       *Provider
	id      string
	dir     string   // <Dir>/<id>
	layers  []string // the overlay layers (top first) a copy of this box stacks on
	parent  *box     // set for an overlay copy: the box whose layers it reads
	created time.Time
	labels  map[string]string

	forkMu sync.Mutex // serializes Fork

	mu      sync.Mutex
	tree    string   // host folder holding workspace/ and bestofn/
	mounts  []string // overlay mount points of this box, in mount order
	stopped bool
	frozen  bool
	writers int            // running Exec, WriteFile and PutArchive calls
	ops     sync.WaitGroup // every running method call (and GetArchive stream)
	stopCh  chan struct{}  // closed by Stop
	cpu     time.Duration
	maxRSS  int64

	// Guarded by p.mu.
	children int  // live overlay copies reading this box's layers
	removing bool // stopped; files go when children reaches zero
}

var _ sandbox.Sandbox = (*box)(nil)

// newBox registers a sandbox whose files exist in dir.
func (p *Provider) newBox(id, dir, tree string, layers []string, parent *box, labels map[string]string) *box {
	b := &box{
		p: p, id: id, dir: dir, tree: tree, layers: layers, parent: parent,
		created: time.Now(), stopCh: make(chan struct{}),
	}
	if len(labels) > 0 {
		b.labels = make(map[string]string, len(labels))
		for k, v := range labels {
			b.labels[k] = v
		}
	}
	p.mu.Lock()
	p.live[id] = b
	if parent != nil {
		parent.children++
	}
	p.mu.Unlock()
	return b
}

// ID returns the sandbox's name, unique within its Provider's Dir (12 hex
// digits, also the name of its folder).
func (b *box) ID() string { return b.id }

// begin registers a method call; the returned func ends it. It fails with
// ErrStopped after Stop and, for writes, with ErrFrozen after Fork.
func (b *box) begin(write bool) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return nil, sandbox.ErrStopped
	}
	if write && b.frozen {
		return nil, ErrFrozen
	}
	b.ops.Add(1)
	if write {
		b.writers++
	}
	return func() {
		if write {
			b.mu.Lock()
			b.writers--
			b.mu.Unlock()
		}
		b.ops.Done()
	}, nil
}

// treePath returns the host folder holding workspace/ and bestofn/.
func (b *box) treePath() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tree
}

// Usage returns the CPU time and largest resident set of the commands run
// so far and the time since Create or Fork; ErrStopped after Stop.
func (b *box) Usage(ctx context.Context) (sandbox.Usage, error) {
	release, err := b.begin(false)
	if err != nil {
		return sandbox.Usage{}, fmt.Errorf("usage of %s: %w", b.id, err)
	}
	defer release()
	b.mu.Lock()
	defer b.mu.Unlock()
	return sandbox.Usage{CPUSeconds: b.cpu.Seconds(), MaxRSSBytes: b.maxRSS, Wall: time.Since(b.created)}, nil
}

// Fork returns n copies of this sandbox and freezes it (see ErrFrozen). With
// overlayfs each copy is a mount over this sandbox's layers; otherwise each is
// a `cp -a` of its tree. It fails when n < 1, when a command or a write is
// running in this sandbox, or after Stop. On partial failure it returns the
// copies made so far with the error.
func (b *box) Fork(ctx context.Context, n int) ([]sandbox.Sandbox, error) {
	if n < 1 {
		return nil, fmt.Errorf("fork %s: n is %d, want at least 1", b.id, n)
	}
	release, err := b.begin(false)
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", b.id, err)
	}
	defer release()
	b.forkMu.Lock()
	defer b.forkMu.Unlock()

	b.mu.Lock()
	if b.writers > 0 {
		b.mu.Unlock()
		return nil, fmt.Errorf("fork %s: a command or a write is still running", b.id)
	}
	first := !b.frozen
	b.frozen = true
	b.mu.Unlock()
	if first && b.parent != nil {
		// An overlay copy: swap its read-write mount for a read-only one so
		// its upper folder is not in use as an upper while it is a lower.
		if err := b.remountReadOnly(); err != nil {
			return nil, fmt.Errorf("fork %s: %w", b.id, err)
		}
	}

	var kids []sandbox.Sandbox
	for range n {
		if err := ctx.Err(); err != nil {
			return kids, fmt.Errorf("fork %s: %w", b.id, err)
		}
		kid, err := b.forkOne(ctx)
		if err != nil {
			return kids, fmt.Errorf("fork %s: %w", b.id, err)
		}
		kids = append(kids, kid)
	}
	return kids, nil
}

// remountReadOnly replaces this overlay copy's read-write mount by a
// read-only one of its layers at <dir>/frozen, so that its upper folder is
// no longer in use as an upper while it serves as a lower. The read-write
// mount goes first (overlayfs warns otherwise); if the read-only mount then
// fails, the read-write one is restored.
func (b *box) remountReadOnly() error {
	target := filepath.Join(b.dir, "frozen")
	if err := os.Mkdir(target, 0o755); err != nil {
		return fmt.Errorf("read-only remount: %w", err)
	}
	b.mu.Lock()
	old := b.mounts
	b.mu.Unlock()
	for _, m := range old {
		if err := unmount(m); err != nil {
			return fmt.Errorf("read-only remount: %w", err)
		}
	}
	if err := mountOverlay(target, b.layers, "", ""); err != nil {
		merged := filepath.Join(b.dir, "merged")
		if err2 := mountOverlay(merged, b.layers[1:], b.layers[0], filepath.Join(b.dir, "work")); err2 != nil {
			b.mu.Lock()
			b.mounts = nil
			b.mu.Unlock()
			return fmt.Errorf("read-only remount: %w (restoring the read-write mount: %v)", err, err2)
		}
		return fmt.Errorf("read-only remount: %w", err)
	}
	b.mu.Lock()
	b.tree = target
	b.mounts = []string{target}
	b.mu.Unlock()
	return nil
}

// forkOne makes one copy of the frozen box b.
func (b *box) forkOne(ctx context.Context) (*box, error) {
	p := b.p
	id, dir, err := p.newDir()
	if err != nil {
		return nil, err
	}
	upper := filepath.Join(dir, "upper")
	if !p.overlay {
		out, err := exec.CommandContext(ctx, "cp", "-a", "--", b.treePath(), upper).CombinedOutput()
		if err != nil {
			_ = removeAll(dir)
			return nil, fmt.Errorf("copy into %s: %w: %s", id, err, strings.TrimSpace(string(out)))
		}
		return p.newBox(id, dir, upper, []string{upper}, nil, b.labels), nil
	}
	work, merged := filepath.Join(dir, "work"), filepath.Join(dir, "merged")
	for _, d := range []string{upper, work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			_ = removeAll(dir)
			return nil, fmt.Errorf("make %s: %w", id, err)
		}
	}
	if err := mountOverlay(merged, b.layers, upper, work); err != nil {
		_ = removeAll(dir)
		return nil, fmt.Errorf("mount %s: %w", id, err)
	}
	layers := append([]string{upper}, b.layers...)
	kid := p.newBox(id, dir, merged, layers, b, b.labels)
	kid.mounts = []string{merged}
	return kid, nil
}

// Stop kills the sandbox's processes, waits for its running calls to end,
// unmounts it and deletes its folder (after its last overlay copy is gone,
// if it has copies). It is idempotent; the error reports a mount or folder
// that could not be removed.
func (b *box) Stop(ctx context.Context) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	close(b.stopCh) // running commands see it and kill their processes
	b.mu.Unlock()
	b.ops.Wait() // every call watches stopCh, so this is short

	b.mu.Lock()
	mounts := b.mounts
	b.mounts = nil
	b.mu.Unlock()
	var errs []error
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := unmount(mounts[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// Keep the files: deleting under a live mount would delete through it.
		return fmt.Errorf("stop %s: %w", b.id, errors.Join(errs...))
	}
	if err := b.p.release(b); err != nil {
		return fmt.Errorf("stop %s: %w", b.id, err)
	}
	return nil
}

// release deletes the folder of the stopped box b, unless overlay copies
// still read its layers, and then the folders of stopped ancestors that were
// waiting for b.
func (p *Provider) release(b *box) error {
	var dirs []string
	p.mu.Lock()
	b.removing = true
	for x := b; x != nil && x.removing && x.children == 0; x = x.parent {
		x.removing = false
		delete(p.live, x.id)
		dirs = append(dirs, x.dir)
		if x.parent != nil {
			x.parent.children--
		}
	}
	p.mu.Unlock()
	var errs []error
	for _, d := range dirs {
		if err := removeAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
