package local

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"syscall"
	"testing"

	"github.com/bestofn/bestofn/sandbox"
)

// BenchmarkFork measures forking a prepared base into one copy and stopping
// it, for a small and a large workspace, with overlayfs and with the copy
// fallback. The design's claim: with overlayfs a fork costs the same for 10
// files and 10,000.
func BenchmarkFork(b *testing.B) {
	for _, files := range []int{10, 10000} {
		for _, m := range []struct {
			name string
			opts Options
		}{{"overlay", Options{}}, {"copy", Options{ForceCopy: true}}} {
			b.Run(fmt.Sprintf("%s/%d-files", m.name, files), func(b *testing.B) {
				m.opts.Dir = b.TempDir()
				p, err := New(m.opts)
				if err != nil {
					b.Fatal(err)
				}
				if m.name == "overlay" && !p.Isolation().CopyOnWrite {
					b.Skip("overlayfs cannot be mounted here")
				}
				ctx := context.Background()
				base, err := p.Create(ctx, sandbox.CreateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				defer base.Stop(ctx)
				if err := base.PutArchive(ctx, sandbox.Workspace, treeTar(b, files)); err != nil {
					b.Fatal(err)
				}
				// Write the base's files back first: overlayfs syncs the
				// upper filesystem when a copy is unmounted, and the first
				// Stop would otherwise pay for writing the base out.
				syscall.Sync()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					kids, err := base.Fork(ctx, 1)
					if err != nil {
						b.Fatal(err)
					}
					if err := kids[0].Stop(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// treeTar is a tar of n small files spread over folders of 100.
func treeTar(b *testing.B, n int) *bytes.Buffer {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i < n; i++ {
		data := []byte(fmt.Sprintf("package p%d\n// file %d\n", i/100, i))
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("d%03d/f%05d.go", i/100, i), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			b.Fatal(err)
		}
		tw.Write(data)
	}
	tw.Close()
	return &buf
}
