package handlers

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/bestofn/bestofn/explore"
	"github.com/bestofn/bestofn/sandbox"
)

// MaxCommentBytes is GitHub's limit on a comment body (65,536 characters);
// the bot keeps every comment below it with some room to spare.
const MaxCommentBytes = 60000

// marker is the hidden tag in every comment of a run, so the bot finds its
// own comments again (design doc, "Conventions").
func marker(runID int64, kind string) string {
	if runID == 0 {
		return "<!-- bestofn -->\n"
	}
	if kind != "" {
		return fmt.Sprintf("<!-- bestofn:run=%d %s -->\n", runID, kind)
	}
	return fmt.Sprintf("<!-- bestofn:run=%d -->\n", runID)
}

// footer is the one-line pointer that ends every bot comment.
func footer(runID int64) string {
	run := ""
	if runID != 0 {
		run = fmt.Sprintf(" · run %d", runID)
	}
	return "\n\n<sub>bestofn" + run + " · comment `/bestofn help` for commands</sub>\n"
}

// statusView is what the status comment shows.
type statusView struct {
	Phase    string
	Note     string
	Attempts []explore.AttemptProgress
	// Isolation, when it misses something, is stated on every run.
	Isolation *sandbox.Isolation
	Result    *explore.Result
	Config    explore.Config
	PRNumber  int
	PRURL     string
	// Baseline, once known, is summed up in one line.
	Baseline *explore.Baseline
}

func statusFromProgress(p explore.Progress, cfg explore.Config) statusView {
	v := statusView{Phase: string(p.Phase), Attempts: p.Attempts, Config: cfg, Baseline: p.Baseline}
	iso := p.Isolation
	v.Isolation = &iso
	switch p.Phase {
	case explore.PhasePreparing:
		v.Note = "Preparing the base sandbox."
	case explore.PhaseSetup:
		v.Note = "Running setup in the base sandbox."
	case explore.PhaseBaseline:
		v.Note = "Running the tests on the base, to know which exist and which already fail."
	case explore.PhaseAttempting:
		v.Note = fmt.Sprintf("Running %d attempts, each in its own copy of the base.", len(p.Attempts))
	}
	return v
}

