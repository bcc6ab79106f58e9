package handlers

import (
	"strings"

	"testing"
	"unicode/utf8"

	"github.com/bestofn/bestofn/explore"
)

func TestParseCommand(t *testing.T) {
	tests := map[string]struct {
		body  string
		want  *Command
		reply string // a substring of the reply; "" with want nil means ignore
	}{
		"Plain":                {body: "/bestofn", want: &Command{Verb: VerbRun}},
		"WithAttempts":         {body: "/bestofn 3", want: &Command{Verb: VerbRun, Attempts: 3}},
		"LeadingBlanksCRLF":    {body: "thanks!\r\n   /bestofn 10\r\n", want: &Command{Verb: VerbRun, Attempts: 10}},
		"AfterHTMLComment":     {body: "<!-- note -->\n/bestofn status", want: &Command{Verb: VerbStatus}},
		"TooMany":              {body: "/bestofn 51", reply: "from 1 to 50"},
		"Zero":                 {body: "/bestofn 0", reply: "from 1 to 50"},
		"Negative":             {body: "/bestofn -2", reply: "from 1 to 50"},
		"HugeNumber":           {body: "/bestofn 99999999999999999999", reply: "from 1 to 50"},
		"NumberAndMore":        {body: "/bestofn 3 please", reply: "one number"},
		"Retry":                {body: "/bestofn retry", want: &Command{Verb: VerbRetry}},
		"RetryUpper":           {body: "/bestofn RETRY", want: &Command{Verb: VerbRetry}},
		"RetryArgs":            {body: "/bestofn retry now", reply: "takes no arguments"},
		"Cancel":               {body: "/bestofn cancel", want: &Command{Verb: VerbCancel}},
		"Status":               {body: "/bestofn status", want: &Command{Verb: VerbStatus}},
		"Help":                 {body: "/bestofn help", want: &Command{Verb: VerbHelp}},
		"Pick":                 {body: "/bestofn pick 2", want: &Command{Verb: VerbPick, Pick: 2}},
		"PickNothing":          {body: "/bestofn pick", reply: "number of one attempt"},
		"PickWord":             {body: "/bestofn pick best", reply: "not `best`"},
		"Revise":               {body: "/bestofn revise use a heap\nand keep the API", want: &Command{Verb: VerbRevise, Text: "use a heap\nand keep the API"}},
		"ReviseNextLineOnly":   {body: "/bestofn revise\nrename x to count", want: &Command{Verb: VerbRevise, Text: "rename x to count"}},
		"ReviseEmpty":          {body: "/bestofn revise   ", reply: "needs to know what to change"},
		"Unknown":              {body: "/bestofn deploy", reply: "Unknown command `deploy`"},
		"TwoCommands":          {body: "/bestofn\n/bestofn cancel", reply: "One command per comment"},
		"NotAtLineStart":       {body: "please run /bestofn here"},
		"OtherWord":            {body: "/bestofnow"},
		"Quoted":               {body: "> /bestofn\nthat is how you start it"},
		"InCodeFence":          {body: "run it like this:\n```\n/bestofn 3\n```\n"},
		"AfterCodeFence":       {body: "```\nx\n```\n/bestofn status", want: &Command{Verb: VerbStatus}},
		"NoCommand":            {body: "You are totally right! I'll get this fixed right away."},
		"IndentedCode":         {body: "like this:\n\n    /bestofn 3\n"},
		"HTMLComment":          {body: "<!--\n/bestofn\n-->\nthanks"},
		"InlineHTMLComment":    {body: "<!-- /bestofn -->"},
		"PreBlock":             {body: "<pre>\n/bestofn\n</pre>"},
		"FenceNotClosedByInfo": {body: "```\n```python\n/bestofn\n```\n"},
		"Empty":                {body: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ParseCommand(tc.body)
			switch {
			case tc.want != nil:
				if got.Command == nil || *got.Command != *tc.want {
					t.Errorf("got %+v, want command %+v", got, tc.want)
				}
			case tc.reply != "":
				if got.Command != nil || !strings.Contains(got.Reply, tc.reply) || !strings.Contains(got.Reply, "/bestofn help") {
					t.Errorf("got %+v, want a reply with %q and the usage", got, tc.reply)
				}
			default:
				if !got.Ignore || got.Command != nil || got.Reply != "" {
					t.Errorf("got %+v, want ignore", got)
				}
			}
		})
	}
}

// FuzzParseCommand: any body gives exactly one of command, reply or ignore,
// never a panic; replies are valid UTF-8 when the body is.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"/bestofn", "/bestofn 3", "/bestofn revise x\ny", "```\n/bestofn\n```", "/bestofn pick 2", "/bestofn\t\t", "/bestofn revise"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := ParseCommand(body)
		n := 0
		if r.Command != nil {
			n++
		}
		if r.Reply != "" {
			n++
		}
		if r.Ignore {
			n++
		}
		if n != 1 {
			t.Fatalf("%q gave %+v", body, r)
		}
		if utf8.ValidString(body) && !utf8.ValidString(r.Reply) {
			t.Fatalf("reply is not UTF-8 for %q", body)
		}
		if c := r.Command; c != nil && c.Verb == VerbRun && (c.Attempts < 0 || c.Attempts > explore.MaxAttempts) {
			t.Fatalf("attempts %d", c.Attempts)
		}
	})
}
