// Package github is bestofn's GitHub side: the App (JWT) and per-installation
// clients built on go-github v66 and ghinstallation v2, and the few REST calls
// the bot makes (config fetch, comments, reactions, permission, a commit through
// the Git Data API, a branch, a pull request) plus a token-safe git clone.
//
// The in-process double in github/githubtest speaks the same wire format.
package github

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	jwt "github.com/golang-jwt/jwt/v4"
	gogithub "github.com/google/go-github/v66/github"
)

// DefaultBaseURL is the REST API base of github.com.
const DefaultBaseURL = "https://api.github.com/"

// DefaultUserAgent is sent when Config.UserAgent is empty.
const DefaultUserAgent = "bestofn"

// Timeout bounds every HTTP request the clients make, token refresh included.
const Timeout = 30 * time.Second

// Config says which App to act as and where GitHub is.
type Config struct {
	// AppID is the GitHub App's numeric id (APP_ID).
	AppID int64
	// PrivateKey is the App's private key in PEM form (PRIVATE_KEY).
	PrivateKey []byte
	// BaseURL is the REST API base, e.g. "https://api.github.com/" (the
	// default when empty), a GitHub Enterprise Server URL or a test double.
	// A trailing "/" is added when missing. For a host other than
	// api.github.com, go-github's WithEnterpriseURLs rule applies: "api/v3/" is
	// appended unless the path already ends in "/api/v3/" or the host starts
	// with "api."; token requests go to the same resulting base.
	BaseURL string
	// Transport is the shared base transport; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// UserAgent is sent on every request; empty means DefaultUserAgent.
	UserAgent string
}

// App is a GitHub App: it signs JWTs with its key and hands out one cached
// Client per installation. It is safe for concurrent use.
type App struct {
	appID   int64
	baseURL string // effective REST base, with a trailing "/"
	ua      string
	base    http.RoundTripper
	key     *rsa.PrivateKey
	apps    *ghinstallation.AppsTransport
	jwt     *gogithub.Client

	mu      sync.Mutex
	clients map[int64]*Client
}

// Client acts as one installation of the App: every request carries that
// installation's token, which ghinstallation mints, caches and renews a minute
// before it expires. It is safe for concurrent use.
type Client struct {
	installationID int64
	tr             *ghinstallation.Transport
	gh             *gogithub.Client
}

