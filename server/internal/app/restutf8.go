package app

import (
	"encoding/json"
	"net/http"
	"net/url"
	"unicode/utf8"
)

// requireUTF8 refuses a REST request whose path or query, once
// percent-decoded, is not UTF-8. Protobuf strings must be UTF-8, and the
// transcoder would only find out when it re-encodes the request for the
// service, answering 500 for what is the client's mistake.
func requireUTF8(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		where := ""
		if !utf8.ValidString(r.URL.Path) {
			where = "request path"
		} else if q, err := url.ParseQuery(r.URL.RawQuery); err == nil {
			for k, vs := range q {
				if !utf8.ValidString(k) {
					where = "query parameter name"
					break
				}
				for _, v := range vs {
					if !utf8.ValidString(v) {
						where = "query parameter " + k
					}
				}
			}
		}
		if where == "" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		// The shape of the transcoder's own errors: a google.rpc.Status
		// with code 3 (INVALID_ARGUMENT).
		_ = json.NewEncoder(w).Encode(map[string]any{"code": 3, "message": where + ": not valid UTF-8 once percent-decoded", "details": []any{}})
	})
}
