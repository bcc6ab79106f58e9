package runtime

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/bestofn/bestofn/sandbox"
)

// maxSimpleBody is the largest body of PUT files/content and files/archive;
// larger payloads go through the upload routes.
const maxSimpleBody = 1 << 20

// notExist wraps fs.ErrNotExist around a 404 about a file (not about the sandbox).
func notExist(err error) error {
	var ae *Error
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound && !strings.Contains(ae.Code, "sandbox") {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}

// WriteFile creates or replaces a file: PUT files/content?path=&mode= up to
// 1 MiB; larger under /workspace through POST /uploads, PUT
// /uploads/{uid}?offset= chunks and POST /uploads/{uid}:commit; larger
// under /bestofn (uploads only take /workspace) as a one-file archive
// upload into its folder. ErrStopped after Stop.
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte, mode fs.FileMode) error {
	if err := s.live(); err != nil {
		return err
	}
	if err := checkPath(p, false); err != nil || p == sandbox.Workspace || p == sandbox.Scratch {
		return fmt.Errorf("runtime: write file in %s: %w", s.id, errors.Join(err, errIf(err == nil, "path %q is a top folder", p)))
	}
	m := strconv.FormatUint(uint64(mode.Perm()), 8)
	if len(data) <= maxSimpleBody {
		q := url.Values{"path": {p}, "mode": {m}}
		body := data
		if body == nil {
			body = []byte{}
		}
		return s.p.doJSON(ctx, &request{method: "PUT", path: s.path("/files/content"), query: q, body: body, ctype: "application/octet-stream"}, nil, nil)
	}
	if !strings.HasPrefix(p, sandbox.Workspace+"/") {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		hdr := &tar.Header{Name: path.Base(p), Mode: int64(mode.Perm()), Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Now()}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		tw.Write(data)
		tw.Close()
		return s.PutArchive(ctx, path.Dir(p), &buf)
	}
	sum := sha256.Sum256(data)
	var start struct {
		UploadID   string `json:"uploadId"`
		ChunkBytes int    `json:"chunkBytes"`
	}
	in := map[string]any{"path": p, "size": len(data), "sha256": hex.EncodeToString(sum[:]), "mode": m}
	if err := s.p.doJSON(ctx, &request{method: "POST", path: s.path("/uploads")}, in, &start); err != nil {
		return err
	}
	chunk := start.ChunkBytes
	if chunk <= 0 || chunk > maxSimpleBody {
		chunk = maxSimpleBody
	}
	up := s.path("/uploads/" + url.PathEscape(start.UploadID))
	for off := 0; off < len(data); off += chunk {
		end := min(off+chunk, len(data))
		q := url.Values{"offset": {strconv.Itoa(off)}}
		if err := s.p.doJSON(ctx, &request{method: "PUT", path: up, query: q, body: data[off:end], ctype: "application/octet-stream"}, nil, nil); err != nil {
			return err
		}
	}
	return s.p.doJSON(ctx, &request{method: "POST", path: up + ":commit"}, map[string]any{}, nil)
}

func errIf(cond bool, format string, a ...any) error {
	if cond {
		return fmt.Errorf(format, a...)
	}
	return nil
}

// ReadFile returns a file's bytes (GET files/content?path=), checking
// x-content-length and x-content-sha256 when sent. A missing file is an
// error wrapping fs.ErrNotExist; ErrStopped after Stop.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	if err := checkPath(p, false); err != nil {
		return nil, fmt.Errorf("runtime: read file in %s: %w", s.id, err)
	}
	r := &request{method: "GET", path: s.path("/files/content"), query: url.Values{"path": {p}}, accept: "application/octet-stream"}
	resp, err := s.p.do(ctx, r)
	if err != nil {
		return nil, notExist(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("runtime: read %s in %s: %w", p, s.id, ctx.Err())
		}
		return nil, fmt.Errorf("runtime: read %s in %s: %s", p, s.id, s.p.redact(err.Error()))
	}
	if cl := resp.Header.Get("x-content-length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err != nil || n != int64(len(data)) {
			return nil, fmt.Errorf("runtime: read %s in %s: got %d bytes, x-content-length %q", p, s.id, len(data), cl)
		}
	}
	if sh := resp.Header.Get("x-content-sha256"); sh != "" {
		sum := sha256.Sum256(data)
		if !strings.EqualFold(sh, hex.EncodeToString(sum[:])) {
			return nil, fmt.Errorf("runtime: read %s in %s: sha256 mismatch", p, s.id)
		}
	}
	return data, nil
}

