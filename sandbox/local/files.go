package local

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bestofn/bestofn/sandbox"
)

// Host-side file operations work on file descriptors: every folder on the
// way is opened with O_NOFOLLOW relative to the previous one, so a symlink
// planted by a command (say /workspace/x -> /etc) is refused instead of
// followed, and swapping a folder for a symlink while we work cannot lead
// outside the tree either.

// errSymlink is wrapped when a path runs into a symlink.
var errSymlink = errors.New("is a symlink (not followed)")

// splitPath checks that p is an absolute path under sandbox.Workspace or
// sandbox.Scratch (after resolving . and ..) and returns its components
// relative to the tree, such as ["workspace", "a", "b"].
func splitPath(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") || strings.IndexByte(p, 0) >= 0 {
		return nil, fmt.Errorf("path %q: want an absolute path under %s or %s", p, sandbox.Workspace, sandbox.Scratch)
	}
	c := path.Clean(p)
	for _, top := range []string{sandbox.Workspace, sandbox.Scratch} {
		if c == top || strings.HasPrefix(c, top+"/") {
			return strings.Split(c[1:], "/"), nil
		}
	}
	return nil, fmt.Errorf("path %q: not under %s or %s", p, sandbox.Workspace, sandbox.Scratch)
}

// openTree opens the host folder holding workspace/ and bestofn/.
func openTree(tree string) (int, error) {
	fd, err := unix.Open(tree, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: tree, Err: err}
	}
	return fd, nil
}

// walkDirs opens the folder parts below the folder fd, refusing symlinks,
// and returns a new descriptor. With create, missing folders are made (mode
// 0755). name is the path reported in errors.
func walkDirs(fd int, parts []string, create bool, name string) (int, error) {
	cur, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	for _, part := range parts {
		next, err := openDirAt(cur, part)
		if err == unix.ENOENT && create {
			if err = unix.Mkdirat(cur, part, 0o755); err == nil || err == unix.EEXIST {
				next, err = openDirAt(cur, part)
			}
		}
		unix.Close(cur)
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: name, Err: describe(err, part)}
		}
		cur = next
	}
	return cur, nil
}

// openDirAt opens the folder name in dirfd without following a symlink.
func openDirAt(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// describe turns ELOOP (O_NOFOLLOW met a symlink) into errSymlink.
func describe(err error, part string) error {
	if err == unix.ELOOP {
		return fmt.Errorf("%q %w", part, errSymlink)
	}
	if err == unix.ENOTDIR {
		return fmt.Errorf("%q: %w", part, err)
	}
	return err
}

// openParent opens the folder holding the last of parts and returns it with
// the last part's name.
func (b *box) openParent(parts []string, create bool, name string) (dirfd int, base string, err error) {
	if len(parts) < 2 {
		return -1, "", &fs.PathError{Op: "open", Path: name, Err: errors.New("is a top folder")}
	}
	root, err := openTree(b.treePath())
	if err != nil {
		return -1, "", err
	}
	defer unix.Close(root)
	dirfd, err = walkDirs(root, parts[:len(parts)-1], create, name)
	if err != nil {
		return -1, "", err
	}
	return dirfd, parts[len(parts)-1], nil
}

// WriteFile creates or replaces the regular file p with data and mode's
// permission bits, making missing parent folders (0755). It refuses a path
// through or onto a symlink, ErrFrozen after Fork, ErrStopped after Stop.
func (b *box) WriteFile(ctx context.Context, p string, data []byte, mode fs.FileMode) error {
	if err := b.writeFile(ctx, p, data, mode); err != nil {
		return fmt.Errorf("write %s in %s: %w", p, b.id, err)
	}
	return nil
}

func (b *box) writeFile(ctx context.Context, p string, data []byte, mode fs.FileMode) error {
	parts, err := splitPath(p)
	if err != nil {
		return err
	}
	release, err := b.begin(true)
	if err != nil {
		return err
	}
	defer release()
	if err := ctx.Err(); err != nil {
		return err
	}
	dirfd, base, err := b.openParent(parts, true, p)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &fs.PathError{Op: "open", Path: p, Err: describe(err, base)}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	if err := checkRegular(f, p); err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(mode.Perm()); err != nil {
		return err
	}
	return f.Close()
}

// checkRegular fails unless f is a regular file.
func checkRegular(f *os.File, p string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return &fs.PathError{Op: "open", Path: p, Err: errors.New("is a folder")}
	}
	if !fi.Mode().IsRegular() {
		return &fs.PathError{Op: "open", Path: p, Err: errors.New("not a regular file")}
	}
	return nil
}

