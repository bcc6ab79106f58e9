// Package local runs sandboxes on this machine: files live under one folder
// (Options.Dir), Fork is an overlayfs mount (or a plain copy where overlayfs
// cannot be mounted) and commands run under bubblewrap (or unisolated where
// bubblewrap is missing or cannot create namespaces).
//
// # Layout
//
// Each sandbox owns <Dir>/<id>/. A sandbox made by Create keeps its files in
// <Dir>/<id>/upper/ as plain folders. A copy made by Fork with overlayfs has
// upper/, work/ and merged/: merged/ is an overlay mount whose lower layers
// are the parent's layers, so a fork of a fork stacks. Without overlayfs a
// copy is a plain sandbox whose upper/ was filled with `cp -a`. The tree a
// sandbox shows has two folders, workspace/ and bestofn/, which commands see
// at sandbox.Workspace and sandbox.Scratch.
//
// # Commands
//
// Under bubblewrap a command sees the host's root read-only (except /proc,
// /dev, /tmp, /sys and /run, which are fresh or absent), a private /tmp, no
// network but loopback unless ExecRequest.Network, its own pid, ipc and uts
// namespaces, no capabilities, and the folders of Options.Hide and
// Options.Dir replaced by empty ones (files by an empty file). It runs as the
// child of a small bash init (pid 1 of the namespace), so a program that is
// missing exits 127 and a command killed by signal n exits 128+n. Commands
// run as the bot's user (root stays root, without capabilities): files they
// create on the host belong to it.
//
// Unisolated (no bubblewrap), a command runs on the host with the host path
// of the sandbox tree as its working folder. Because /workspace and /bestofn
// do not exist on the host, every occurrence of them that starts a path (at
// the start of the string or after a character that cannot be part of a
// path, such as a space, quote, '=' or ':') in ExecRequest.Dir, in Argv
// elements, in the Shell string and in Env values is rewritten to the host
// path. HOME also points into the host tree and TMPDIR to <Dir>/<id>/tmp
// (the host's /tmp is shared). Network and the host's files are not
// protected in this mode, and a process that leaves the command's process
// group (setsid) survives it.
//
// In both modes the environment is a clean minimal one (PATH as the bot's,
// HOME=/bestofn/home, TMPDIR, LANG=C.UTF-8 plus ExecRequest.Env): the bot's
// environment is never inherited. Each command runs in its own process
// group. On timeout, cancellation or Stop, under bubblewrap the init is told
// to kill and reap everything (then killed, then the group), unisolated the
// group is killed. When the command exits, processes it left in the
// background are killed too (under bubblewrap the pid namespace goes away
// with them). Usage counts the CPU time of every process reaped inside.
//
// # Files
//
// WriteFile, ReadFile, PutArchive and GetArchive take absolute sandbox paths
// under /workspace or /bestofn (".." may not leave them) and work on the
// host through file descriptors opened one folder at a time with
// O_NOFOLLOW: a symlink planted by a command is never followed, so a path
// through a symlink is an error, WriteFile and ReadFile refuse a symlink at
// the end, PutArchive replaces one (never writes through it) and GetArchive
// stores it as a symlink. Fifos are never opened for reading or writing.
//
// # Forks
//
// After Fork a sandbox is frozen: Exec, WriteFile and PutArchive return
// ErrFrozen (an overlay copy is also remounted read-only), the rest works
// and it can be forked again. Stopping a parent before its copies is
// allowed: its folder is deleted when its last overlay copy stops.
package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bestofn/bestofn/sandbox"
)

// ErrFrozen is returned (wrapped) by Exec, WriteFile and PutArchive on a
// sandbox that has been forked: its files are the lower layer of its copies
// and must not change. ReadFile, GetArchive, Fork, Usage and Stop still work.
var ErrFrozen = errors.New("sandbox: forked, read-only")

// Options configures New.
type Options struct {
	// Dir is the folder that holds every sandbox's files, for example
	// $DATA_DIR/sandboxes. New creates it (mode 0700) when it is missing.
	Dir string
	// Hide lists host paths that commands must not see, such as the bot's
	// DATA_DIR and its private key file. A folder is replaced by an empty
	// read-only one, a file by an empty file. Dir is always hidden. Paths
	// that do not exist when a command starts are skipped. Only enforced
	// under bubblewrap.
	Hide []string
	// ForceCopy makes Fork copy files even where overlayfs could be mounted
	// (for tests).
	ForceCopy bool
	// ForceUnisolated runs commands without bubblewrap even where it works
	// (for tests).
	ForceUnisolated bool
}

