package explore

import (
	"fmt"
	"strings"
)

// Prompt returns the text written to the prompt file of an attempt: the
// issue's title, body and discussion, the rules it will be graded by, and
// its hint. It is the only way issue text reaches an agent (never a command
// line or a shell string).
func Prompt(t Task, hint string) string {
	cfg := t.Config
	var b strings.Builder
	fmt.Fprintf(&b, "# Issue #%d: %s\n\n", t.Issue.Number, t.Issue.Title)
	if body := strings.TrimSpace(t.Issue.Body); body != "" {
		b.WriteString(body + "\n\n")
	}
	if len(t.Issue.Comments) > 0 {
		b.WriteString("## Discussion\n\n")
		for _, c := range t.Issue.Comments {
			fmt.Fprintf(&b, "@%s wrote:\n\n%s\n\n", c.Author, strings.TrimSpace(c.Body))
		}
	}
	if r := strings.TrimSpace(t.Revision); r != "" {
		fmt.Fprintf(&b, "## Your task\n\nThe repository %s is checked out in /workspace (your current folder) with an earlier fix for the issue above already applied. "+
			"A reviewer asked for these changes to it:\n\n%s\n\nMake them. Work only inside /workspace.\n\n", t.Repo, r)
	} else {
		fmt.Fprintf(&b, "## Your task\n\nThe repository %s is checked out in /workspace (your current folder). "+
			"Change the code so that the issue above is resolved. Work only inside /workspace.\n\n", t.Repo)
	}
	b.WriteString("## How your work is graded\n\n")
	b.WriteString("- When you finish, every change under /workspace is taken as one patch against the starting commit (`git add -A`); files git ignores are left out.\n")
	fmt.Fprintf(&b, "- The patch is applied to a fresh copy of the repository, more tests that you cannot see are added, and `%s` runs there without network: every existing test and every hidden test must be reported as run and passed.\n", cfg.Test)
	fmt.Fprintf(&b, "- Modifying, deleting or renaming an existing test file (%s) fails the attempt. Adding new tests is welcome; they are run and reported, but they do not count towards the grade.\n", strings.Join(cfg.Tests, ", "))
	fmt.Fprintf(&b, "- Changing a protected path (%s) fails the attempt.\n", strings.Join(cfg.Protected, ", "))
	b.WriteString("- Nothing outside the patch counts: installed packages, environment variables, running processes and ignored files do not reach the grade.\n")
	b.WriteString("- Among passing attempts the smallest patch wins.\n\n")
	if strings.TrimSpace(hint) != "" {
		fmt.Fprintf(&b, "## Approach\n\n%s\n", hint)
	}
	return b.String()
}
