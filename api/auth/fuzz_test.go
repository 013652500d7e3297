package auth

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadAuth feeds the auth configuration parser any file: it loads or
// says what is wrong, never panics, and a loaded token always has scopes and a hash.
func FuzzLoadAuth(f *testing.F) {
	f.Add([]byte("users: {}\ntokens:\n  - {name: a, sha256: " + sha("x") + ", scopes: [read, write]}\n"))
	f.Add([]byte("tokens:\n  - name: b\n    bcrypt: $2y$04$abcdefghijklmnopqrstuu5Gn1vXrT3c4o9YHCMdhvZQUqa7JY6bO\n    scopes: [admin]\n"))
	f.Add([]byte("tokens: [{name: c, sha256: zz, scopes: [x]}]"))
	f.Add([]byte("users: {u: [read]}"))
	f.Add([]byte("{"))
	dir := f.TempDir()
	p := filepath.Join(dir, "auth.yml")
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := load("", p)
		if err != nil {
			return
		}
		for _, tk := range st.tokens {
			if tk.scopes == 0 || (tk.sha == nil) == (tk.bcrypt == nil) || tk.name == "" {
				t.Fatalf("loaded a bad token %+v from %q", tk, b)
			}
		}
		if len(st.users) != 0 {
			t.Fatalf("users without a web configuration from %q", b)
		}
	})
}
