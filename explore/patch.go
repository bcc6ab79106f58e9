package explore

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// MaxWorkspaceBytes caps how much an attempt's workspace may hold when it is
// brought back to the bot's side to take its patch, in bytes of file content.
const MaxWorkspaceBytes = 2 << 30

// MaxPatchBytes is the default cap on an attempt's patch (`git diff
// --binary` output), in bytes (config max_patch_bytes); a larger one is
// "patch too large" and is never held in memory whole.
const MaxPatchBytes = 1 << 20

// MaxFileBytes is GitHub's limit on one file in a push, in bytes (100 MB,
// "About large files on GitHub"); a patch with a larger file is "patch too
// large".
const MaxFileBytes = 100 * 1000 * 1000

// MaxDepth caps how deep an attempt's workspace may nest folders, in path
// components.
const MaxDepth = 128

// neverInPatch are gitignore patterns applied to every attempt on top of the
// repository's own: compiled Python files. Running the tests leaves them
// behind, and a crafted .pyc with an unchecked hash would run instead of its
// source, which a reviewer never sees.
const neverInPatch = "__pycache__/\n*.pyc\n*.pyo\n"

// ErrPatchTooLarge is wrapped by takePatch's error when the patch is over
// its byte limit or holds a file over MaxFileBytes.
var ErrPatchTooLarge = errors.New("patch too large")

// Change is one file an attempt's patch touches, as `git diff --raw -M` and
// `--numstat` report it against the base commit.
type Change struct {
	// Status is git's letter: A added, M modified, D deleted, R renamed,
	// T type changed (file <-> symlink).
	Status string `json:"status"`
	// Path is the file's path after the change; OldPath the path before it
	// (differs only for renames).
	Path    string `json:"path"`
	OldPath string `json:"old_path"`
	// OldMode and NewMode are git modes ("100644", "100755", "120000",
	// "000000" for absent).
	OldMode string `json:"old_mode"`
	NewMode string `json:"new_mode"`
	// Added and Deleted count changed lines; zero for binary files.
	Added   int  `json:"added"`
	Deleted int  `json:"deleted"`
	Binary  bool `json:"binary"`
}

// Patch is an attempt's change against the base commit.
type Patch struct {
	// Diff is `git diff --binary -M` output, ready for `git apply --binary`.
	Diff []byte
	// CodeDiff is Diff without the test files the attempt added: what the
	// authoritative grade applies (new tests never vote). It equals Diff
	// when the attempt added no test file.
	CodeDiff []byte
	// AddedTests are the test files the attempt added.
	AddedTests []string
	// Changes lists every touched file.
	Changes []Change
	// Files holds, for each watched path the patch changes, its content
	// before and after (nil when absent on that side).
	Files map[string]FileVersions
}

// FileVersions is one file before and after a patch; nil means absent.
type FileVersions struct{ Before, After []byte }

// patchOptions says how to take a patch.
type patchOptions struct {
	// MaxBytes caps the diff (default MaxPatchBytes).
	MaxBytes int64
	// Tests are the globs of test files: added files that match them, or
	// ConventionalTestGlobs, are left out of CodeDiff.
	Tests []string
	// Watch are paths whose contents before and after go to Patch.Files
	// when the patch changes them.
	Watch []string
}

// Lines returns the number of changed lines (added plus deleted).
func (p Patch) Lines() int {
	n := 0
	for _, c := range p.Changes {
		n += c.Added + c.Deleted
	}
	return n
}

// Empty reports whether the patch changes nothing.
func (p Patch) Empty() bool { return len(p.Changes) == 0 }

// gitEnv is the environment of every git process the engine runs on the
// bot's side: no user or system configuration (no external diff drivers,
// hooks or credential helpers can come into play), no prompts.
func gitEnv(extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=/nonexistent",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
		"GIT_AUTHOR_NAME=bestofn", "GIT_AUTHOR_EMAIL=bestofn@users.noreply.github.com",
		"GIT_COMMITTER_NAME=bestofn", "GIT_COMMITTER_EMAIL=bestofn@users.noreply.github.com",
		"GIT_AUTHOR_DATE=2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2000-01-01T00:00:00Z",
	}
	return append(env, extra...)
}

// git runs a git command on the bot's side and returns its stdout. The error
// carries stderr.
func git(ctx context.Context, dir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	return gitLimit(ctx, dir, env, stdin, -1, args...)
}

