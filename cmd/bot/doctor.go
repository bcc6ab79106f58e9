package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bestofn/bestofn/sandbox/local"
	"github.com/bestofn/bestofn/sandbox/runtime"
)

// doctor reports what the local sandbox backend gives on this machine
// (bubblewrap namespaces, overlayfs forks) and whether git is there. It
// fails only when something required (git) is missing.
func doctor(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if getenv("SANDBOX") == "runtime" {
		return doctorRuntime(ctx, getenv, stdout)
	}
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

// doctorRuntime checks RUNTIME_API_KEY with GET /v1/me and prints the
// account's limits (GET /v1/limits).
func doctorRuntime(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	key := getenv("RUNTIME_API_KEY")
	if key == "" {
		return fmt.Errorf("SANDBOX=runtime needs RUNTIME_API_KEY")
	}
	p, err := runtime.New(runtime.Options{BaseURL: getenv("RUNTIME_API_URL"), APIKey: key})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sandbox backend:      runtime\n")
	a, err := p.Account(ctx)
	if err != nil {
		fmt.Fprintf(stdout, "api key:              refused (%v)\n", err)
		return fmt.Errorf("RUNTIME_API_KEY: %w", err)
	}
	fmt.Fprintf(stdout, "api key:              ok (%s)\n", compact(a.Me))
	fmt.Fprintf(stdout, "limits:               %s\n", compact(a.Limits))
	return nil
}

// compact prints a JSON object's keys and values in key order on one line.
func compact(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, _ := json.Marshal(m[k])
		parts = append(parts, k+"="+string(v))
	}
	return strings.Join(parts, " ")
}
