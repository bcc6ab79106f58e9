package handlers

import (
	"crypto/hmac"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/bestofn/bestofn/store"
)

var runPageTmpl = template.Must(template.New("run").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>bestofn run {{.Run.ID}}</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}pre{background:#f6f8fa;padding:1em;overflow:auto;max-height:40em}</style>
</head><body>
<h1>bestofn run {{.Run.ID}}</h1>
<p>{{.Run.Repo}} issue #{{.Run.Issue}} · status <b>{{.Run.Status}}</b> · base <code>{{.Run.BaseCommit}}</code>
{{if .Run.PRURL}} · <a href="{{.Run.PRURL}}">pull request #{{.Run.PRNumber}}</a>{{end}}
{{if .Run.Error}}<p>Error: {{.Run.Error}}</p>{{end}}
<table><tr><th>#</th><th>hint</th><th>outcome</th><th>lines</th><th>files</th><th>agent exit</th><th>agent</th><th>grading</th><th>CPU s</th></tr>
{{range .Attempts}}<tr><td>{{.A.Number}}{{if eq .A.Number $.Run.Winner}} 🏆{{end}}</td><td>{{.A.Hint}}</td><td>{{.A.Outcome}}</td><td>+{{.A.LinesAdded}} −{{.A.LinesDeleted}}</td><td>{{.A.FilesChanged}}</td><td>{{.A.AgentExit}}</td><td>{{.A.AgentDuration}}</td><td>{{.A.GradeDuration}}</td><td>{{printf "%.2f" .A.CPUSeconds}}</td></tr>
{{end}}</table>
{{range .Attempts}}<h2 id="attempt-{{.A.Number}}">Attempt {{.A.Number}}: {{.A.Outcome}}</h2>
{{if .A.Patch}}<h3>Patch</h3><pre>{{printf "%s" .A.Patch}}</pre>{{end}}
{{if .AgentLog}}<h3>Agent log</h3><pre>{{.AgentLog}}</pre>{{end}}
{{if .TestLog}}<h3>Test log</h3><pre>{{.TestLog}}</pre>{{end}}
{{end}}
</body></html>
`))

// runPage serves GET /runs/{id}?key=K: a run's attempts with their patches
// and logs, as HTML (or JSON with Accept: application/json). An unknown run
// or a missing or wrong key is 404 (see runKey).
func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || !hmac.Equal([]byte(r.URL.Query().Get("key")), []byte(s.runKey(id))) {
		http.Error(w, "no such run", http.StatusNotFound)
		return
	}
	run, err := s.opts.Store.Run(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		http.Error(w, "no such run", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, "could not read the run", http.StatusInternalServerError)
		return
	}
	attempts, err := s.opts.Store.Attempts(r.Context(), id)
	if err != nil {
		http.Error(w, "could not read the attempts", http.StatusInternalServerError)
		return
	}
	type row struct {
		A                 *store.Attempt
		AgentLog, TestLog string
	}
	data := struct {
		Run      *store.Run
		Attempts []row
	}{Run: run}
	for _, a := range attempts {
		var d struct {
			AgentLog string `json:"agent_log"`
			TestLog  string `json:"test_log"`
		}
		_ = json.Unmarshal([]byte(a.Detail), &d)
		data.Attempts = append(data.Attempts, row{A: a, AgentLog: d.AgentLog, TestLog: d.TestLog})
	}
	if r.Header.Get("Accept") == "application/json" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"run": run, "attempts": attempts})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := runPageTmpl.Execute(w, data); err != nil {
		s.log.Warn("render run page", "err", err)
	}
}
