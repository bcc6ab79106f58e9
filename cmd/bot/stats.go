package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/bestofn/bestofn/store"
)

// choiceStats is how one choice (a hint, an agent, a budget) fared.
type choiceStats struct {
	ran, passed, won int
	costMicros       int64
}

// statsReport is what `bot stats` prints, computed from the store.
type statsReport struct {
	byAxis map[string]map[string]*choiceStats // axis kind ("hint", "axis") → choice → stats
	runs   int
	merged int
	total  int64 // microdollars over every attempt
}

// computeStats aggregates attempt records: per hint, per agent, per budget
// and per attempt label (the axis), how often the choice ran, passed and won and what
// it cost; and the cost per solved issue, total cost over runs whose pull
// request was merged.
func computeStats(recs []store.AttemptRecord) statsReport {
	r := statsReport{byAxis: map[string]map[string]*choiceStats{"hint": {}, "agent": {}, "budget": {}, "axis": {}}}
	runs := map[int64]string{}
	for _, a := range recs {
		runs[a.RunID] = a.PROutcome
		var d struct {
			Axis   string `json:"axis"`
			Agent  string `json:"agent"`
			Budget string `json:"budget"`
		}
		_ = json.Unmarshal([]byte(a.Detail), &d)
		hint := a.Hint
		if hint == "" {
			hint = "(no hint)"
		}
		for kind, choice := range map[string]string{"hint": hint, "agent": d.Agent, "budget": d.Budget, "axis": d.Axis} {
			if choice == "" {
				continue
			}
			c := r.byAxis[kind][choice]
			if c == nil {
				c = &choiceStats{}
				r.byAxis[kind][choice] = c
			}
			c.ran++
			if a.OutcomeKind == "pass" {
				c.passed++
			}
			if a.Won {
				c.won++
			}
			c.costMicros += a.CostMicros
		}
		r.total += a.CostMicros
	}
	r.runs = len(runs)
	for _, outcome := range runs {
		if outcome == "merged" {
			r.merged++
		}
	}
	return r
}

// stats prints, from DATA_DIR's database, which hints and which attempt
// choices win and what a solved issue costs.
func stats(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("stats", flag.ContinueOnError)
	fl.SetOutput(stderr)
	if err := fl.Parse(args); err != nil {
		return err
	}
	dir := getenv("DATA_DIR")
	if dir == "" {
		return fmt.Errorf("DATA_DIR is not set (the database lives there)")
	}
	path := filepath.Join(dir, "bestofn.db")
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no database at %s: %w", path, err)
	}
	db, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	defer db.Close()
	recs, err := db.AttemptRecords(ctx)
	if err != nil {
		return err
	}
	r := computeStats(recs)
	fmt.Fprintf(stdout, "%d runs, %d attempts, %d merged pull requests, total cost $%.4f\n", r.runs, len(recs), r.merged, float64(r.total)/1e6)
	if r.merged > 0 {
		fmt.Fprintf(stdout, "cost per solved issue: $%.4f (total cost / runs whose pull request was merged)\n", float64(r.total)/1e6/float64(r.merged))
	} else {
		fmt.Fprintf(stdout, "cost per solved issue: n/a (no merged pull request yet)\n")
	}
	for _, kind := range []string{"hint", "agent", "budget", "axis"} {
		m := r.byAxis[kind]
		if len(m) == 0 {
			continue
		}
		fmt.Fprintf(stdout, "\nby %s:\n", kind)
		w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "choice\tran\tpassed\twon\tcost")
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if m[keys[i]].won != m[keys[j]].won {
				return m[keys[i]].won > m[keys[j]].won
			}
			return keys[i] < keys[j]
		})
		for _, k := range keys {
			c := m[k]
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t$%.4f\n", k, c.ran, c.passed, c.won, float64(c.costMicros)/1e6)
		}
		w.Flush()
	}
	return nil
}