// gitLimit is git with stdout capped at limit bytes (no cap when negative):
// past it git is stopped and the error is ErrPatchTooLarge.
func gitLimit(ctx context.Context, dir string, env []string, stdin []byte, limit int, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	stdout := &capped{limit: limit}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Run(); err != nil {
		if stdout.over {
			return nil, ErrPatchTooLarge
		}
		return stdout.buf.Bytes(), fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.buf.Bytes(), nil
}

// capped is a buffer that refuses writes past limit bytes (no limit when
// negative), which makes the writing process stop on a broken pipe.
type capped struct {
	buf   bytes.Buffer
	limit int
	over  bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.limit >= 0 && c.buf.Len()+len(p) > c.limit {
		c.over = true
		return 0, ErrPatchTooLarge
	}
	return c.buf.Write(p)
}

// takePatch unpacks an attempt's workspace (a tar stream) into scratch and
// diffs it against the base commit of the bot-side repository baseGitDir,
// with a private index and object folder so the base is never changed. Every
// folder named .git is left out (the attempt could have rewritten the
// workspace's, and a nested one could point the bot's git at another
// repository), and so are files git ignores, as `git add -A` would, and
// compiled Python files (neverInPatch). A patch
// over MaxPatchBytes gives ErrPatchTooLarge.
func takePatch(ctx context.Context, baseGitDir, scratch string, workspace io.Reader, opts patchOptions) (Patch, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = MaxPatchBytes
	}
	tree := filepath.Join(scratch, "tree")
	objects := filepath.Join(scratch, "objects")
	for _, d := range []string{tree, objects} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return Patch{}, err
		}
	}
	sizes := map[string]int64{}
	if err := extractTar(ctx, workspace, tree, MaxWorkspaceBytes, sizes, func(name string) bool {
		for _, seg := range strings.Split(name, "/") {
			if seg == ".git" {
				return true
			}
		}
		return false
	}); err != nil {
		return Patch{}, fmt.Errorf("unpack workspace: %w", err)
	}
	env := []string{"GIT_DIR=" + baseGitDir, "GIT_WORK_TREE=" + tree, "GIT_INDEX_FILE=" + filepath.Join(scratch, "index"),
		"GIT_OBJECT_DIRECTORY=" + objects, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(baseGitDir, "objects")}
	if _, err := git(ctx, tree, env, nil, "read-tree", "HEAD"); err != nil {
		return Patch{}, err
	}
	exclude := filepath.Join(scratch, "exclude")
	if err := os.WriteFile(exclude, []byte(neverInPatch), 0o644); err != nil {
		return Patch{}, err
	}
	if _, err := git(ctx, tree, env, nil, "-c", "core.excludesFile="+exclude, "add", "-A"); err != nil {
		return Patch{}, err
	}
	diff := func(format []string, paths ...string) ([]byte, error) {
		args := append([]string{"-c", "core.quotepath=off", "diff", "--cached", "--no-ext-diff", "--no-textconv", "--no-color", "-M"}, format...)
		args = append(append(args, "HEAD", "--"), paths...)
		out, err := gitLimit(ctx, tree, env, nil, int(opts.MaxBytes), args...)
		if errors.Is(err, ErrPatchTooLarge) {
			return nil, fmt.Errorf("%w (over %d KiB)", ErrPatchTooLarge, opts.MaxBytes>>10)
		}
		return out, err
	}
	raw, err := diff([]string{"--raw", "-z"})
	if err != nil {
		return Patch{}, err
	}
	changes, err := parseRaw(raw)
	if err != nil {
		return Patch{}, err
	}
	if len(changes) == 0 {
		return Patch{}, nil
	}
	numstat, err := diff([]string{"--numstat", "-z"})
	if err != nil {
		return Patch{}, err
	}
	if err := addNumstat(changes, numstat); err != nil {
		return Patch{}, err
	}
	for _, c := range changes {
		if c.Status != "D" && sizes[c.Path] > MaxFileBytes {
			return Patch{}, fmt.Errorf("%w (%s is over GitHub's 100 MB file limit)", ErrPatchTooLarge, c.Path)
		}
	}
	p := Patch{Changes: changes, Files: map[string]FileVersions{}}
	if p.Diff, err = diff([]string{"--binary", "--full-index"}); err != nil {
		return Patch{}, err
	}
	p.CodeDiff = p.Diff
	var keep []string
	for _, c := range changes {
		if c.Status == "A" && (matchAny(opts.Tests, c.Path) != "" || matchAny(ConventionalTestGlobs, c.Path) != "") {
			p.AddedTests = append(p.AddedTests, c.Path)
			continue
		}
		keep = append(keep, ":(literal)"+c.OldPath, ":(literal)"+c.Path)
	}
	if len(p.AddedTests) > 0 {
		p.CodeDiff = nil
		if len(keep) > 0 {
			if p.CodeDiff, err = diff([]string{"--binary", "--full-index"}, keep...); err != nil {
				return Patch{}, err
			}
		}
	}
	for _, w := range opts.Watch {
		for _, c := range changes {
			if c.Path != w && c.OldPath != w {
				continue
			}
			var v FileVersions
			if b, err := git(ctx, tree, env, nil, "cat-file", "blob", "HEAD:"+w); err == nil {
				v.Before = b
			}
			if b, err := git(ctx, tree, env, nil, "cat-file", "blob", ":"+w); err == nil {
				v.After = b
			}
			p.Files[w] = v
		}
	}
	return p, nil
}

