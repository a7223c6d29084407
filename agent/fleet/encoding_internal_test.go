package fleet

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The fleet's transport asks for uncompressed responses even where Go's
// transport would ask for gzip by itself (a plain-HTTP server), and keeps
// an encoding the caller chose.
func TestIdentityEncoding(t *testing.T) {
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Accept-Encoding")
	}))
	defer srv.Close()
	c := &http.Client{Transport: identityEncoding{http.DefaultTransport}}
	for _, asked := range []string{"", "br"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if asked != "" {
			req.Header.Set("Accept-Encoding", asked)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := asked
		if want == "" {
			want = "identity"
		}
		if enc := <-got; enc != want {
			t.Errorf("asked %q: the server saw Accept-Encoding %q, want %q", asked, enc, want)
		}
		if req.Header.Get("Accept-Encoding") != asked {
			t.Errorf("the caller's request was changed: %q", req.Header.Get("Accept-Encoding"))
		}
	}
}