// PutArchive unpacks a tar stream (plain or gzip; the server detects it)
// into dir: PUT files/archive?path= up to 1 MiB, else POST
// files/archive/uploads, PUT .../uploads/{uid}?offset= parts in order and
// POST ...:commit. ErrStopped after Stop.
func (s *Sandbox) PutArchive(ctx context.Context, dir string, tarStream io.Reader) error {
	if err := s.live(); err != nil {
		return err
	}
	if err := checkPath(dir, true); err != nil {
		return fmt.Errorf("runtime: put archive in %s: %w", s.id, err)
	}
	if tarStream == nil {
		return fmt.Errorf("runtime: put archive in %s: nil tar stream", s.id)
	}
	head, err := io.ReadAll(io.LimitReader(tarStream, maxSimpleBody+1))
	if err != nil {
		return fmt.Errorf("runtime: put archive in %s: reading the tar stream: %w", s.id, err)
	}
	if len(head) <= maxSimpleBody {
		q := url.Values{"path": {dir}}
		return s.p.doJSON(ctx, &request{method: "PUT", path: s.path("/files/archive"), query: q, body: head, ctype: "application/x-tar"}, nil, nil)
	}
	var start struct {
		UploadID   string `json:"uploadId"`
		ChunkBytes int    `json:"chunkBytes"`
	}
	if err := s.p.doJSON(ctx, &request{method: "POST", path: s.path("/files/archive/uploads")}, map[string]any{"path": dir}, &start); err != nil {
		return err
	}
	chunk := start.ChunkBytes
	if chunk <= 0 || chunk > maxSimpleBody {
		chunk = maxSimpleBody
	}
	up := s.path("/files/archive/uploads/" + url.PathEscape(start.UploadID))
	src := io.MultiReader(bytes.NewReader(head), tarStream)
	buf := make([]byte, chunk)
	for off := 0; ; {
		n, rerr := io.ReadFull(src, buf)
		if n > 0 {
			q := url.Values{"offset": {strconv.Itoa(off)}}
			part := append([]byte(nil), buf[:n]...)
			if err := s.p.doJSON(ctx, &request{method: "PUT", path: up, query: q, body: part, ctype: "application/octet-stream"}, nil, nil); err != nil {
				return err
			}
			off += n
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("runtime: put archive in %s: reading the tar stream: %w", s.id, rerr)
		}
	}
	return s.p.doJSON(ctx, &request{method: "POST", path: up + ":commit"}, map[string]any{}, nil)
}

// GetArchive returns dir as an uncompressed tar stream (GET
// files/archive?path=; a gzip answer is decompressed). A missing folder is
// an error wrapping fs.ErrNotExist; ErrStopped after Stop. The caller closes
// the stream; a failed download shows as a tar read error.
func (s *Sandbox) GetArchive(ctx context.Context, dir string) (io.ReadCloser, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	if err := checkPath(dir, true); err != nil {
		return nil, fmt.Errorf("runtime: get archive in %s: %w", s.id, err)
	}
	r := &request{method: "GET", path: s.path("/files/archive"), query: url.Values{"path": {dir}}, accept: "application/x-tar"}
	resp, err := s.p.do(ctx, r)
	if err != nil {
		return nil, notExist(err)
	}
	br := bufio.NewReader(resp.Body)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("runtime: get archive %s in %s: %w", dir, s.id, err)
		}
		return readCloser{zr, resp.Body}, nil
	}
	return readCloser{br, resp.Body}, nil
}

type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }
