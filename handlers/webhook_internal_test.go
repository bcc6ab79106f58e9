package handlers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestValidSignatureDocsVector checks the HMAC against the test vector of
// GitHub's "Validating webhook deliveries" page.
func TestValidSignatureDocsVector(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "shared", "fixtures", "webhooks", "signature-test-vector.json"))
	if err != nil {
		t.Skip("shared/fixtures not beside the repository")
	}
	var v struct {
		Secret    string `json:"secret"`
		Payload   string `json:"payload"`
		Signature string `json:"X-Hub-Signature-256"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if !validSignature(v.Signature, []byte(v.Payload), []byte(v.Secret)) {
		t.Error("the docs' signature does not verify")
	}
	if validSignature(v.Signature, []byte(v.Payload+" "), []byte(v.Secret)) {
		t.Error("a changed body verifies")
	}
	if validSignature(v.Signature, []byte(v.Payload), nil) {
		t.Error("an empty secret verifies")
	}
}
