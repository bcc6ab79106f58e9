package explore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(context.Background(), dir, nil, nil, args...)
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// baseRepo makes a one-commit repository like the engine's base.
func baseRepo(t *testing.T) string {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "stats.py"), "def median(v):\n    return v[0]\n", 0o644)
	write(t, filepath.Join(dir, "tests/test_stats.py"), "assert True\n", 0o644)
	write(t, filepath.Join(dir, "tool.sh"), "echo hi\n", 0o644)
	write(t, filepath.Join(dir, "old_name.py"), strings.Repeat("line\n", 20), 0o644)
	write(t, filepath.Join(dir, ".gitignore"), "build/\n", 0o644)
	run(t, dir, "init", "-q", "-b", "main")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "base")
	return dir
}

func tarOf(t *testing.T, dir string) *bytes.Buffer {
	var buf bytes.Buffer
	if err := tarDir(&buf, dir, ""); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func TestTakePatch(t *testing.T) {
	base := baseRepo(t)
	// The attempt's workspace: a copy of the base, changed in every way.
	work := t.TempDir()
	if out, err := exec.Command("cp", "-a", base+"/.", work).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	write(t, filepath.Join(work, "stats.py"), "def median(v):\n    return sorted(v)[len(v)//2]\n", 0o644)
	write(t, filepath.Join(work, "tool.sh"), "echo hi\n", 0o755)            // mode change
	write(t, filepath.Join(work, "tests/test_new.py"), "assert 1\n", 0o644) // new test
	write(t, filepath.Join(work, "build/cache.bin"), "ignored", 0o644)      // git-ignored
	write(t, filepath.Join(work, "blob.bin"), "\x00\x01\x02binary", 0o644)  // binary
	if err := os.Rename(filepath.Join(work, "old_name.py"), filepath.Join(work, "new_name.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("stats.py", filepath.Join(work, "link.py")); err != nil {
		t.Fatal(err)
	}
	// A rewritten .git in the workspace must not matter.
	write(t, filepath.Join(work, ".git/HEAD"), "ref: refs/heads/evil\n", 0o644)

	p, err := takePatch(context.Background(), filepath.Join(base, ".git"), t.TempDir(), tarOf(t, work), patchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Change{}
	var paths []string
	for _, c := range p.Changes {
		got[c.Path] = c
		paths = append(paths, c.Status+" "+c.Path)
	}
	sort.Strings(paths)
	want := []string{"A blob.bin", "A link.py", "A tests/test_new.py", "M stats.py", "M tool.sh", "R new_name.py"}
	if strings.Join(paths, ",") != strings.Join(want, ",") {
		t.Fatalf("changes = %q, want %q", paths, want)
	}
	if c := got["new_name.py"]; c.OldPath != "old_name.py" {
		t.Errorf("rename old path = %q", c.OldPath)
	}
	if c := got["tool.sh"]; c.OldMode != "100644" || c.NewMode != "100755" {
		t.Errorf("mode change = %s -> %s", c.OldMode, c.NewMode)
	}
	if c := got["link.py"]; c.NewMode != "120000" {
		t.Errorf("symlink mode = %s", c.NewMode)
	}
	if c := got["blob.bin"]; !c.Binary {
		t.Errorf("blob.bin not binary")
	}
	if c := got["stats.py"]; c.Added != 1 || c.Deleted != 1 {
		t.Errorf("stats.py numstat = +%d -%d", c.Added, c.Deleted)
	}
	if p.Lines() != 4 { // stats.py +1 -1, test_new.py +1, the symlink's target +1
		t.Errorf("lines = %d, want 4", p.Lines())
	}

	// The patch applies to a fresh copy of the base and reproduces the work tree.
	fresh := t.TempDir()
	run(t, fresh, "clone", "-q", base, ".")
	cmd := exec.Command("git", "apply", "--binary", "-")
	cmd.Dir, cmd.Stdin = fresh, bytes.NewReader(p.Diff)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v %s", err, out)
	}
	for _, f := range []string{"stats.py", "blob.bin", "new_name.py", "tests/test_new.py"} {
		a, _ := os.ReadFile(filepath.Join(work, f))
		b, _ := os.ReadFile(filepath.Join(fresh, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs after apply", f)
		}
	}
	if target, err := os.Readlink(filepath.Join(fresh, "link.py")); err != nil || target != "stats.py" {
		t.Errorf("link.py after apply = %q, %v", target, err)
	}
	if _, err := os.Stat(filepath.Join(fresh, "build/cache.bin")); err == nil {
		t.Errorf("ignored file reached the patch")
	}
	if head := run(t, base, "symbolic-ref", "HEAD"); head != "refs/heads/main" {
		t.Errorf("base HEAD changed to %s", head)
	}
}

func TestTakePatchUnchanged(t *testing.T) {
	base := baseRepo(t)
	work := t.TempDir()
	if out, err := exec.Command("cp", "-a", base+"/.", work).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	write(t, filepath.Join(work, "build/out.o"), "x", 0o644)
	p, err := takePatch(context.Background(), filepath.Join(base, ".git"), t.TempDir(), tarOf(t, work), patchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Empty() || len(p.Diff) != 0 {
		t.Fatalf("patch of an unchanged tree = %+v", p)
	}
}

func TestExtractTarRefusesEscapes(t *testing.T) {
	// A symlink to the outside followed by a file "through" it.
	src := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(src, "escape")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tarDir(&buf, src, ""); err != nil {
		t.Fatal(err)
	}
	// A second archive whose entry goes through the symlink.
	dir2 := t.TempDir()
	write(t, filepath.Join(dir2, "escape", "pwned"), "x", 0o644)
	var both bytes.Buffer
	if err := tarDir(&both, dir2, ""); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := extractTar(context.Background(), &buf, dst, 1<<20, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := extractTar(context.Background(), &both, dst, 1<<20, nil, nil); err == nil {
		t.Fatal("extracting through a symlink succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
		t.Fatal("a file was written outside the destination")
	}
}

func TestPatchFiles(t *testing.T) {
	base := baseRepo(t)
	work := t.TempDir()
	if out, err := exec.Command("cp", "-a", base+"/.", work).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	write(t, filepath.Join(work, "stats.py"), "fixed\n", 0o644)
	write(t, filepath.Join(work, "tool.sh"), "echo hi\n", 0o755)
	os.Remove(filepath.Join(work, "old_name.py"))
	os.Symlink("stats.py", filepath.Join(work, "link.py"))
	p, err := takePatch(context.Background(), filepath.Join(base, ".git"), t.TempDir(), tarOf(t, work), patchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	head := run(t, base, "rev-parse", "HEAD")
	files, err := PatchFiles(context.Background(), base, head, p.Diff)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]FileContent{}
	for _, f := range files {
		got[f.Path] = f
	}
	if f := got["stats.py"]; f.Mode != "100644" || string(f.Content) != "fixed\n" || f.Deleted {
		t.Errorf("stats.py = %+v", f)
	}
	if f := got["tool.sh"]; f.Mode != "100755" {
		t.Errorf("tool.sh = %+v", f)
	}
	if f := got["old_name.py"]; !f.Deleted {
		t.Errorf("old_name.py = %+v", f)
	}
	if f := got["link.py"]; f.Mode != "120000" || string(f.Content) != "stats.py" {
		t.Errorf("link.py = %+v", f)
	}
	if len(files) != 4 {
		t.Errorf("files = %d, want 4", len(files))
	}
	if st := run(t, base, "status", "--porcelain"); st != "" {
		t.Errorf("repository changed: %s", st)
	}
}

func TestExtractTarRefusesDeepNesting(t *testing.T) {
	src := t.TempDir()
	deep := filepath.Join(src, strings.Repeat("a/", MaxDepth+1))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tarDir(&buf, src, ""); err != nil {
		t.Fatal(err)
	}
	err := extractTar(context.Background(), &buf, t.TempDir(), 1<<20, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "deeper than") {
		t.Fatalf("err = %v, want a depth error", err)
	}
}

func TestTakePatchTooLarge(t *testing.T) {
	base := baseRepo(t)
	work := t.TempDir()
	if out, err := exec.Command("cp", "-a", base+"/.", work).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	write(t, filepath.Join(work, "big.txt"), strings.Repeat("x\n", MaxPatchBytes), 0o644)
	before := run(t, base, "count-objects")
	_, err := takePatch(context.Background(), filepath.Join(base, ".git"), t.TempDir(), tarOf(t, work), patchOptions{})
	if !errors.Is(err, ErrPatchTooLarge) {
		t.Fatalf("err = %v, want ErrPatchTooLarge", err)
	}
	// The attempt's objects never land in the base repository.
	if after := run(t, base, "count-objects"); after != before {
		t.Errorf("base objects went from %q to %q", before, after)
	}
}
