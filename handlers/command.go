package handlers

import (
	"fmt"
	"strconv"

	"strings"

	"github.com/bestofn/bestofn/explore"
)

// CommandPrefix starts every command a comment can give the bot.
const CommandPrefix = "/bestofn"

// Verbs of the commands in comments (design doc, "Commands in comments").
const (
	VerbRun    = "run"    // `/bestofn` or `/bestofn <k>` on an issue
	VerbRetry  = "retry"  // on the bot's pull request: a fresh best-of-N
	VerbRevise = "revise" // on the bot's pull request: best-of-N from the PR branch
	VerbPick   = "pick"   // on the bot's pull request: attempt k's patch on the branch
	VerbCancel = "cancel"
	VerbStatus = "status"
	VerbHelp   = "help"
)

// Usage is the bot's answer to `/bestofn help` and to a command it cannot read.
const Usage = "**bestofn commands**\n\n" +
	"On an issue:\n" +
	"- `/bestofn`: run best-of-N on this issue (the same as adding the label)\n" +
	"- `/bestofn <k>`: run it with k attempts (1 to the bot's MAX_ATTEMPTS, 10 unless its operator raised it)\n\n" +
	"On a pull request bestofn opened:\n" +
	"- `/bestofn retry`: a fresh best-of-N for the issue; the result replaces the branch content\n" +
	"- `/bestofn revise <what to change>`: a best-of-N that starts from this branch, with your words and the review comments in the prompt\n" +
	"- `/bestofn pick <k>`: put attempt k's patch (of the latest run) on the branch, if it passed\n\n" +
	"Anywhere:\n" +
	"- `/bestofn cancel`: stop the running run\n" +
	"- `/bestofn status`: say what the bot is doing here\n" +
	"- `/bestofn help`: this text\n\n" +
	"A command starts a line; one command per comment. Only people with write access can start, revise, pick or cancel."

// Command is one parsed command.
type Command struct {
	Verb string
	// Attempts is k of `/bestofn <k>`; 0 means the configured number.
	Attempts int
	// Pick is k of `/bestofn pick <k>`.
	Pick int
	// Text is what `/bestofn revise` asks for: the rest of its line and
	// every line after it.
	Text string
}

// ParseResult is what a comment means for the bot: a Command, a Reply to
// post (a command it cannot read), or Ignore (no command at all).
type ParseResult struct {
	Command *Command
	Reply   string
	Ignore  bool
}

// ParseCommand reads a comment body. A command is a line that starts with
// CommandPrefix as a whole word (up to three leading blanks; quoted lines,
// fenced or indented code, HTML comments and <pre> blocks do not count). A comment with no command is ignored;
// two commands, an unknown verb or bad arguments get a reply with the usage.
// It never panics, whatever the input.
func ParseCommand(body string) ParseResult {
	lines := strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n")
	var found []int
	fence := ""
	hidden := "" // the closing tag of an HTML comment or <pre> block
	for i, line := range lines {
		t := strings.TrimLeft(line, " \t")
		if hidden != "" {
			if strings.Contains(line, hidden) {
				hidden = ""
			}
			continue
		}
		if f := fenceOf(t); f != "" {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(f, fence[:1]) && len(f) >= len(fence) && strings.TrimSpace(t[len(f):]) == "":
				// A closing fence has no info string.
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		for open, closing := range map[string]string{"<!--": "-->", "<pre": "</pre>"} {
			if strings.HasPrefix(t, open) && !strings.Contains(t[len(open):], closing) {
				hidden = closing
			}
		}
		if hidden != "" || strings.HasPrefix(t, "<!--") || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
			continue // GitHub shows these as comments or code, not as text
		}
		if rest, ok := strings.CutPrefix(t, CommandPrefix); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			found = append(found, i)
		}
	}
	switch len(found) {
	case 0:
		return ParseResult{Ignore: true}
	case 1:
	default:
		return ParseResult{Reply: "One command per comment, please: this one has " + strconv.Itoa(len(found)) + ".\n\n" + Usage}
	}
	i := found[0]
	args := strings.Fields(strings.TrimPrefix(strings.TrimLeft(lines[i], " \t"), CommandPrefix))
	bad := func(msg string) ParseResult { return ParseResult{Reply: msg + "\n\n" + Usage} }
	if len(args) == 0 {
		return ParseResult{Command: &Command{Verb: VerbRun}}
	}
	verb := strings.ToLower(args[0])
	if n, err := strconv.Atoi(verb); err == nil || isNumber(verb) {
		if err != nil || n < 1 || n > explore.MaxAttempts || len(args) > 1 {
			return bad(fmt.Sprintf("`/bestofn <k>` takes one number of attempts from 1 to %d (this bot's MAX_ATTEMPTS may allow fewer).", explore.MaxAttempts))
		}
		return ParseResult{Command: &Command{Verb: VerbRun, Attempts: n}}
	}
	switch verb {
	case VerbRetry, VerbCancel, VerbStatus, VerbHelp:
		if len(args) > 1 {
			return bad("`/bestofn " + verb + "` takes no arguments.")
		}
		return ParseResult{Command: &Command{Verb: verb}}
	case VerbPick:
		if len(args) != 2 {
			return bad("`/bestofn pick <k>` takes the number of one attempt.")
		}
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 || n > 50 {
			return bad("`/bestofn pick <k>` takes the number of one attempt, not `" + truncateRunes(args[1], 20) + "`.")
		}
		return ParseResult{Command: &Command{Verb: VerbPick, Pick: n}}
	case VerbRevise:
		first := strings.TrimSpace(strings.TrimPrefix(strings.TrimLeft(lines[i], " \t"), CommandPrefix))
		first = strings.TrimSpace(first[len(args[0]):])
		text := strings.TrimSpace(strings.Join(append([]string{first}, lines[i+1:]...), "\n"))
		if text == "" {
			return bad("`/bestofn revise` needs to know what to change: `/bestofn revise <what to change>`.")
		}
		return ParseResult{Command: &Command{Verb: VerbRevise, Text: text}}
	}
	return bad("Unknown command `" + truncateRunes(args[0], 30) + "`.")
}

// fenceOf returns the fence a line opens or closes (``` or ~~~, possibly
// longer), or "".
func fenceOf(t string) string {
	for _, c := range []string{"```", "~~~"} {
		if strings.HasPrefix(t, c) {
			n := 0
			for n < len(t) && t[n] == c[0] {
				n++
			}
			return t[:n]
		}
	}
	return ""
}

func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
