package githubtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	jwt "github.com/golang-jwt/jwt/v4"
)

// checkJWT verifies an App JWT the way GitHub does: RS256 signed by the App's
// key, iss = the App id, exp present, in the future and at most 10 minutes
// ahead. It returns GitHub's message when the JWT is refused.
func (s *Server) checkJWT(raw string) (string, bool) {
	const undecodable = "A JSON web token could not be decoded"
	tok, err := jwt.Parse(raw, func(t *jwt.Token) (any, error) {
		if t.Method.Alg() != jwt.SigningMethodRS256.Alg() {
			return nil, errors.New("unexpected signing method " + t.Method.Alg())
		}
		return &s.key.PublicKey, nil
	})
	if err != nil {
		var ve *jwt.ValidationError
		if errors.As(err, &ve) && ve.Errors&jwt.ValidationErrorExpired != 0 {
			return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires", false
		}
		if errors.As(err, &ve) && ve.Errors&jwt.ValidationErrorIssuedAt != 0 {
			return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued", false
		}
		return undecodable, false
	}
	claims, ok := tok.Claims.(jwt.MapClaims)
	if !ok || !tok.Valid {
		return undecodable, false
	}
	var iss string
	switch v := claims["iss"].(type) {
	case string:
		iss = v
	case float64:
		iss = strconv.FormatInt(int64(v), 10)
	}
	if iss != strconv.FormatInt(s.AppID, 10) {
		return undecodable, false
	}
	exp, ok := claims["exp"].(float64)
	if !ok {
		return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires", false
	}
	if time.Unix(int64(exp), 0).After(time.Now().Add(10*time.Minute + 30*time.Second)) {
		return "'Expiration time' claim ('exp') is too far in the future", false
	}
	return "", true
}

// appAuth guards the endpoints that take the App's JWT.
func (s *Server) appAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			writeError(w, http.StatusUnauthorized, "A JSON web token could not be decoded", "https://docs.github.com/rest")
			return
		}
		if msg, ok := s.checkJWT(strings.TrimSpace(raw)); !ok {
			writeError(w, http.StatusUnauthorized, msg, "https://docs.github.com/rest")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tokenFor returns the installation of a valid, unexpired installation token
// and whether it may be used on repo ("owner/name").
func (s *Server) tokenFor(tok, repo string) (inst int64, valid, allowed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tok]
	if !ok || time.Now().After(t.expires) {
		return 0, false, false
	}
	in, ok := s.installs[t.installation]
	if !ok || in.suspended {
		return 0, false, false
	}
	allowed = slices.Contains(in.repos, repo) && (t.repos == nil || slices.Contains(t.repos, repo))
	return t.installation, true, allowed
}

// repoAuth guards /repos/{owner}/{repo}/...: the request needs
// "Authorization: token|Bearer <installation token>". A missing header is
// 401 "Requires authentication", an unknown or expired token 401 "Bad
// credentials"; a valid token for an installation without the repository,
// or a repository that does not exist, 404 "Not Found" (as GitHub answers
// for a private repository one cannot see).
func (s *Server) repoAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		full := chi.URLParam(r, "owner") + "/" + chi.URLParam(r, "repo")
		h := r.Header.Get("Authorization")
		if h == "" {
			writeError(w, http.StatusUnauthorized, "Requires authentication", "https://docs.github.com/rest")
			return
		}
		scheme, tok, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "token") && !strings.EqualFold(scheme, "bearer") {
			writeError(w, http.StatusUnauthorized, "Bad credentials", "https://docs.github.com/rest")
			return
		}
		inst, valid, allowed := s.tokenFor(strings.TrimSpace(tok), full)
		if !valid {
			writeError(w, http.StatusUnauthorized, "Bad credentials", "https://docs.github.com/rest")
			return
		}
		info(r).installation = inst
		s.mu.Lock()
		rp := s.repos[full]
		s.mu.Unlock()
		if !allowed || rp == nil {
			notFound(w, "")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), repoKey, rp)))
	})
}