// Provider creates local sandboxes under one folder. It is safe for
// concurrent use.
type Provider struct {
	dir     string   // absolute, symlinks resolved
	hide    []string // absolute, cleaned
	bwrap   string   // path of bwrap; empty when commands run unisolated
	overlay bool     // Fork mounts overlayfs
	iso     sandbox.Isolation
	path    string      // PATH given to commands
	roots   []rootEntry // entries of the host's / mirrored under bubblewrap
	resolv  string      // host target of /etc/resolv.conf when it lives under /run

	mu   sync.Mutex      // guards live and the children/removing fields of boxes
	live map[string]*box // sandboxes whose files still exist, by id
}

// rootEntry is one entry of the host's root folder.
type rootEntry struct {
	name string
	link string // symlink target; empty for folders and files
}

// defaultPath is the PATH given to commands when the bot has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// New returns a Provider keeping sandboxes under opts.Dir. It probes the
// machine once: whether bubblewrap runs and whether overlayfs can be mounted
// in Dir; Isolation reports the outcome. The error is non-nil only when Dir
// or Hide is unusable.
func New(opts Options) (*Provider, error) {
	if opts.Dir == "" {
		return nil, errors.New("local sandbox provider: Options.Dir is empty")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("local sandbox provider: dir %q: %w", opts.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("local sandbox provider: create dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("local sandbox provider: chmod dir: %w", err)
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return nil, fmt.Errorf("local sandbox provider: resolve dir: %w", err)
	}
	p := &Provider{dir: dir, live: map[string]*box{}, path: os.Getenv("PATH")}
	if p.path == "" {
		p.path = defaultPath
	}
	for _, h := range opts.Hide {
		if !filepath.IsAbs(h) {
			return nil, fmt.Errorf("local sandbox provider: hide %q: not an absolute path", h)
		}
		p.hide = append(p.hide, filepath.Clean(h))
	}
	if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && (strings.HasPrefix(r, "/run/") || strings.HasPrefix(r, "/tmp/")) {
		p.resolv = r
	}

	switch {
	case opts.ForceCopy:
		p.iso.Notes = append(p.iso.Notes, "overlayfs disabled by configuration: fork copies files")
	default:
		if err := p.probeOverlay(); err != nil {
			why := err.Error()
			var errno syscall.Errno
			if errors.As(err, &errno) {
				why = errno.Error()
			}
			if os.Geteuid() != 0 {
				why = "not root: " + why
			}
			p.iso.Notes = append(p.iso.Notes, fmt.Sprintf("overlayfs cannot be mounted in %s (%s): fork copies files", dir, why))
		} else {
			p.overlay = true
		}
	}
	p.iso.CopyOnWrite = p.overlay

	switch {
	case opts.ForceUnisolated:
		p.iso.Notes = append(p.iso.Notes, "bubblewrap disabled by configuration: commands run unisolated")
	default:
		bw, err := exec.LookPath("bwrap")
		if err != nil {
			p.iso.Notes = append(p.iso.Notes, "bubblewrap not found: commands run unisolated (apt-get install bubblewrap)")
			break
		}
		if err := p.readRoots(); err != nil {
			p.iso.Notes = append(p.iso.Notes, fmt.Sprintf("bubblewrap unusable (%v): commands run unisolated", err))
			break
		}
		if err := p.probeBwrap(bw); err != nil {
			p.iso.Notes = append(p.iso.Notes, fmt.Sprintf("bubblewrap cannot create a sandbox here (%v): commands run unisolated", err))
			break
		}
		p.bwrap = bw
	}
	p.iso.Namespaces = p.bwrap != ""
	return p, nil
}

// Name returns "local".
func (p *Provider) Name() string { return "local" }

// Isolation returns what New found this machine can enforce; Notes has one
// line per missing piece.
func (p *Provider) Isolation() sandbox.Isolation {
	iso := p.iso
	iso.Notes = append([]string(nil), p.iso.Notes...)
	return iso
}

// Dir returns the absolute folder (symlinks resolved) that holds the
// sandboxes' files.
func (p *Provider) Dir() string { return p.dir }

// Create returns a new sandbox with empty Workspace and Scratch folders.
// The error is non-nil when its folders cannot be made or ctx is done.
func (p *Provider) Create(ctx context.Context, opts sandbox.CreateOptions) (sandbox.Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	id, dir, err := p.newDir()
	if err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	upper := filepath.Join(dir, "upper")
	for _, d := range []string{upper, filepath.Join(upper, "workspace"), filepath.Join(upper, "bestofn"), filepath.Join(upper, "bestofn", "home")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			_ = removeAll(dir)
			return nil, fmt.Errorf("create sandbox %s: %w", id, err)
		}
	}
	b := p.newBox(id, dir, upper, []string{upper}, nil, opts.Labels)
	return b, nil
}

// Prune unmounts and deletes everything under Dir that does not belong to a
// live sandbox of this Provider: leftovers of an earlier process that
// crashed. Call it at startup, before creating sandboxes, and never while
// another process uses the same Dir. It returns the first error met after
// trying every entry.
func (p *Provider) Prune(ctx context.Context) error {
	p.mu.Lock()
	keep := map[string]bool{}
	for id := range p.live {
		keep[id] = true
	}
	p.mu.Unlock()
	owned := func(mp string) bool {
		rel, err := filepath.Rel(p.dir, mp)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			return false
		}
		return !keep[strings.SplitN(rel, string(filepath.Separator), 2)[0]]
	}
	var first error
	mps, err := mountsUnder(p.dir)
	if err != nil {
		first = fmt.Errorf("prune %s: %w", p.dir, err)
	}
	for _, mp := range mps { // deepest first
		if owned(mp) {
			if err := unmount(mp); err != nil && first == nil {
				first = fmt.Errorf("prune %s: %w", p.dir, err)
			}
		}
	}
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return errors.Join(first, fmt.Errorf("prune %s: %w", p.dir, err))
	}
	for _, e := range entries {
		if ctx.Err() != nil {
			return errors.Join(first, fmt.Errorf("prune %s: %w", p.dir, ctx.Err()))
		}
		if keep[e.Name()] {
			continue
		}
		if err := removeAll(filepath.Join(p.dir, e.Name())); err != nil && first == nil {
			first = fmt.Errorf("prune %s: %w", p.dir, err)
		}
	}
	return first
}