// renderStatus returns the body of a run's status comment.
func renderStatus(runID int64, runURL string, v statusView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### bestofn · %s\n\n", v.Phase)
	switch {
	case v.Phase == "done" && v.PRNumber != 0:
		fmt.Fprintf(&b, "✅ Opened #%d with attempt %d (%s). The scorecard is on the pull request.\n\n", v.PRNumber, v.Result.Winner, v.Result.Decided)
	case v.Phase == "done":
		b.WriteString("❌ No attempt passed, so no pull request was opened. The scorecard is in the next comment.\n\n")
	case v.Note != "":
		b.WriteString(v.Note + "\n\n")
	}
	bl := v.Baseline
	if bl == nil && v.Result != nil {
		bl = v.Result.Baseline
	}
	if line := baselineLine(bl); line != "" {
		b.WriteString(line + "\n\n")
	}
	rows := v.Attempts
	if v.Result != nil {
		rows = nil
		for _, a := range v.Result.Attempts {
			rows = append(rows, explore.AttemptProgress{Number: a.Number, Hint: a.Hint, State: explore.StateDone, Outcome: a.Outcome,
				Elapsed: a.AgentDuration + a.GradeDuration})
		}
	}
	if len(rows) > 0 {
		b.WriteString("| # | hint | state | time |\n|---|---|---|---|\n")
		for _, a := range rows {
			state := string(a.State)
			if a.State == explore.StateDone {
				state = outcomeIcon(a.Outcome) + " " + a.Outcome.Text
			}
			elapsed := "—"
			if a.Elapsed > 0 {
				elapsed = fmtDuration(a.Elapsed)
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", a.Number, cell(hintText(a.Hint), 80), cell(state, 200), elapsed)
		}
		b.WriteString("\n")
	}
	switch {
	case v.Isolation != nil:
		b.WriteString(isolationWarning(*v.Isolation))
	case v.Result != nil:
		b.WriteString(isolationWarning(v.Result.Isolation))
	}
	// The link (which opens full logs, hidden test output included) appears
	// only once the run is over, so no agent of this run can follow it.
	if runURL != "" && (v.Phase == "done" || v.Phase == "failed" || v.Phase == "cancelled") {
		fmt.Fprintf(&b, "[Run page with full logs](%s)\n", runURL)
	}
	return marker(runID, "status") + strings.TrimSpace(b.String()) + footer(runID)
}

// renderScorecard returns the scorecard comment: every attempt side by side
// with its outcome, patch size and times, the winner and the rule that
// picked it, then each attempt's patch and logs in collapsed blocks as far as
// the comment size limit allows (logs cut from the front).
func renderScorecard(runID int64, runURL string, req runRequest, cfg explore.Config, res *explore.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## bestofn scorecard · issue #%d\n\n", req.Issue)
	if res.Winner != 0 {
		fmt.Fprintf(&b, "🏆 **Attempt %d wins**: %s.\n\n", res.Winner, res.Decided)
	} else {
		b.WriteString("❌ **No attempt passed.** Nothing was published.\n\n")
	}
	b.WriteString("| # | hint | outcome | patch | files | agent | grading | cost |\n|---|---|---|---|---|---|---|---|\n")
	var total int64
	estimated := false
	for _, a := range res.Attempts {
		num := fmt.Sprint(a.Number)
		if a.Number == res.Winner {
			num += " 🏆"
		}
		added, deleted := 0, 0
		for _, c := range a.Patch.Changes {
			added += c.Added
			deleted += c.Deleted
		}
		size := "—"
		if !a.Patch.Empty() {
			size = fmt.Sprintf("+%d −%d", added, deleted)
		}
		grading := "—"
		if a.GradeDuration > 0 {
			grading = fmtDuration(a.GradeDuration)
		}
		text := a.Outcome.Text
		if a.Score != nil {
			text += " · score " + a.Score.String()
		}
		if a.LintClean != nil {
			text += map[bool]string{true: " · lint clean", false: " · lint not clean"}[*a.LintClean]
		}
		if a.AddedTests != "" {
			text += " · " + a.AddedTests + " (new tests do not vote)"
		}
		if a.ModelTokens > 0 && a.ModelCostMicros == 0 {
			text += fmt.Sprintf(" · %d model tokens", a.ModelTokens)
		}
		total += a.CostMicros + a.ModelCostMicros
		estimated = estimated || a.CostEstimated
		hint := hintText(a.Hint)
		if a.Axis != "" {
			hint = "**" + a.Axis + "** · " + hint
		}
		fmt.Fprintf(&b, "| %s | %s | %s %s | %s | %d | %s | %s | %s |\n", num, cell(hint, 120), outcomeIcon(a.Outcome),
			cell(text, 400), size, len(a.Patch.Changes), fmtDuration(a.AgentDuration), grading, fmtCost(a.CostMicros+a.ModelCostMicros, a.CostEstimated))
	}
	fmt.Fprintf(&b, "\nBase commit `%s` · test command `%s` · %d attempts in %s on the `%s` sandbox · attempts' sandboxes cost %s.\n\n",
		short(res.BaseCommit), cfg.Test, len(res.Attempts), fmtDuration(res.Duration), res.Backend, fmtCost(total, estimated))
	if estimated {
		b.WriteString("Costs marked ~ are estimates: CPU time and memory × time at Runtime's prices.\n\n")
	}
	b.WriteString(isolationWarning(res.Isolation))
	if line := baselineLine(res.Baseline); line != "" {
		b.WriteString(line + "\n\n")
	}
	if res.BaseScore != nil && cfg.Score != nil {
		fmt.Fprintf(&b, "Score (`%s`, %s is better, median of %d runs): the base scores %s.\n\n", cfg.Score.Command, cfg.Score.Better, cfg.ScoreRuns, res.BaseScore.String())
	}
	b.WriteString("A pass means: the attempt changed no existing test, no test configuration and no protected path; its patch, without any test file it added, was applied to a fresh copy of the base together with the hidden tests; and there every test of the base and every hidden test was reported as run and passed, in time and without network.\n")
	if cfg.HiddenTests != "" {
		b.WriteString("Test output is not shown here: it would reveal the hidden tests.")
		if runURL != "" {
			b.WriteString(" It is on the run page.")
		}
		b.WriteString("\n")
	}
	if runURL != "" {
		fmt.Fprintf(&b, "Full logs: [run page](%s).\n", runURL)
	}
	head := marker(runID, "scorecard") + b.String()
	tail := footer(runID)

	// Collapsed blocks, winner first, as far as the size limit allows.
	order := append([]*explore.Attempt(nil), res.Attempts...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].Number == res.Winner && order[j].Number != res.Winner })
	var blocks []string
	for _, a := range order {
		if !a.Patch.Empty() {
			blocks = append(blocks, detailsLang(fmt.Sprintf("Attempt %d: patch", a.Number), a.Patch.Diff, "diff", 12000))
		}
		if len(a.TestLog) > 0 && cfg.HiddenTests == "" {
			blocks = append(blocks, details(fmt.Sprintf("Attempt %d: test log", a.Number), a.TestLog))
		} else if a.Outcome.Kind == explore.OutcomeAgentFailed || a.Outcome.Kind == explore.OutcomeAgentTimedOut {
			blocks = append(blocks, details(fmt.Sprintf("Attempt %d: agent log", a.Number), a.AgentLog))
		}
	}
	body := head
	for _, blk := range blocks {
		if len(body)+len(blk)+len(tail)+2 > MaxCommentBytes {
			body += "\n_More logs are on the run page; this comment is at GitHub's size limit._\n"
			break
		}
		body += "\n" + blk
	}
	return body + tail
}

