package handlers_test

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
)

// BenchmarkWebhookIntake measures one signed issues.labeled delivery through
// the real router: signature check, parse, decision and the durable insert
// of the delivery and its job in SQLite, up to the 202. GitHub gives up
// after 10 seconds; the design asks for milliseconds.
func BenchmarkWebhookIntake(b *testing.B) {
	e := newEnv(b, "bench", nil)
	body := e.labeled("other-label-so-no-run-starts", maintainer)
	sig := sign(body, secret)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest(http.MethodPost, e.URL+"/webhook", bytes.NewReader(body))
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", "bench-"+strconv.Itoa(i))
		req.Header.Set("X-Hub-Signature-256", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
