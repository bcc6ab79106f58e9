package explore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FileContent is one file of a patch as it is after the patch: what a
// publisher needs to write the change through an API that takes whole files.
type FileContent struct {
	Path string
	// Mode is the git mode: "100644", "100755" or "120000" (a symlink, whose
	// Content is the link target).
	Mode    string
	Content []byte
	// Deleted is true when the patch removes the file.
	Deleted bool
}

// PatchFiles applies diff (as made by the engine) to base in the git
// repository repoDir on the bot's side, using a private index so neither the
// repository's index nor its work tree change, and returns every file the
// patch adds, changes or deletes with its new content. Renames come back as a
// deletion and an addition. It fails when the patch does not apply.
func PatchFiles(ctx context.Context, repoDir, base string, diff []byte) ([]FileContent, error) {
	tmp, err := os.MkdirTemp("", "bestofn-index-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, err := git(ctx, repoDir, env, nil, "read-tree", base); err != nil {
		return nil, err
	}
	if _, err := git(ctx, repoDir, env, diff, "apply", "--cached", "--binary", "--whitespace=nowarn"); err != nil {
		return nil, fmt.Errorf("apply patch: %w", err)
	}
	raw, err := git(ctx, repoDir, env, nil, "diff-index", "--cached", "--no-renames", "--raw", "-z", "--abbrev=40", base)
	if err != nil {
		return nil, err
	}
	fields := strings.Split(string(raw), "\x00")
	var out []FileContent
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) != 5 {
			return nil, fmt.Errorf("parse git diff-index: bad record %q", fields[i])
		}
		f := FileContent{Path: fields[i+1], Mode: meta[1]}
		if meta[4] == "D" {
			f.Deleted, f.Mode = true, meta[0]
		} else {
			if f.Content, err = git(ctx, repoDir, nil, nil, "cat-file", "blob", meta[3]); err != nil {
				return nil, err
			}
		}
		out = append(out, f)
	}
	return out, nil
}
