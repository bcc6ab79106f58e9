package explore

import (
	"bytes"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Test runners whose own files decide what "the tests" are (rule 5 of
// honest grading: the test command's entry points are protected).
var (
	makeFiles    = []string{"Makefile", "makefile", "GNUmakefile"}
	justFiles    = []string{"justfile", "Justfile", ".justfile"}
	nodeRunners  = map[string]bool{"npm": true, "yarn": true, "pnpm": true, "bun": true}
	packageJSON  = "package.json"
	nodeTestKeys = []string{"jest", "mocha", "ava", "c8", "nyc", "vitest"}
	// nodeRunnerConfig changes how npm, yarn, pnpm or bun run scripts
	// (script-shell, node-options, hooks).
	nodeRunnerConfig = []string{".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", "bunfig.toml"}
)

// commandWords splits a shell command line into words at blanks and at the
// operators ; & | ( ), dropping quotes. It is for recognising runners and
// file names, not for running anything.
func commandWords(cmd string) []string {
	f := strings.FieldsFunc(cmd, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == ';' || r == '&' || r == '|' || r == '(' || r == ')'
	})
	for i, w := range f {
		f[i] = strings.Trim(w, `"'`)
	}
	return f
}

// watchedFiles are the files whose content before and after a patch
// entryPointChanges needs: package.json when a Node runner runs the tests.
func watchedFiles(test string) []string {
	for _, w := range commandWords(test) {
		if nodeRunners[w] {
			return []string{packageJSON}
		}
	}
	return nil
}

// entryPointChanges returns the paths of the test command's entry points that
// the patch changes: the Makefile or justfile when the command runs make or
// just; in package.json, the scripts the command runs (with their pre and
// post scripts) and the test runners' configuration keys, when it runs npm,
// yarn, pnpm or bun (adding a dependency is not a change of entry point);
// the package managers' own configuration (.npmrc and the like), which can
// swap the shell scripts run in; and any file of the base tree the command
// names (./run-tests.sh).
func entryPointChanges(test, baseDir string, p Patch) []string {
	return entryPointChangesDepth(test, baseDir, p, 2)
}

// entryPointChangesDepth follows the files the test command names into the
// files they name in turn (a Makefile's recipe runs scripts/test.sh), depth
// levels deep.
func entryPointChangesDepth(test, baseDir string, p Patch, depth int) []string {
	changed := map[string]bool{}
	for _, c := range p.Changes {
		changed[c.Path], changed[c.OldPath] = true, true
	}
	var out []string
	add := func(pth string) {
		for _, o := range out {
			if o == pth {
				return
			}
		}
		out = append(out, pth)
	}
	words := commandWords(test)
	for i, w := range words {
		switch {
		case w == "make" || w == "gmake":
			for _, f := range makeFiles {
				if changed[f] {
					add(f)
				}
			}
		case w == "just":
			for _, f := range justFiles {
				if changed[f] {
					add(f)
				}
			}
		case nodeRunners[w]:
			if v, ok := p.Files[packageJSON]; ok && scriptsChanged(v, nodeScript(words[i+1:])) {
				add(packageJSON)
			}
			for _, f := range nodeRunnerConfig {
				if changed[f] {
					add(f)
				}
			}
		}
		rel := path.Clean(strings.TrimPrefix(w, "./"))
		if rel == "." || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, "..") || strings.HasPrefix(w, "-") {
			continue
		}
		fi, err := os.Lstat(filepath.Join(baseDir, filepath.FromSlash(rel)))
		if err != nil || fi.IsDir() {
			continue
		}
		if changed[rel] {
			add(rel)
		}
	}
	if depth > 1 {
		// The runner's own file names more files: a Makefile's recipes or
		// package.json's scripts run scripts/test.sh. (A script the command
		// names directly is not followed: it names the code under test.)
		for _, f := range entryFiles(words, baseDir) {
			data, err := os.ReadFile(filepath.Join(baseDir, filepath.FromSlash(f)))
			if err != nil || len(data) > 1<<20 {
				continue
			}
			for _, pth := range entryPointChangesDepth(string(data), baseDir, p, depth-1) {
				add(pth)
			}
		}
	}
	return out
}

// entryFiles are the runner files of the base tree through which the test
// command runs: the Makefile, justfile or package.json.
func entryFiles(words []string, baseDir string) []string {
	var files []string
	for _, w := range words {
		switch {
		case w == "make" || w == "gmake":
			files = append(files, makeFiles...)
		case w == "just":
			files = append(files, justFiles...)
		case nodeRunners[w]:
			files = append(files, packageJSON)
		}
	}
	var out []string
	for _, f := range files {
		if fi, err := os.Lstat(filepath.Join(baseDir, filepath.FromSlash(f))); err == nil && fi.Mode().IsRegular() {
			out = append(out, f)
		}
	}
	return out
}

// nodeScript is the package.json script a runner's arguments run: "test"
// for `npm test` / `yarn test`, X for `npm run X`, `yarn X`, `pnpm run X`.
func nodeScript(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case strings.HasPrefix(a, "-"):
		case a == "run" || a == "run-script":
			if i+1 < len(args) {
				return args[i+1]
			}
		case a == "t" || a == "tst":
			return "test"
		default:
			return a
		}
	}
	return "test"
}

// scriptsChanged reports whether the script, its pre and post scripts, or a
// test runner's configuration differ between the two package.json versions.
// An unreadable version counts as changed.
func scriptsChanged(v FileVersions, script string) bool {
	read := func(b []byte) (map[string]json.RawMessage, map[string]json.RawMessage, bool) {
		if b == nil {
			return nil, nil, true
		}
		var all map[string]json.RawMessage
		if err := json.Unmarshal(b, &all); err != nil {
			return nil, nil, false
		}
		var scripts map[string]json.RawMessage
		if raw, ok := all["scripts"]; ok {
			if err := json.Unmarshal(raw, &scripts); err != nil {
				return nil, nil, false
			}
		}
		return scripts, all, true
	}
	bs, ball, ok1 := read(v.Before)
	as, aall, ok2 := read(v.After)
	if !ok1 || !ok2 {
		return true
	}
	same := func(a, b json.RawMessage) bool { return bytes.Equal(compactJSON(a), compactJSON(b)) }
	for _, k := range []string{script, "pre" + script, "post" + script} {
		if !same(bs[k], as[k]) {
			return true
		}
	}
	for _, k := range nodeTestKeys {
		if !same(ball[k], aall[k]) {
			return true
		}
	}
	return false
}

func compactJSON(b json.RawMessage) []byte {
	if b == nil {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}
