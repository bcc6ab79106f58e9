package runtimetest

import (
	"compress/gzip"
	"encoding/base64"
	"io"
	"unicode/utf8"
)

func decodeB64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

func encodeB64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// isText says b can travel as a JSON string unchanged.
func isText(b []byte) bool { return utf8.Valid(b) }

func newGzip(w io.Writer) *gzip.Writer { return gzip.NewWriter(w) }
