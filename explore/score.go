package explore

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/bestofn/bestofn/sandbox"
)

// Measure is a score command's result over several runs.
type Measure struct {
	// Runs are the numbers each run printed; Median and Spread (max − min)
	// sum them up.
	Runs           []float64
	Median, Spread float64
	// Err says why there is no measurement (the command failed, printed no
	// number); empty when it worked.
	Err string
}

// String shows a measure as "0.41 ±0.02", or its error.
func (m *Measure) String() string {
	if m.Err != "" {
		return "no score (" + m.Err + ")"
	}
	return fmt.Sprintf("%.4g ±%.2g", m.Median, m.Spread)
}

// Versus describes the change from base to m, e.g. "1.84 → 0.41 (4.5×
// better)"; better says whether lower or higher is better.
func (m *Measure) Versus(base *Measure, better string) string {
	if m == nil || base == nil || m.Err != "" || base.Err != "" {
		return ""
	}
	s := fmt.Sprintf("%.4g → %.4g", base.Median, m.Median)
	ratio := base.Median / m.Median
	if better == "higher" {
		ratio = m.Median / base.Median
	}
	if ratio > 0 && !math.IsInf(ratio, 0) && !math.IsNaN(ratio) {
		word := "better"
		if ratio < 1 {
			word, ratio = "worse", 1/ratio
		}
		s += fmt.Sprintf(" (%.2g× %s)", ratio, word)
	}
	return s
}

// measure runs the score command n times in sb without network and reads
// the number on the last line each run prints.
func measure(ctx context.Context, sb sandbox.Sandbox, cfg Config) (*Measure, error) {
	m := &Measure{}
	for i := 0; i < cfg.ScoreRuns; i++ {
		res, err := sb.Exec(ctx, sandbox.ExecRequest{Shell: cfg.Score.Command, Timeout: cfg.TestTimeout})
		if err != nil {
			return nil, err
		}
		if res.TimedOut || res.ExitCode != 0 {
			m.Err = fmt.Sprintf("the score command exited %d", res.ExitCode)
			if res.TimedOut {
				m.Err = "the score command timed out"
			}
			return m, nil
		}
		lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
		v, err := strconv.ParseFloat(strings.TrimSpace(lines[len(lines)-1]), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			m.Err = "the score command's last line is not a number"
			return m, nil
		}
		m.Runs = append(m.Runs, v)
	}
	sorted := append([]float64(nil), m.Runs...)
	sort.Float64s(sorted)
	m.Median = sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		m.Median = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	m.Spread = sorted[len(sorted)-1] - sorted[0]
	return m, nil
}

// measureBase measures the base in a fresh fork.
func (r *runState) measureBase(ctx context.Context, base sandbox.Sandbox) (*Measure, error) {
	g, stop, err := r.gradingCopy(ctx, base, nil)
	if err != nil {
		return nil, err
	}
	defer stop()
	return measure(ctx, g, r.task.Config)
}
