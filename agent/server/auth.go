package server

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// withAuth authenticates and authorizes every request as the kubelet does:
// no identity is 401, an identity the Authorizer does not allow the
// request's verb on the nodes subresource of the path is 403.
func (s *Server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := s.opts.Authenticator.AuthenticateRequest(r)
		if err != nil {
			s.log.V(2).Info("authentication failed", "path", r.URL.Path, "err", err.Error())
		}
		if err != nil || !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		// The credentials were for the node, not for what it proxies to.
		r.Header.Del("Authorization")
		attrs, ok := RequestAttributes(resp.User, r, s.opts.NodeName)
		if !ok {
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, method=%s): the node serves no such verb", resp.User.GetName(), r.Method), http.StatusForbidden)
			return
		}
		decision, reason, err := s.opts.Authorizer.Authorize(r.Context(), attrs)
		if err != nil {
			s.log.Error(err, "authorization failed", "user", resp.User.GetName(), "verb", attrs.GetVerb(), "subresource", attrs.GetSubresource())
			http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
				resp.User.GetName(), attrs.GetVerb(), attrs.GetResource(), attrs.GetSubresource()), http.StatusInternalServerError)
			return
		}
		if decision != authorizer.DecisionAllow {
			s.log.V(4).Info("forbidden", "user", resp.User.GetName(), "verb", attrs.GetVerb(), "subresource", attrs.GetSubresource(), "reason", reason)
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource=%s)",
				resp.User.GetName(), attrs.GetVerb(), attrs.GetResource(), attrs.GetSubresource()), http.StatusForbidden)
			return
		}
		r = r.WithContext(request.WithUser(r.Context(), resp.User))
		next.ServeHTTP(w, r)
	})
}

// RequestAttributes are what the kubelet asks its authorizer about a
// request of u: the verb from the HTTP method (GET and HEAD get, POST
// create, PUT update, PATCH patch, DELETE delete), the nodes resource named
// nodeName, and the subresource from the path: stats under /stats, metrics
// under /metrics, log under /logs, proxy for everything else (/pods,
// /containerLogs, /exec, /attach, /portForward, /run, /healthz). ok is
// false for another method.
func RequestAttributes(u user.Info, r *http.Request, nodeName string) (authorizer.AttributesRecord, bool) {
	var verb string
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		verb = "get"
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		return authorizer.AttributesRecord{}, false
	}
	sub := "proxy"
	switch p := r.URL.Path; {
	case isSubpath(p, "/stats"):
		sub = "stats"
	case isSubpath(p, "/metrics"):
		sub = "metrics"
	case isSubpath(p, "/logs"):
		sub = "log"
	}
	return authorizer.AttributesRecord{
		User:            u,
		Verb:            verb,
		Namespace:       "",
		APIGroup:        "",
		APIVersion:      "v1",
		Resource:        "nodes",
		Subresource:     sub,
		Name:            nodeName,
		ResourceRequest: true,
		Path:            r.URL.Path,
	}, true
}

// isSubpath: p is root or under it.
func isSubpath(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/")
}