// New parses the App's private key and builds the App-level (JWT) transport.
// It returns an error naming APP_ID or PRIVATE_KEY when those are unusable,
// or BaseURL when it does not parse; it makes no request.
func New(cfg Config) (*App, error) {
	if cfg.AppID <= 0 {
		return nil, fmt.Errorf("github app: APP_ID must be a positive number, got %d", cfg.AppID)
	}
	if len(cfg.PrivateKey) == 0 {
		return nil, errors.New("github app: PRIVATE_KEY is empty")
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(cfg.PrivateKey)
	if err != nil {
		// The parser's message never quotes the key.
		return nil, fmt.Errorf("github app: PRIVATE_KEY does not parse as an RSA private key in PEM form: %w", err)
	}
	return newApp(cfg, key)
}

func newApp(cfg Config, key *rsa.PrivateKey) (*App, error) {
	ua := cfg.UserAgent
	if ua == "" {
		ua = DefaultUserAgent
	}
	base := cfg.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	base = &uaTransport{ua: ua, next: base}

	apps := ghinstallation.NewAppsTransportFromPrivateKey(base, cfg.AppID, key)
	a := &App{appID: cfg.AppID, ua: ua, base: base, key: key, apps: apps, clients: map[int64]*Client{}}

	jwtClient, err := a.newGoGitHub(apps, cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	a.jwt = jwtClient
	a.baseURL = jwtClient.BaseURL.String()
	apps.BaseURL = strings.TrimSuffix(a.baseURL, "/")
	return a, nil
}

// newGoGitHub returns a go-github client over rt pointed at baseURL (github.com
// when empty), with the App's user agent and the request timeout.
func (a *App) newGoGitHub(rt http.RoundTripper, baseURL string) (*gogithub.Client, error) {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	if !strings.HasSuffix(baseURL, "/") {
		baseURL += "/"
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("github app: BaseURL %q is not an absolute URL", baseURL)
	}
	c := gogithub.NewClient(&http.Client{Transport: rt, Timeout: Timeout})
	if baseURL != DefaultBaseURL {
		c, err = c.WithEnterpriseURLs(baseURL, baseURL)
		if err != nil {
			return nil, fmt.Errorf("github app: BaseURL %q: %w", baseURL, err)
		}
	}
	c.UserAgent = a.ua
	return c, nil
}

// BaseURL returns the REST base every request goes to, ending in "/" (for a
// GitHub Enterprise Server or a double, the one with "api/v3/" appended).
func (a *App) BaseURL() string { return a.baseURL }

// AppID returns the App's id.
func (a *App) AppID() int64 { return a.appID }

// GitHub returns the go-github client authenticated as the App itself (a JWT
// per request), for the /app endpoints.
func (a *App) GitHub() *gogithub.Client { return a.jwt }

// Slug returns the App's slug (its bot user is "<slug>[bot]"), following
// https://docs.github.com/rest/apps/apps#get-the-authenticated-app.
func (a *App) Slug(ctx context.Context) (string, error) {
	app, _, err := a.jwt.Apps.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("get authenticated app: %w", err)
	}
	return app.GetSlug(), nil
}

// RepoInstallation returns the id of the App's installation on owner/repo,
// following https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app.
// A repository the App is not installed on is an error (404).
func (a *App) RepoInstallation(ctx context.Context, owner, repo string) (int64, error) {
	inst, _, err := a.jwt.Apps.FindRepositoryInstallation(ctx, owner, repo)
	if err != nil {
		return 0, fmt.Errorf("find installation for %s/%s: %w", owner, repo, err)
	}
	return inst.GetID(), nil
}

// Installation returns the Client for installation id, creating it on first
// use; later calls return the same Client, so its token is reused until it
// nears expiry. It makes no request and fails only for a non-positive id.
func (a *App) Installation(id int64) (*Client, error) {
	if id <= 0 {
		return nil, fmt.Errorf("github installation: id must be positive, got %d", id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.clients[id]; ok {
		return c, nil
	}
	// ghinstallation writes to its AppsTransport on every token refresh, so
	// each installation gets its own (over the one shared base transport).
	apps := ghinstallation.NewAppsTransportFromPrivateKey(a.base, a.appID, a.key)
	apps.BaseURL = a.apps.BaseURL
	tr := ghinstallation.NewFromAppsTransport(apps, id)
	gh, err := a.newGoGitHub(tr, a.baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{installationID: id, tr: tr, gh: gh}
	a.clients[id] = c
	return c, nil
}

// InstallationID returns the installation this Client acts as.
func (c *Client) InstallationID() int64 { return c.installationID }

// GitHub returns the underlying go-github client (installation-authenticated)
// for calls this package does not wrap.
func (c *Client) GitHub() *gogithub.Client { return c.gh }

// Token returns a valid installation access token, minting one through
// https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app
// when none is cached or the cached one expires within a minute. Never log it.
func (c *Client) Token(ctx context.Context) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, Timeout)
		defer cancel()
	}
	tok, err := c.tr.Token(ctx)
	if err != nil {
		return "", fmt.Errorf("installation %d token: %w", c.installationID, err)
	}
	return tok, nil
}

// uaTransport sets the User-Agent on requests that have none (token requests
// made by ghinstallation).
type uaTransport struct {
	ua   string
	next http.RoundTripper
}

func (t *uaTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("User-Agent") != "" {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("User-Agent", t.ua)
	return t.next.RoundTrip(r)
}

// StatusCode returns the HTTP status of the GitHub response behind err, or 0
// when err does not carry one.
func StatusCode(err error) int {
	var er *gogithub.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	var rl *gogithub.RateLimitError
	if errors.As(err, &rl) && rl.Response != nil {
		return rl.Response.StatusCode
	}
	var ab *gogithub.AbuseRateLimitError
	if errors.As(err, &ab) && ab.Response != nil {
		return ab.Response.StatusCode
	}
	return 0
}

// IsNotFound reports whether err is GitHub's 404 answer.
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// errorMentions reports whether err is a GitHub error response whose message or
// one of whose errors[].message contains text (case-insensitive).
func errorMentions(err error, status int, text string) bool {
	var er *gogithub.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != status {
		return false
	}
	text = strings.ToLower(text)
	if strings.Contains(strings.ToLower(er.Message), text) {
		return true
	}
	for _, e := range er.Errors {
		if strings.Contains(strings.ToLower(e.Message), text) {
			return true
		}
	}
	return false
}