// createToken is POST /app/installations/{id}/access_tokens.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		notFound(w, docAccessToken)
		return
	}
	var opts struct {
		Repositories []string `json:"repositories"`
	}
	if r.ContentLength != 0 {
		if !decodeBody(w, r, &opts) {
			return
		}
	}
	s.mu.Lock()
	in, ok := s.installs[id]
	var repos []string
	var suspended bool
	if ok {
		repos = slices.Clone(in.repos)
		suspended = in.suspended
	}
	s.mu.Unlock()
	if !ok {
		notFound(w, docAccessToken)
		return
	}
	if suspended {
		writeBody(w, http.StatusForbidden, fixtureBytes("app-installation-access-token-403-suspended.json"))
		return
	}
	var restrict []string
	if len(opts.Repositories) > 0 {
		for _, name := range opts.Repositories {
			found := false
			for _, full := range repos {
				if strings.HasSuffix(full, "/"+name) {
					restrict = append(restrict, full)
					found = true
				}
			}
			if !found {
				writeValidation(w, "Installation", "repositories", "invalid", "There is at least one repository that does not exist or is not accessible to the parent installation.", docAccessToken)
				return
			}
		}
		repos = restrict
	}

	tok := randomToken()
	expires := time.Now().Add(time.Hour).Truncate(time.Second)
	s.mu.Lock()
	s.tokens[tok] = &token{installation: id, expires: expires, repos: restrict}
	s.tokenList = append(s.tokenList, tok)
	s.mu.Unlock()

	body := fixtureObject("app-installation-access-token.json")
	body["token"] = tok
	body["expires_at"] = timestamp(expires)
	body["permissions"] = s.permissions()
	body["repository_selection"] = "selected"
	list := []any{}
	for _, full := range repos {
		s.mu.Lock()
		rp := s.repos[full]
		s.mu.Unlock()
		if rp != nil {
			list = append(list, s.repoJSON(rp))
		}
	}
	body["repositories"] = list
	writeJSON(w, http.StatusCreated, body)
}

// permissions are the App's permissions (those app.yml asks for).
func (s *Server) permissions() map[string]any {
	p := map[string]any{
		"contents":      "write",
		"issues":        "write",
		"pull_requests": "write",
		"metadata":      "read",
	}
	s.mu.Lock()
	if s.workflows {
		p["workflows"] = "write"
	}
	s.mu.Unlock()
	return p
}

// getApp is GET /app (JWT).
func (s *Server) getApp(w http.ResponseWriter, r *http.Request) {
	now := timestamp(time.Now())
	writeJSON(w, http.StatusOK, map[string]any{
		"id":           s.AppID,
		"slug":         s.AppSlug,
		"node_id":      nodeID("Integration", s.AppID),
		"client_id":    "Iv1.double",
		"owner":        s.userJSON("bestofn"),
		"name":         s.AppSlug,
		"description":  "Runs several coding-agent attempts and opens the best one as a pull request.",
		"external_url": s.htmlBase,
		"html_url":     s.htmlBase + "apps/" + s.AppSlug,
		"created_at":   now,
		"updated_at":   now,
		"permissions":  s.permissions(),
		"events":       []any{"issues", "issue_comment", "pull_request"},
	})
}

// getRepoInstallation is GET /repos/{owner}/{repo}/installation (JWT).
func (s *Server) getRepoInstallation(w http.ResponseWriter, r *http.Request) {
	full := chi.URLParam(r, "owner") + "/" + chi.URLParam(r, "repo")
	s.mu.Lock()
	var found *installation
	for _, in := range s.installs {
		if slices.Contains(in.repos, full) && (found == nil || in.id < found.id) {
			found = in
		}
	}
	s.mu.Unlock()
	if found == nil {
		notFound(w, docInstallation)
		return
	}
	now := timestamp(time.Now())
	owner := chi.URLParam(r, "owner")
	writeJSON(w, http.StatusOK, map[string]any{
		"id":                   found.id,
		"account":              s.userJSON(owner),
		"repository_selection": "selected",
		"access_tokens_url":    fmt.Sprintf("%sapp/installations/%d/access_tokens", s.apiBase, found.id),
		"repositories_url":     s.apiBase + "installation/repositories",
		"html_url":             fmt.Sprintf("%ssettings/installations/%d", s.htmlBase, found.id),
		"app_id":               s.AppID,
		"app_slug":             s.AppSlug,
		"target_id":            s.userID(owner),
		"target_type":          "User",
		"permissions":          s.permissions(),
		"events":               []any{"issues", "issue_comment", "pull_request"},
		"created_at":           now,
		"updated_at":           now,
		"single_file_name":     nil,
		"suspended_by":         nil,
		"suspended_at":         nil,
	})
}