// ReadFile returns the bytes of the regular file p. The error wraps
// fs.ErrNotExist when it (or a parent) is absent; a symlink on the way or at
// the end is refused, not followed. ErrStopped after Stop.
func (b *box) ReadFile(ctx context.Context, p string) ([]byte, error) {
	data, err := b.readFile(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("read %s in %s: %w", p, b.id, err)
	}
	return data, nil
}

func (b *box) readFile(ctx context.Context, p string) ([]byte, error) {
	parts, err := splitPath(p)
	if err != nil {
		return nil, err
	}
	release, err := b.begin(false)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dirfd, base, err := b.openParent(parts, false, p)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: describe(err, base)}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	if err := checkRegular(f, p); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// PutArchive unpacks a tar stream (gzip detected) into the folder dir,
// making it if missing and merging with what is there. It keeps permission
// bits (setuid and setgid dropped; owners are not kept), modification times
// and symlinks (as symlinks), and makes hard links. An entry with an absolute
// name or a ".." component, a path through a symlink, a device, fifo or an
// entry replacing a folder by a non-folder is refused with an error; the
// entries before it stay. An existing file or symlink where an entry goes is
// replaced (never written through). ErrFrozen after Fork, ErrStopped after
// Stop.
func (b *box) PutArchive(ctx context.Context, dir string, tarStream io.Reader) error {
	if err := b.putArchive(ctx, dir, tarStream); err != nil {
		return fmt.Errorf("put archive into %s in %s: %w", dir, b.id, err)
	}
	return nil
}

func (b *box) putArchive(ctx context.Context, dir string, r io.Reader) error {
	parts, err := splitPath(dir)
	if err != nil {
		return err
	}
	if r == nil {
		return errors.New("nil tar stream")
	}
	release, err := b.begin(true)
	if err != nil {
		return err
	}
	defer release()
	root, err := openTree(b.treePath())
	if err != nil {
		return err
	}
	defer unix.Close(root)
	top, err := walkDirs(root, parts, true, dir)
	if err != nil {
		return err
	}
	defer unix.Close(top)

	br := bufio.NewReader(r)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		src = zr
	}
	tr := tar.NewReader(src)
	type dirMeta struct {
		parts []string
		mode  uint32
		mtime time.Time
	}
	var dirs []dirMeta
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case <-b.stopCh:
			return sandbox.ErrStopped
		default:
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		rel, err := entryParts(hdr.Name)
		if err != nil {
			return err
		}
		if len(rel) == 0 { // "./": the folder itself
			if hdr.Typeflag == tar.TypeDir {
				dirs = append(dirs, dirMeta{nil, permBits(hdr.Mode, true), hdr.ModTime})
			}
			continue
		}
		name := path.Join(append([]string{dir}, rel...)...)
		if hdr.Typeflag == tar.TypeDir {
			if err := mkdirEntry(top, rel, name); err != nil {
				return err
			}
			dirs = append(dirs, dirMeta{rel, permBits(hdr.Mode, true), hdr.ModTime})
			continue
		}
		if err := putEntry(top, rel, name, hdr, tr); err != nil {
			return err
		}
	}
	// Folder modes last (a read-only folder must not block its own entries),
	// deepest first.
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		fd, err := walkDirs(top, d.parts, false, path.Join(append([]string{dir}, d.parts...)...))
		if err != nil {
			return err
		}
		err = unix.Fchmod(fd, d.mode)
		if err == nil {
			setTimes(fd, "", d.mtime)
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("chmod %s: %w", path.Join(d.parts...), err)
		}
	}
	return nil
}

