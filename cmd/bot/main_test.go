package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bestofn/bestofn/github/githubtest"
	"github.com/bestofn/bestofn/sandbox/runtime/runtimetest"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), nil, envOf(nil), &out, &errb); code != 2 {
		t.Errorf("no command: exit %d, want 2", code)
	}
	if code := run(context.Background(), []string{"frobnicate"}, envOf(nil), &out, &errb); code != 2 || !strings.Contains(errb.String(), "unknown command") {
		t.Errorf("unknown command: exit %d, %q", code, errb.String())
	}
	if code := run(context.Background(), []string{"help"}, envOf(nil), &out, &errb); code != 0 || !strings.Contains(out.String(), "serve") {
		t.Errorf("help: exit %d", code)
	}
}

func TestLoadServeConfig(t *testing.T) {
	gh, err := githubtest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer gh.Close()
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	os.WriteFile(keyFile, gh.PrivateKeyPEM, 0o600)
	good := map[string]string{"APP_ID": "42", "PRIVATE_KEY_PATH": keyFile, "WEBHOOK_SECRET": "s", "DATA_DIR": t.TempDir()}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range good {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := map[string]struct {
		env  map[string]string
		want []string // each must appear in the error; nil means no error
	}{
		"OK":              {env: good},
		"Nothing":         {env: map[string]string{}, want: []string{"APP_ID", "PRIVATE_KEY", "WEBHOOK_SECRET", "DATA_DIR"}},
		"NoSecret":        {env: with("WEBHOOK_SECRET", ""), want: []string{"WEBHOOK_SECRET"}},
		"NoKey":           {env: with("PRIVATE_KEY_PATH", ""), want: []string{"PRIVATE_KEY"}},
		"KeyDoesNotParse": {env: with("PRIVATE_KEY", "-----BEGIN RSA PRIVATE KEY-----\nnope\n-----END RSA PRIVATE KEY-----"), want: []string{"PRIVATE_KEY"}},
		"KeyFileMissing":  {env: with("PRIVATE_KEY_PATH", "/nonexistent/key.pem"), want: []string{"PRIVATE_KEY_PATH"}},
		"AppIDNotNumber":  {env: with("APP_ID", "bestofn"), want: []string{"APP_ID"}},
		"BadPort":         {env: with("PORT", "http"), want: []string{"PORT"}},
		"NoDataDir":       {env: with("DATA_DIR", ""), want: []string{"DATA_DIR"}},
		"UnknownSandbox":  {env: with("SANDBOX", "docker"), want: []string{"SANDBOX"}},
		"RuntimeNoKey":    {env: with("SANDBOX", "runtime"), want: []string{"RUNTIME_API_KEY"}},
		"RuntimeBadSize": {env: func() map[string]string {
			m := with("SANDBOX", "runtime")
			m["RUNTIME_API_KEY"], m["RUNTIME_VCPU"], m["RUNTIME_TIME_LIMIT"] = "k", "many", "5s"
			return m
		}(), want: []string{"RUNTIME_VCPU", "RUNTIME_TIME_LIMIT"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := loadServeConfig(envOf(tc.env))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
			if strings.Contains(err.Error(), "PRIVATE KEY-----") || strings.Contains(err.Error(), string(gh.PrivateKeyPEM[40:80])) {
				t.Errorf("error quotes the key")
			}
		})
	}
}

func TestLoadServeConfigPassesModelKeysOnly(t *testing.T) {
	gh, _ := githubtest.New()
	defer gh.Close()
	c, err := loadServeConfig(envOf(map[string]string{"APP_ID": "1", "PRIVATE_KEY": strings.ReplaceAll(string(gh.PrivateKeyPEM), "\n", `\n`),
		"WEBHOOK_SECRET": "s", "DATA_DIR": "/tmp/x", "ANTHROPIC_API_KEY": "sk-ant", "AWS_SECRET_ACCESS_KEY": "aws"}))
	if err != nil {
		t.Fatalf("PEM with \\n escapes: %v", err)
	}
	if c.AgentEnv["ANTHROPIC_API_KEY"] != "sk-ant" || len(c.AgentEnv) != 1 {
		t.Errorf("agent env = %v", c.AgentEnv)
	}
}

// TestServe starts the real server and checks it answers and shuts down
// when its context ends.
func TestServe(t *testing.T) {
	gh, err := githubtest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer gh.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	env := map[string]string{"APP_ID": strconv.FormatInt(gh.AppID, 10), "PRIVATE_KEY": string(gh.PrivateKeyPEM), "WEBHOOK_SECRET": "s",
		"DATA_DIR": t.TempDir(), "GITHUB_API_URL": gh.URL, "PORT": strconv.Itoa(port), "ALLOW_UNISOLATED": "1"}
	ctx, cancel := context.WithCancel(context.Background())
	var logs bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve"}, envOf(env), &logs, &logs) }()
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	var resp *http.Response
	for i := 0; i < 200; i++ {
		if resp, err = http.Get(url + "/healthz"); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err != nil {
		cancel()
		t.Fatalf("server did not answer: %v\n%s", err, logs.String())
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz = %d", resp.StatusCode)
	}
	resp, err = http.Post(url+"/webhook", "application/json", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned webhook = %v %v", resp.StatusCode, err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d\n%s", code, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if strings.Contains(logs.String(), "PRIVATE KEY") || strings.Contains(logs.String(), "WEBHOOK_SECRET=s") {
		t.Errorf("logs leak secrets")
	}
}

// TestDoctorRuntime checks the Runtime key against the in-process Runtime
// server and prints the account's limits; a wrong key fails.
func TestDoctorRuntime(t *testing.T) {
	rt, err := runtimetest.New(runtimetest.Options{Dir: t.TempDir(), APIKey: "rt_good"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var out, errb bytes.Buffer
	env := map[string]string{"SANDBOX": "runtime", "RUNTIME_API_KEY": "rt_good", "RUNTIME_API_URL": rt.URL()}
	if code := run(context.Background(), []string{"doctor"}, envOf(env), &out, &errb); code != 0 || !strings.Contains(out.String(), "maxForkCount=10") {
		t.Errorf("doctor = %d\n%s%s", code, out.String(), errb.String())
	}
	env["RUNTIME_API_KEY"] = "rt_bad"
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"doctor"}, envOf(env), &out, &errb); code != 1 || strings.Contains(out.String()+errb.String(), "rt_bad") {
		t.Errorf("doctor with a wrong key = %d\n%s%s", code, out.String(), errb.String())
	}
}

// TestRuntimeEgressSecretKeepsTheKeyOut: with an egress secret the real model
// key never goes into the agent's environment.
func TestRuntimeEgressSecretKeepsTheKeyOut(t *testing.T) {
	gh, _ := githubtest.New()
	defer gh.Close()
	env := map[string]string{"APP_ID": "1", "PRIVATE_KEY": string(gh.PrivateKeyPEM), "WEBHOOK_SECRET": "s", "DATA_DIR": t.TempDir(),
		"SANDBOX": "runtime", "RUNTIME_API_KEY": "rt", "ANTHROPIC_API_KEY": "sk-ant-real", "OPENAI_API_KEY": "sk-oa",
		"RUNTIME_EGRESS_SECRET": "ANTHROPIC_API_KEY", "RUNTIME_ALLOW_HOSTS": "api.anthropic.com, api.openai.com"}
	c, err := loadServeConfig(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.AgentEnv["ANTHROPIC_API_KEY"]; ok || c.AgentEnv["OPENAI_API_KEY"] != "sk-oa" {
		t.Errorf("agent env = %v", c.AgentEnv)
	}
	if len(c.RuntimeAllow) != 2 || c.RuntimeAllow[1] != "api.openai.com" {
		t.Errorf("allow = %q", c.RuntimeAllow)
	}
}

// TestOneBotPerDataDir: a second bot on the same DATA_DIR refuses to start
// (it would requeue and rerun the first one's running jobs).
func TestOneBotPerDataDir(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDataDir(dir); err == nil || !strings.Contains(err.Error(), "in use by another bestofn process") {
		t.Errorf("second lock: %v", err)
	}
	unlock()
	again, err := lockDataDir(dir)
	if err != nil {
		t.Errorf("lock after unlock: %v", err)
	} else {
		again()
	}
}
