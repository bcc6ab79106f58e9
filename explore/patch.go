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
	// Changes lists every touched file.
	Changes []Change
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
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// takePatch unpacks an attempt's workspace (a tar stream; its .git is
// ignored, because the attempt could have rewritten it) into scratch and
// diffs it against the base commit of the bot-side repository baseGitDir,
// with a private index so the base is never changed. Files git ignores are
// left out, as they would be by `git add -A`.
func takePatch(ctx context.Context, baseGitDir, scratch string, workspace io.Reader) (Patch, error) {
	tree := filepath.Join(scratch, "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return Patch{}, err
	}
	if err := extractTar(workspace, tree, MaxWorkspaceBytes, func(name string) bool {
		return name == ".git" || strings.HasPrefix(name, ".git/")
	}); err != nil {
		return Patch{}, fmt.Errorf("unpack workspace: %w", err)
	}
	env := []string{"GIT_DIR=" + baseGitDir, "GIT_WORK_TREE=" + tree, "GIT_INDEX_FILE=" + filepath.Join(scratch, "index")}
	if _, err := git(ctx, tree, env, nil, "read-tree", "HEAD"); err != nil {
		return Patch{}, err
	}
	if _, err := git(ctx, tree, env, nil, "add", "-A"); err != nil {
		return Patch{}, err
	}
	diff := func(format ...string) ([]byte, error) {
		args := append([]string{"-c", "core.quotepath=off", "diff", "--cached", "--no-ext-diff", "--no-textconv", "--no-color", "-M"}, format...)
		return git(ctx, tree, env, nil, append(args, "HEAD")...)
	}
	raw, err := diff("--raw", "-z")
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
	numstat, err := diff("--numstat", "-z")
	if err != nil {
		return Patch{}, err
	}
	if err := addNumstat(changes, numstat); err != nil {
		return Patch{}, err
	}
	full, err := diff("--binary", "--full-index")
	if err != nil {
		return Patch{}, err
	}
	return Patch{Diff: full, Changes: changes}, nil
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
// absolute names and "..", never writes through a symlink (every parent of an
// entry must be a real folder created here), keeps symlinks as symlinks and
// the executable bit of files, skips entries for which skip returns true, and
// stops with an error once more than limit bytes of content were written.
func extractTar(r io.Reader, dst string, limit int64, skip func(name string) bool) error {
	tr := tar.NewReader(r)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(h.Name, "./")), "/")
		if name == "" || name == "." {
			continue
		}
		if strings.Contains(h.Name, "..") && hasDotDot(strings.TrimPrefix(h.Name, "./")) {
			return fmt.Errorf("tar entry %q leaves the folder", h.Name)
		}
		if skip != nil && skip(name) {
			continue
		}
		target := filepath.Join(dst, filepath.FromSlash(name))
		if err := checkParents(dst, name); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			total += h.Size
			if total > limit {
				return fmt.Errorf("workspace holds more than %d bytes", limit)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
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
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			_ = os.Remove(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		default:
			// Devices, fifos and hard links are not part of a patch.
		}
	}
}

// checkParents makes sure that no parent folder of name under dst is a
// symlink, so that writing the entry cannot land outside dst.
func checkParents(dst, name string) error {
	dir := dst
	segs := strings.Split(name, "/")
	for _, seg := range segs[:len(segs)-1] {
		dir = filepath.Join(dir, seg)
		fi, err := os.Lstat(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("tar entry %q goes through %q, which is not a folder", name, seg)
		}
	}
	return nil
}