// parseRaw reads `git diff --raw -z`: ":old new oldsha newsha STATUS\0path\0[path2\0]".
func parseRaw(raw []byte) ([]Change, error) {
	fields := strings.Split(string(raw), "\x00")
	var out []Change
	for i := 0; i < len(fields); i++ {
		meta := fields[i]
		if meta == "" {
			continue
		}
		if !strings.HasPrefix(meta, ":") {
			return nil, fmt.Errorf("parse git diff --raw: unexpected %q", meta)
		}
		parts := strings.Fields(meta[1:])
		if len(parts) != 5 || i+1 >= len(fields) {
			return nil, fmt.Errorf("parse git diff --raw: bad record %q", meta)
		}
		c := Change{OldMode: parts[0], NewMode: parts[1], Status: parts[4][:1]}
		i++
		c.Path, c.OldPath = fields[i], fields[i]
		if c.Status == "R" || c.Status == "C" {
			if i+1 >= len(fields) {
				return nil, fmt.Errorf("parse git diff --raw: rename without target")
			}
			i++
			c.Path = fields[i]
		}
		out = append(out, c)
	}
	return out, nil
}

// addNumstat fills Added, Deleted and Binary from `git diff --numstat -z`.
func addNumstat(changes []Change, numstat []byte) error {
	fields := strings.Split(string(numstat), "\x00")
	idx := map[string]*Change{}
	for i := range changes {
		idx[changes[i].Path] = &changes[i]
	}
	for i := 0; i < len(fields); i++ {
		rec := fields[i]
		if rec == "" {
			continue
		}
		parts := strings.SplitN(rec, "\t", 3)
		if len(parts) != 3 {
			return fmt.Errorf("parse git diff --numstat: bad record %q", rec)
		}
		p := parts[2]
		if p == "" { // rename: "a\td\t\0old\0new"
			if i+2 >= len(fields) {
				return fmt.Errorf("parse git diff --numstat: rename without paths")
			}
			p = fields[i+2]
			i += 2
		}
		c := idx[p]
		if c == nil {
			continue
		}
		if parts[0] == "-" {
			c.Binary = true
			continue
		}
		c.Added, _ = strconv.Atoi(parts[0])
		c.Deleted, _ = strconv.Atoi(parts[1])
	}
	return nil
}

// extractTar unpacks a tar stream into dst on the bot's side. It refuses
// absolute names, "..", and names deeper than MaxDepth; it never writes
// through a symlink (every parent of an entry must be a real folder), keeps
// symlinks as symlinks and the executable bit of files, skips entries for
// which skip returns true, and stops with an error once more than limit
// bytes of content were written or ctx is done.
func extractTar(ctx context.Context, r io.Reader, dst string, limit int64, sizes map[string]int64, skip func(name string) bool) error {
	tr := tar.NewReader(r)
	var total int64
	dirs := folderCache{root: dst, ok: map[string]bool{}}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		raw := strings.TrimPrefix(h.Name, "./")
		if strings.HasPrefix(raw, "/") || hasDotDot(raw) {
			return fmt.Errorf("tar entry %q leaves the folder", truncate(h.Name, 200))
		}
		name := strings.Trim(path.Clean("/"+raw), "/")
		if name == "" {
			continue
		}
		if strings.Count(name, "/") >= MaxDepth {
			return fmt.Errorf("the workspace nests folders deeper than %d", MaxDepth)
		}
		if skip != nil && skip(name) {
			continue
		}
		target := filepath.Join(dst, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := dirs.make(name); err != nil {
				return err
			}
		case tar.TypeReg:
			total += h.Size
			if total > limit {
				return fmt.Errorf("workspace holds more than %d bytes", limit)
			}
			if err := dirs.make(path.Dir(name)); err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if h.Mode&0o111 != 0 {
				mode = 0o755
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|oNoFollow, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, h.Size))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if err := os.Chmod(target, mode); err != nil {
				return err
			}
			if sizes != nil {
				sizes[name] = h.Size
			}
		case tar.TypeSymlink:
			if err := dirs.make(path.Dir(name)); err != nil {
				return err
			}
			dirs.forget(name)
			_ = os.Remove(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		default:
			// Devices, fifos and hard links are not part of a patch.
		}
	}
}

// folderCache makes folders under root, checking each path component once:
// a component that exists must be a real folder, never a symlink, so that
// nothing is written outside root.
type folderCache struct {
	root string
	ok   map[string]bool // slash paths known to be real folders
}

func (c *folderCache) make(name string) error {
	if name == "." || name == "" || c.ok[name] {
		return nil
	}
	if err := c.make(path.Dir(name)); err != nil {
		return err
	}
	p := filepath.Join(c.root, filepath.FromSlash(name))
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("tar entry goes through %q, which is not a folder", truncate(name, 200))
	}
	c.ok[name] = true
	return nil
}

// forget drops name: it is about to become a symlink. Nothing under it can
// be in the cache, because only an empty folder can be replaced.
func (c *folderCache) forget(name string) { delete(c.ok, name) }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