// entryParts checks a tar entry name and splits it; an empty result is the
// folder itself.
func entryParts(name string) ([]string, error) {
	if strings.HasPrefix(name, "/") || strings.IndexByte(name, 0) >= 0 {
		return nil, fmt.Errorf("entry %q: absolute names are refused", name)
	}
	var out []string
	for _, part := range strings.Split(name, "/") {
		switch part {
		case "", ".":
		case "..":
			return nil, fmt.Errorf("entry %q: %q is refused", name, "..")
		default:
			out = append(out, part)
		}
	}
	return out, nil
}

// permBits keeps the permission bits of a tar mode, plus the sticky bit for
// folders; setuid and setgid are dropped.
func permBits(mode int64, dir bool) uint32 {
	m := uint32(mode) & 0o777
	if dir {
		m |= uint32(mode) & unix.S_ISVTX
	}
	return m
}

// mkdirEntry makes the folder rel (and its parents) below top.
func mkdirEntry(top int, rel []string, name string) error {
	fd, err := walkDirs(top, rel, true, name)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// putEntry writes one non-folder tar entry.
func putEntry(top int, rel []string, name string, hdr *tar.Header, tr io.Reader) error {
	pfd, err := walkDirs(top, rel[:len(rel)-1], true, name)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	base := rel[len(rel)-1]
	mtime := hdr.ModTime
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeRegA:
		fd, err := createAt(pfd, base, func() (int, error) {
			return unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		})
		if err != nil {
			return &fs.PathError{Op: "create", Path: name, Err: err}
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		if _, err := io.Copy(f, tr); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		if err := f.Chmod(fs.FileMode(permBits(hdr.Mode, false))); err != nil {
			return err
		}
		setTimes(fd, "", mtime)
		return f.Close()
	case tar.TypeSymlink:
		if hdr.Linkname == "" || strings.IndexByte(hdr.Linkname, 0) >= 0 {
			return fmt.Errorf("entry %q: bad symlink target", hdr.Name)
		}
		_, err := createAt(pfd, base, func() (int, error) { return -1, unix.Symlinkat(hdr.Linkname, pfd, base) })
		if err != nil {
			return &fs.PathError{Op: "symlink", Path: name, Err: err}
		}
		setTimes(pfd, base, mtime)
		return nil
	case tar.TypeLink:
		target, err := entryParts(hdr.Linkname)
		if err != nil || len(target) == 0 {
			return fmt.Errorf("entry %q: bad hard link target %q", hdr.Name, hdr.Linkname)
		}
		tfd, err := walkDirs(top, target[:len(target)-1], false, hdr.Linkname)
		if err != nil {
			return err
		}
		defer unix.Close(tfd)
		tbase := target[len(target)-1]
		_, err = createAt(pfd, base, func() (int, error) { return -1, unix.Linkat(tfd, tbase, pfd, base, 0) })
		if err != nil {
			return &fs.PathError{Op: "link", Path: name, Err: err}
		}
		return nil
	default:
		return fmt.Errorf("entry %q: type %q is not supported", hdr.Name, hdr.Typeflag)
	}
}

// setTimes sets the access and modification times of base in folder fd
// (of fd itself when base is empty) to mtime, not following a symlink. It is
// best effort: times are a nicety.
func setTimes(fd int, base string, mtime time.Time) {
	if mtime.IsZero() {
		return
	}
	ts := []unix.Timespec{unix.NsecToTimespec(mtime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	flags := unix.AT_SYMLINK_NOFOLLOW
	if base == "" {
		flags = unix.AT_EMPTY_PATH
	}
	_ = unix.UtimesNanoAt(fd, base, ts, flags)
}

// createAt runs mk; when base already exists and is not a folder it removes
// it (never following it) and runs mk once more.
func createAt(pfd int, base string, mk func() (int, error)) (int, error) {
	fd, err := mk()
	if err != unix.EEXIST {
		return fd, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return -1, errors.New("a folder is in the way")
	}
	if err := unix.Unlinkat(pfd, base, 0); err != nil {
		return -1, err
	}
	return mk()
}

// GetArchive returns the folder dir as an uncompressed tar stream: names
// relative to dir (folders end in "/"), sorted, permission bits and
// modification times kept, owners zeroed, symlinks as symlinks (never
// followed), hard links as separate files; fifos, sockets and devices are
// left out. dir itself must not be or pass through a symlink. The stream
// ends with an error if ctx ends or the sandbox stops while it is read; the
// caller closes it. ErrStopped after Stop.
func (b *box) GetArchive(ctx context.Context, dir string) (io.ReadCloser, error) {
	rc, err := b.getArchive(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("get archive of %s in %s: %w", dir, b.id, err)
	}
	return rc, nil
}

func (b *box) getArchive(ctx context.Context, dir string) (io.ReadCloser, error) {
	parts, err := splitPath(dir)
	if err != nil {
		return nil, err
	}
	release, err := b.begin(false)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		release()
		return nil, err
	}
	root, err := openTree(b.treePath())
	if err != nil {
		release()
		return nil, err
	}
	top, err := walkDirs(root, parts, false, dir)
	unix.Close(root)
	if err != nil {
		release()
		return nil, err
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() { // unblock the writer when the reader's context or the sandbox ends
		select {
		case <-ctx.Done():
			pw.CloseWithError(ctx.Err())
		case <-b.stopCh:
			pw.CloseWithError(sandbox.ErrStopped)
		case <-done:
		}
	}()
	go func() {
		defer release()
		defer close(done)
		defer unix.Close(top)
		tw := tar.NewWriter(pw)
		err := writeTree(tw, top, "", dir)
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// writeTree writes the entries below the folder fd to tw, names prefixed
// with prefix. name is the folder's sandbox path for errors.
func writeTree(tw *tar.Writer, fd int, prefix, name string) error {
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: name, Err: err}
	}
	df := os.NewFile(uintptr(dfd), name)
	names, err := df.Readdirnames(-1)
	df.Close()
	if err != nil {
		return fmt.Errorf("list %s: %w", name, err)
	}
	sort.Strings(names)
	for _, n := range names {
		child := path.Join(name, n)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue // removed meanwhile
			}
			return &fs.PathError{Op: "lstat", Path: child, Err: err}
		}
		hdr := &tar.Header{
			Name:    prefix + n,
			Mode:    int64(st.Mode & 0o7777),
			ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			sub, err := openDirAt(fd, n)
			if err != nil {
				return &fs.PathError{Op: "open", Path: child, Err: describe(err, n)}
			}
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
			err = tw.WriteHeader(hdr)
			if err == nil {
				err = writeTree(tw, sub, hdr.Name, child)
			}
			unix.Close(sub)
			if err != nil {
				return err
			}
		case unix.S_IFLNK:
			target, err := readlinkAt(fd, n)
			if err != nil {
				return &fs.PathError{Op: "readlink", Path: child, Err: err}
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
		case unix.S_IFREG:
			if err := writeFileEntry(tw, fd, n, child, hdr); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeFileEntry writes the regular file n of folder fd to tw.
func writeFileEntry(tw *tar.Writer, fd int, n, name string, hdr *tar.Header) error {
	ffd, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: name, Err: describe(err, n)}
	}
	f := os.NewFile(uintptr(ffd), name)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil // swapped for something else meanwhile
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return fmt.Errorf("copy %s: %w", name, err)
	}
	return nil
}

// readlinkAt returns the target of the symlink n in folder fd.
func readlinkAt(fd int, n string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		k, err := unix.Readlinkat(fd, n, buf)
		if err != nil {
			return "", err
		}
		if k < size {
			return string(buf[:k]), nil
		}
	}
}
