// Command bot is bestofn: a GitHub App that turns a labelled issue into a
// pull request by running several coding-agent attempts side by side and
// keeping the smallest one that honestly passes the tests.
//
//	bot serve    run the GitHub App (webhook server and job workers)
//	bot demo     run the whole job on this machine against an in-process GitHub
//	bot doctor   say what isolation this machine gives the sandboxes
//	bot stats    which hints and attempt choices win, what a solved issue costs
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `bestofn: best-of-N coding agents for GitHub issues

Usage:
  bot serve     run the GitHub App (configured by environment variables, see README.md)
  bot demo      run the main job end to end on this machine, with nothing configured
  bot doctor    report what the sandbox backend gives on this machine (SANDBOX=runtime: the Runtime account)
  bot stats     which hints and choices win, and what a solved issue costs (reads DATA_DIR)
  bot help      show this text
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run dispatches a subcommand and returns the process exit code: 0 on
// success, 1 when the command failed, 2 for a usage error.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], getenv, stderr)
	case "demo":
		err = demo(ctx, args[1:], stdout, stderr)
	case "doctor":
		err = doctor(ctx, args[1:], getenv, stdout)
	case "stats":
		err = stats(ctx, args[1:], getenv, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "bestofn %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
