package converge

// traceID is the trace id of a W3C traceparent ("00-<trace id>-<span
// id>-<flags>"), or "" when tp is not one: failure log lines carry it so a
// log line leads to its trace.
func traceID(tp string) string {
	if len(tp) != 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' {
		return ""
	}
	id := tp[3:35]
	zero := true
	for _, c := range id {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		default:
			return ""
		}
		if c != '0' {
			zero = false
		}
	}
	if zero {
		return ""
	}
	return id
}
