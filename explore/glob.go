package explore

import (
	"fmt"
	"path"
	"strings"
)

// checkGlob reports whether g is a valid glob for MatchGlob.
func checkGlob(g string) error {
	if strings.TrimSpace(g) == "" {
		return fmt.Errorf("empty glob")
	}
	for _, seg := range strings.Split(g, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("bad glob %q: %v", g, err)
		}
	}
	return nil
}

// MatchGlob reports whether the slash-separated repository path p matches
// glob g. Segments match as in path.Match; a "**" segment matches zero or
// more whole segments, so "**/conftest.py" matches "conftest.py" and
// "a/b/conftest.py", and "tests/**" matches everything under tests/.
// A glob without a slash matches at the root only ("pytest.ini").
func MatchGlob(g, p string) bool {
	return matchSegs(strings.Split(g, "/"), strings.Split(p, "/"))
}

func matchSegs(g, p []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			if len(g) == 1 {
				return len(p) > 0
			}
			for i := 0; i <= len(p); i++ {
				if matchSegs(g[1:], p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 {
			return false
		}
		if ok, _ := path.Match(g[0], p[0]); !ok {
			return false
		}
		g, p = g[1:], p[1:]
	}
	return len(p) == 0
}

// matchAny returns the first glob of globs that p matches, or "".
func matchAny(globs []string, p string) string {
	for _, g := range globs {
		if MatchGlob(g, p) {
			return g
		}
	}
	return ""
}
