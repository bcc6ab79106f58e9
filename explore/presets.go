package explore

import (
	"fmt"
	"strings"
)

// AgentPresets are the agent names a configuration may give instead of a
// command: each runs its coding agent headless, non-interactive, with the
// prompt from BESTOFN_PROMPT_FILE, editing and running commands in
// /workspace. A missing program fails the attempt with "<program>: not
// found; add it to setup" (exit 127), never the run. An attempt's turn limit
// (BESTOFN_MAX_TURNS) goes to the agents that take one (claude-code).
var AgentPresets = map[string]string{
	"claude-code": preset("claude", `claude -p "$(cat "$BESTOFN_PROMPT_FILE")" --permission-mode acceptEdits --allowedTools "Read,Edit,Write,Glob,Grep,Bash" --output-format json ${BESTOFN_MAX_TURNS:+--max-turns "$BESTOFN_MAX_TURNS"}`),
	"codex":       preset("codex", `codex exec --full-auto --skip-git-repo-check "$(cat "$BESTOFN_PROMPT_FILE")"`),
	"aider":       preset("aider", `aider --yes-always --no-auto-commits --no-gitignore --message-file "$BESTOFN_PROMPT_FILE"`),
	"gemini":      preset("gemini", `gemini --yolo -p "$(cat "$BESTOFN_PROMPT_FILE")"`),
}

func preset(program, command string) string {
	return fmt.Sprintf("command -v %s >/dev/null 2>&1 || { echo '%s: not found; add it to setup' >&2; exit 127; }\n%s", program, program, command)
}

// ExpandAgent returns the command for agent: a preset's command for a preset
// name, else agent itself.
func ExpandAgent(agent string) string {
	if cmd, ok := AgentPresets[strings.TrimSpace(agent)]; ok {
		return cmd
	}
	return agent
}