// renderPRBody returns the pull request's description.
func renderPRBody(runID int64, req runRequest, cfg explore.Config, res *explore.Result) string {
	w := res.WinningAttempt()
	var b strings.Builder
	fmt.Fprintf(&b, "Fixes #%d\n\n", req.Issue)
	fmt.Fprintf(&b, "bestofn ran %d attempts on this issue; **attempt %d** won (%s).\n\n", len(res.Attempts), w.Number, res.Decided)
	if w.Score != nil && cfg.Score != nil {
		if vs := w.Score.Versus(res.BaseScore, cfg.Score.Better); vs != "" {
			fmt.Fprintf(&b, "Score (`%s`): %s against the base.\n\n", cfg.Score.Command, vs)
		}
	}
	if w.Axis != "" {
		fmt.Fprintf(&b, "Winning attempt: **%s**\n\n", w.Axis)
	}
	if strings.TrimSpace(w.Hint) != "" {
		fmt.Fprintf(&b, "Winning hint: _%s_\n\n", w.Hint)
	} else {
		b.WriteString("Winning hint: none (the attempt had no hint)\n\n")
	}
	fmt.Fprintf(&b, "It passed `%s` in a fresh copy of `%s` with only this patch applied and the hidden tests added. The scorecard with every attempt is in the first comment.\n",
		cfg.Test, short(res.BaseCommit))
	return marker(runID, "pr") + b.String() + footer(runID)
}

// baselineLine sums up the baseline: how many tests pass at the base, which
// already fail there (named: they will not count against any attempt), and
// how many hidden tests there are (expected to fail at the base).
func baselineLine(b *explore.Baseline) string {
	if b == nil {
		return ""
	}
	if b.Format == explore.ReportExitCode {
		line := fmt.Sprintf("Baseline: the test command exits %d on the base", b.ExitCode)
		return line + " (tests are not named: the grade reads the exit code only)."
	}
	line := fmt.Sprintf("Baseline: %d tests pass on the base", len(b.Passing))
	if len(b.Failing) > 0 {
		line += fmt.Sprintf("; %d already fail there (an attempt must make them pass too): %s", len(b.Failing), cell(names(b.Failing), 300))
	}
	if len(b.Hidden) > 0 {
		line += fmt.Sprintf("; %d hidden tests, %d of which already pass on the base", len(b.Hidden), len(b.HiddenPassing))
	}
	return line + "."
}

func names(ids []string) string {
	const show = 5
	if len(ids) <= show {
		return "`" + strings.Join(ids, "`, `") + "`"
	}
	return "`" + strings.Join(ids[:show], "`, `") + fmt.Sprintf("` and %d more", len(ids)-show)
}

// isolationWarning is a warning block naming what the sandbox could not
// enforce on this run, or "" when it enforced everything.
func isolationWarning(iso sandbox.Isolation) string {
	if len(iso.Notes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("> [!WARNING]\n> The sandbox could not enforce everything on this run:\n")
	for _, n := range iso.Notes {
		b.WriteString("> - " + n + "\n")
	}
	return b.String() + "\n"
}

func outcomeIcon(o explore.Outcome) string {
	switch o.Kind {
	case explore.OutcomePass:
		return "✅"
	case explore.OutcomeNoChange, explore.OutcomeCancelled, explore.OutcomeSkippedBudget:
		return "⚪"
	case explore.OutcomeSandboxError, explore.OutcomeAgentFailed, explore.OutcomeAgentTimedOut, explore.OutcomeTestTimedOut:
		return "⚠️"
	}
	return "❌"
}

func hintText(h string) string {
	if strings.TrimSpace(h) == "" {
		return "_(no hint)_"
	}
	return h
}

// cell makes text safe inside a markdown table cell and at most n runes
// long: no HTML, no links, images or mentions, whatever an agent named its
// files.
func cell(s string, n int) string {
	s = strings.NewReplacer("|", `\|`, "\r", " ", "\n", " ", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`,
		"@", "@\u200b", "`", "'", "!", `\!`).Replace(s)
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// details wraps a log in a collapsed block, keeping its last 8 KiB.
func details(summary string, log []byte) string {
	return detailsLang(summary, log, "", 8<<10)
}

// detailsLang wraps text in a collapsed code block of at most limit bytes;
// longer text is cut from the front, and the cut is said.
func detailsLang(summary string, text []byte, lang string, limit int) string {
	s := string(text)
	cut := ""
	if len(s) > limit {
		s = s[len(s)-limit:]
		cut = fmt.Sprintf("… (%d bytes cut from the front)\n", len(text)-limit)
	}
	fence := "```"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fmt.Sprintf("<details><summary>%s</summary>\n\n%s%s%s\n%s\n%s\n</details>\n", summary, cut, fence, lang, strings.TrimRight(s, "\n"), fence)
}

// fmtCost shows microdollars as dollars; an estimate starts with "~".
func fmtCost(micros int64, estimated bool) string {
	s := fmt.Sprintf("$%.4f", float64(micros)/1e6)
	if micros < 10_000 {
		s = fmt.Sprintf("$%.6f", float64(micros)/1e6)
	}
	if estimated {
		return "~" + s
	}
	return s
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}
