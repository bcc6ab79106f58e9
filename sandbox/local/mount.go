package local

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxMountData is the size limit of mount(2)'s option string.
const maxMountData = 4095

// mountOverlay mounts an overlay at target. lowers is top first. Without
// upper the mount is read-only (it then needs two lowers or more).
func mountOverlay(target string, lowers []string, upper, work string) error {
	for _, l := range append(append([]string(nil), lowers...), upper, work) {
		if strings.ContainsAny(l, ",:\\") {
			return fmt.Errorf("mount overlay at %s: layer %q has a ',' ':' or '\\'", target, l)
		}
	}
	opts := "lowerdir=" + strings.Join(lowers, ":")
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if upper != "" {
		opts += ",upperdir=" + upper + ",workdir=" + work
	} else {
		flags |= unix.MS_RDONLY
	}
	opts += ",index=off"
	if len(opts) > maxMountData {
		return fmt.Errorf("mount overlay at %s: %d layers make the options too long (%d bytes)", target, len(lowers), len(opts))
	}
	if err := unix.Mount("overlay", target, "overlay", flags, opts); err != nil {
		return fmt.Errorf("mount overlay at %s: %w", target, err)
	}
	return nil
}

// unmount unmounts path, lazily when it is busy. A path that is not a mount
// point (or is gone) is not an error.
func unmount(path string) error {
	err := unix.Unmount(path, 0)
	if err == nil || err == unix.EINVAL || err == unix.ENOENT {
		return nil
	}
	if err2 := unix.Unmount(path, unix.MNT_DETACH); err2 != nil && err2 != unix.EINVAL && err2 != unix.ENOENT {
		return fmt.Errorf("unmount %s: %w (lazy: %v)", path, err, err2)
	}
	return nil
}

// mountsUnder returns the mount points of this process's mount namespace
// that are below dir (not dir itself), deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// unescapeMountinfo decodes the \ooo octal escapes of /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeAll deletes dir and everything in it, making read-only folders
// writable first when plain removal fails. It never follows symlinks.
func removeAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}