// newDir makes a fresh <Dir>/<id> folder with mode 0700.
func (p *Provider) newDir() (id, dir string, err error) {
	for range 10 {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", "", fmt.Errorf("random id: %w", err)
		}
		id = hex.EncodeToString(b[:])
		dir = filepath.Join(p.dir, id)
		err = os.Mkdir(dir, 0o700)
		if err == nil {
			return id, dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", "", fmt.Errorf("make sandbox dir: %w", err)
		}
	}
	return "", "", fmt.Errorf("make sandbox dir: %w", err)
}

// readRoots lists the host's root folder for the bubblewrap command line.
func (p *Provider) readRoots() error {
	entries, err := os.ReadDir("/")
	if err != nil {
		return fmt.Errorf("list /: %w", err)
	}
	p.roots = p.roots[:0]
	for _, e := range entries {
		switch e.Name() {
		case "proc", "dev", "tmp", "sys", "run", "workspace", "bestofn":
			continue
		}
		r := rootEntry{name: e.Name()}
		if e.Type()&fs.ModeSymlink != 0 {
			if r.link, err = os.Readlink("/" + e.Name()); err != nil {
				return fmt.Errorf("read link /%s: %w", e.Name(), err)
			}
		}
		p.roots = append(p.roots, r)
	}
	return nil
}

// probeDir makes a scratch folder in Dir for a probe; the caller removes it.
func (p *Provider) probeDir() (string, error) {
	return os.MkdirTemp(p.dir, ".probe-")
}

// probeOverlay mounts a tiny overlay (two lower layers, like a fork of a
// fork) in Dir, writes through it and unmounts it.
func (p *Provider) probeOverlay() error {
	if strings.ContainsAny(p.dir, ",:\\") {
		return fmt.Errorf("path %q has a ',' ':' or '\\'", p.dir)
	}
	d, err := p.probeDir()
	if err != nil {
		return err
	}
	defer removeAll(d)
	for _, s := range []string{"l1", "l2", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(d, s), 0o755); err != nil {
			return err
		}
	}
	merged := filepath.Join(d, "merged")
	if err := mountOverlay(merged, []string{filepath.Join(d, "l1"), filepath.Join(d, "l2")}, filepath.Join(d, "upper"), filepath.Join(d, "work")); err != nil {
		return err
	}
	werr := os.WriteFile(filepath.Join(merged, "probe"), []byte("ok"), 0o644)
	if err := unmount(merged); err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("write through overlay: %w", werr)
	}
	return nil
}

// probeBwrap runs `true` under bubblewrap with the options every command gets.
func (p *Provider) probeBwrap(bw string) error {
	d, err := p.probeDir()
	if err != nil {
		return err
	}
	defer removeAll(d)
	for _, s := range []string{"workspace", "bestofn"} {
		if err := os.Mkdir(filepath.Join(d, s), 0o755); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args := p.bwrapArgs(d, sandbox.Workspace, false, []string{"true"})
	cmd := exec.CommandContext(ctx, bw, args...)
	cmd.Env = []string{"PATH=" + p.path}
	out, err := cmd.CombinedOutput()
	if err != nil {
		line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		if line != "" {
			return fmt.Errorf("%w: %s", err, line)
		}
		return err
	}
	return nil
}
