package expansion

import "testing"

func TestExpand(t *testing.T) {
	lookup := Lookup(map[string]string{"A": "a", "B": "$(A)", "EMPTY": "", "DOLLAR": "$"}, map[string]string{"A": "shadowed", "SVC": "s"})
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(A)z", "xayaz"},
		{"$(SVC)", "s"},              // the second map
		{"$(B)", "$(A)"},             // a value is not expanded again
		{"$(UNKNOWN)", "$(UNKNOWN)"}, // left as written
		{"$(EMPTY)", ""},             // known, empty
		{"$$(A)", "$(A)"},            // escaped
		{"$$$(A)", "$a"},             // escape then reference
		{"$$$$", "$$"},               // two escapes
		{"$", "$"},                   // a lone $ at the end
		{"a$", "a$"},                 // ... after text
		{"$x", "$x"},                 // not a reference
		{"$(A", "$(A"},               // unclosed
		{"$(A$(A)", "$(A$(A)"},       // the name is "A$(A" (up to the first ')'): unknown
		{"$(", "$("},                 // unclosed, empty
		{"$()", "$()"},               // empty name: unknown
		{"$(DOLLAR)(A)", "$(A)"},     // the value's $ starts nothing
		{"héllo $(A) wörld", "héllo a wörld"}, // multi-byte text around
		{"$é", "$é"}, // $ before a multi-byte rune
		{"$(A)$(B)$(UNKNOWN)$$", "a$(A)$(UNKNOWN)$"},
	} {
		if got := Expand(tc.in, lookup); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
