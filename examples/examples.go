// Package examples embeds the demo's example repository, its issue and the
// scripted attempts that stand in for a coding agent.
package examples

import "embed"

// FS holds median/ (a small Python project with the seed's median bug, its
// unittest tests and a hidden test under .bestofn/hidden), median-issue.md
// (the issue: first line the title, the rest the body) and agents/ (five
// scripted attempts and run.sh, which picks attempt-$BESTOFN_ATTEMPT.sh) and
// webhooks/ (real payloads from shared/fixtures, unchanged: issues.labeled,
// issue_comment.created on an issue and on a pull request,
// pull_request.closed, installation.deleted; the demo and the tests point
// their repository fields at the GitHub double).
//
//go:embed all:median median-issue.md agents webhooks
var FS embed.FS
