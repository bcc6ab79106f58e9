package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bestofn/bestofn/sandbox/local"
)

// doctor reports what the local sandbox backend gives on this machine
// (bubblewrap namespaces, overlayfs forks) and whether git is there. It
// fails only when something required (git) is missing.
func doctor(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	dir := getenv("DATA_DIR")
	if dir == "" {
		tmp, err := os.MkdirTemp("", "bestofn-doctor-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	p, err := local.New(local.Options{Dir: filepath.Join(dir, "sandboxes")})
	if err != nil {
		return err
	}
	iso := p.Isolation()
	yes := map[bool]string{true: "yes", false: "no"}
	fmt.Fprintf(stdout, "sandbox backend:      local\n")
	fmt.Fprintf(stdout, "bubblewrap isolation: %s\n", yes[iso.Namespaces])
	fmt.Fprintf(stdout, "overlayfs forks:      %s\n", yes[iso.CopyOnWrite])
	for _, n := range iso.Notes {
		fmt.Fprintf(stdout, "  note: %s\n", n)
	}
	out, err := exec.CommandContext(ctx, "git", "--version").Output()
	if err != nil {
		fmt.Fprintf(stdout, "git:                  missing (apt-get install git)\n")
		return fmt.Errorf("git is required")
	}
	fmt.Fprintf(stdout, "git:                  %s\n", strings.TrimSpace(string(out)))
	if out, err := exec.CommandContext(ctx, "python3", "--version").CombinedOutput(); err == nil {
		fmt.Fprintf(stdout, "python3:              %s (the demo's example repository needs it)\n", strings.TrimSpace(string(out)))
	} else {
		fmt.Fprintf(stdout, "python3:              missing (the demo's example repository needs it)\n")
	}
	if !iso.Namespaces {
		fmt.Fprintf(stdout, "serve will refuse to run attempts unless ALLOW_UNISOLATED=1 is set.\n")
	}
	return nil
}
