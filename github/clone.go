package github

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
)

// Clone runs `git clone --quiet` of cloneURL's default branch into dir (which
// must not exist or be empty) on the bot's side and returns the sha of HEAD.
// See CloneBranch for how the token travels.
func Clone(ctx context.Context, cloneURL, token, dir string) (headSHA string, err error) {
	return CloneBranch(ctx, cloneURL, token, dir, "")
}

// CloneBranch is Clone of branch instead of the default branch (all of it
// when branch is empty). The token is sent as HTTP basic auth
// "x-access-token:<token>" through an http.extraHeader given to git in its
// environment (GIT_CONFIG_COUNT/KEY/VALUE), so it is never in argv, the
// remote URL, .git/config or any other file; credential helpers and prompts
// are turned off. Errors never contain the token.
func CloneBranch(ctx context.Context, cloneURL, token, dir, branch string) (headSHA string, err error) {
	safeURL := cloneURL
	if u, perr := url.Parse(cloneURL); perr == nil {
		safeURL = u.Redacted()
	}
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	redact := func(s string) string {
		if token == "" {
			return s
		}
		return strings.NewReplacer(token, "***", basic, "***").Replace(s)
	}

	args := []string{"clone", "--quiet"}
	if branch != "" {
		args = append(args, "--branch", branch)
	}
	args = append(args, "--", cloneURL, dir)
	env := append(gitSafeEnviron(),
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GCM_INTERACTIVE=never",
	)
	if token != "" {
		env = append(env,
			"GIT_CONFIG_COUNT=2",
			"GIT_CONFIG_KEY_0=http.extraHeader",
			"GIT_CONFIG_VALUE_0=Authorization: Basic "+basic,
			// An empty helper resets the list: no helper sees or stores anything.
			"GIT_CONFIG_KEY_1=credential.helper",
			"GIT_CONFIG_VALUE_1=",
		)
	} else {
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=")
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(redact(stderr.String()))
		if ctx.Err() != nil {
			return "", fmt.Errorf("git clone %s: %w (%s)", safeURL, ctx.Err(), msg)
		}
		if strings.Contains(msg, "could not read Username") || strings.Contains(msg, "Authentication failed") {
			msg += " (the server refused the credentials)"
		}
		return "", fmt.Errorf("git clone %s: %s: %s", safeURL, redact(err.Error()), msg)
	}

	rev := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD")
	rev.Env = gitSafeEnviron()
	out, err := rev.Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD in %s: %w", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// gitSafeEnviron is the part of the process environment git needs to run
// and reach the network (PATH, HOME, locale, TLS and proxy settings): never
// the bot's secrets (PRIVATE_KEY, WEBHOOK_SECRET, model keys), never a GIT_*
// variable that would point git at another repository.
func gitSafeEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR",
			"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy":
			env = append(env, kv)
		}
	}
	return env
}
