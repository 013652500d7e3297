package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mdLink is an inline link or image, [text](target "title"), or a
// reference definition, [label]: target.
var (
	mdLink    = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	mdRefDef  = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	mdHeading = regexp.MustCompile(`(?m)^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	mdCode    = regexp.MustCompile("`[^`\n]*`")
	// mdLinkText is a link in a heading, whose anchor has its text alone.
	mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// mdStripCode blanks fenced code blocks and code spans, whose brackets are
// not links.
func mdStripCode(text string) string {
	return mdCode.ReplaceAllString(mdStripFences(text), "")
}

// mdAnchors are the anchors GitHub gives a Markdown file's headings:
// lower case, punctuation but '-' and '_' dropped, spaces as '-', and
// -1, -2, ... after a repeated one.
func mdAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, m := range mdHeading.FindAllStringSubmatch(mdStripFences(text), -1) {
		h := mdLinkText.ReplaceAllString(m[1], "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// mdStripFences blanks fenced code blocks only (a '#' line in a shell block
// is no heading) and keeps code spans, which headings may hold.
func mdStripFences(text string) string {
	var out []string
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			line = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			line = ""
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// TestDocsLinks checks every relative link of README.md and docs/**/*.md:
// its target is a file or folder inside the repository (no link out of a
// clone, such as ../shared/...), and an #anchor names a heading of the
// Markdown file it points to. Links to other sites are not fetched.
func TestDocsLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(root, "README.md")}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchorsOf := map[string]map[string]bool{}
	anchors := func(p string) map[string]bool {
		if a, ok := anchorsOf[p]; ok {
			return a
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		anchorsOf[p] = mdAnchors(string(b))
		return anchorsOf[p]
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := mdStripCode(string(b))
		var targets []string
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range mdRefDef.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		rel, _ := filepath.Rel(root, f)
		for _, target := range targets {
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
				if r, err := filepath.Rel(root, dest); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
					t.Errorf("%s: link %q leaves the repository", rel, target)
					continue
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: no such file in the repository", rel, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !anchors(dest)[anchor] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", rel, target, filepath.Base(dest), anchor)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links found in %d files: the parser misses links", checked, len(files))
	}
}

// TestDocsLinksParser checks the link and anchor parsing on known input, so
// that a parser finding nothing cannot pass TestDocsLinks.
func TestDocsLinksParser(t *testing.T) {
	text := "# Top\n## The head's records (series/record.go)\n## Top\n```sh\n# not a heading [x](nope.md)\n```\n" +
		"see [a](a.md), ![img](b.png \"t\"), `[c](code.md)` and [d](<d.md>)\n[ref]: ../r.md#x\n"
	var got []string
	s := mdStripCode(text)
	for _, m := range mdLink.FindAllStringSubmatch(s, -1) {
		got = append(got, m[1])
	}
	for _, m := range mdRefDef.FindAllStringSubmatch(s, -1) {
		got = append(got, m[1])
	}
	if want := "a.md b.png d.md ../r.md#x"; strings.Join(got, " ") != want {
		t.Errorf("links %q, want %s", got, want)
	}
	a := mdAnchors(text)
	for _, want := range []string{"top", "the-heads-records-seriesrecordgo", "top-1"} {
		if !a[want] {
			t.Errorf("anchor %q missing from %v", want, a)
		}
	}
	if a["not-a-heading-xnopemd"] || len(a) != 3 {
		t.Errorf("anchors %v, want exactly top, the-heads-records-seriesrecordgo, top-1", a)
	}
}
