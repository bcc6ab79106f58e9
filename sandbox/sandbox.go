// Package sandbox defines what the engine needs from an isolated place to run
// untrusted commands: a Provider creates a Sandbox, a Sandbox runs commands,
// moves files and folders in and out, and forks into copies.
//
// Every sandbox sees the repository at Workspace ("/workspace") and has a
// private scratch folder at Scratch ("/bestofn") that is outside the
// workspace (the prompt file and the patch live there). Both are carried over
// by Fork. Backends: sandbox/local (overlayfs + bubblewrap) and, later,
// sandbox/runtime.
package sandbox

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"time"
)

// Workspace is the folder, as a command inside any sandbox sees it, that holds
// the repository tree.
const Workspace = "/workspace"

// Scratch is a private folder outside Workspace, as a command inside the
// sandbox sees it. It survives between commands and is copied by Fork.
const Scratch = "/bestofn"

// DefaultOutputLimit caps each of stdout and stderr of one command, in bytes,
// when ExecRequest.OutputLimit is zero.
const DefaultOutputLimit = 1 << 20

// ErrStopped is returned by every method of a Sandbox after Stop.
var ErrStopped = errors.New("sandbox: stopped")

// ExecRequest describes one command. Exactly one of Argv and Shell is set.
type ExecRequest struct {
	// Argv runs a program with arguments and no shell.
	Argv []string
	// Shell runs a string with `bash -c`. Never put untrusted text in it.
	Shell string
	// Dir is the working directory as the command sees it; empty means Workspace.
	Dir string
	// Env is added to a minimal environment (PATH, HOME, LANG, TMPDIR); the
	// host's environment is never inherited.
	Env map[string]string
	// Stdin is fed to the command; nil means empty input.
	Stdin []byte
	// Timeout bounds the wall time; zero means no limit beyond ctx. When it
	// expires the whole process tree is killed and the result has TimedOut set.
	Timeout time.Duration
	// Network allows the command to reach the network. Without it the command
	// has no network interface but loopback (where the backend can isolate).
	Network bool
	// OutputLimit caps each of stdout and stderr, in bytes; zero means
	// DefaultOutputLimit. The end of the output is kept, the start dropped.
	OutputLimit int
}

// ExecResult is the outcome of a command. A timeout or a non-zero exit is a
// result, not an error.
type ExecResult struct {
	// ExitCode is the command's exit status; -1 when it timed out or was
	// killed by a signal (a backend that runs commands through a wrapper,
	// such as bubblewrap, may report a signal as 128+signal instead).
	ExitCode int
	// Stdout and Stderr are the last OutputLimit bytes of each stream.
	Stdout, Stderr []byte
	// StdoutTruncated and StderrTruncated say that the start of a stream was cut.
	StdoutTruncated, StderrTruncated bool
	// TimedOut says the command ran past ExecRequest.Timeout and was killed.
	TimedOut bool
	// Duration is the command's wall time.
	Duration time.Duration
}

// Usage is what a sandbox has consumed since it was created.
type Usage struct {
	// CPUSeconds is user plus system CPU time of every command, in seconds.
	CPUSeconds float64
	// MaxRSSBytes is the largest resident set of any one command, in bytes.
	MaxRSSBytes int64
	// Wall is the time since the sandbox was created.
	Wall time.Duration
}

// Isolation says what a backend can enforce on this machine. The engine
// prints it on every run; `bestofn doctor` prints it in full.
type Isolation struct {
	// Namespaces: commands run under bubblewrap (pid/ipc/uts/net namespaces,
	// read-only host, private /tmp). False means commands run unisolated.
	Namespaces bool
	// CopyOnWrite: Fork is an overlayfs mount; false means Fork copies files.
	CopyOnWrite bool
	// Notes explains each missing piece in one line (what is missing and why).
	Notes []string
}

// Sandbox is one isolated copy of a workspace. Paths given to its methods are
// absolute paths as a command inside sees them, under Workspace or Scratch.
type Sandbox interface {
	// ID names the sandbox uniquely within its provider.
	ID() string
	// Exec runs a command and waits for it. The error is non-nil only when the
	// command could not be run at all (bad request, sandbox stopped, ctx done).
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	// WriteFile creates or replaces a file, making parent folders.
	WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error
	// ReadFile returns a file's bytes; fs.ErrNotExist (wrapped) when it is absent.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// PutArchive unpacks a tar stream (plain or gzip) into dir, merging with
	// what is there. Entries that would land outside dir are refused.
	PutArchive(ctx context.Context, dir string, tarStream io.Reader) error
	// GetArchive returns dir as an uncompressed tar stream, symlinks as
	// symlinks and modes kept. The caller closes it.
	GetArchive(ctx context.Context, dir string) (io.ReadCloser, error)
	// Fork makes n copies that start with this sandbox's files. After the
	// first Fork the parent must not be written to again (its files are the
	// copies' lower layer) but may be forked again. On partial failure it
	// returns the copies that did start together with the error; the caller
	// stops them.
	Fork(ctx context.Context, n int) ([]Sandbox, error)
	// Usage reports what the sandbox consumed so far.
	Usage(ctx context.Context) (Usage, error)
	// Stop kills every process, releases mounts and deletes the sandbox's
	// files. It is idempotent. A parent must outlive its copies: stop copies first.
	Stop(ctx context.Context) error
}

// CreateOptions configures a new, empty sandbox.
type CreateOptions struct {
	// Labels are free-form names (run, attempt) that backends may record.
	Labels map[string]string
}

// Provider creates sandboxes on one backend.
type Provider interface {
	// Name is the backend's name ("local", "runtime").
	Name() string
	// Isolation reports what this backend enforces on this machine.
	Isolation() Isolation
	// Create returns a new sandbox with an empty Workspace and Scratch.
	Create(ctx context.Context, opts CreateOptions) (Sandbox, error)
}
