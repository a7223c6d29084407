package expansion

import "strings"

// Expand replaces each $(VAR) reference in s by lookup(VAR), with the
// kubelet's rules (its fork of os.Expand): $$ is an escaped $ and gives a
// single $; a reference lookup does not know is left as written,
// "$(VAR)"; an unclosed "$(" and a $ before any other character are kept
// as they are; $() is an unknown (empty) name. A reference is never
// expanded twice: the value lookup returns is taken as it is.
func Expand(s string, lookup func(name string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	checkpoint := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			continue
		}
		b.WriteString(s[checkpoint:i])
		switch rest := s[i+1:]; rest[0] {
		case '$': // escaped: one $
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(rest, ')')
			if end < 0 { // unclosed: "$(" as written, scanning goes on after it
				b.WriteString("$(")
				i++
				break
			}
			name := rest[1:end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += end + 1
		default: // not a reference: the $ and the next byte as written
			b.WriteByte('$')
			b.WriteByte(rest[0])
			i++
		}
		checkpoint = i + 1
	}
	b.WriteString(s[checkpoint:])
	return b.String()
}

// Lookup looks names up in maps, the first map that has the name wins.
func Lookup(maps ...map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v, true
			}
		}
		return "", false
	}
}
