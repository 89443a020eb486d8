package readroute

import (
	"fmt"
	"strconv"

	"github.com/convergehq/converge/sdk-go/client"
)

// Header carries read-your-writes tokens, on write responses and on the
// reads that follow them.
const Header = client.ReadAfterHeader

// tokenWidth is a token's fixed length: a WAL position as 16 hex digits,
// so that tokens order as strings in the order of their positions, which
// is what clients compare (client.ReadAfterHeader).
const tokenWidth = 16

// Token encodes a primary's WAL position as a read-your-writes token.
func Token(lsn uint64) string { return fmt.Sprintf("%016x", lsn) }

// ParseToken decodes a token made by Token; "" is no token, position 0.
func ParseToken(tok string) (uint64, error) {
	if tok == "" {
		return 0, nil
	}
	if len(tok) != tokenWidth {
		return 0, fmt.Errorf("%s %q: not a token this server issued (want %d hex digits)", Header, clip(tok), tokenWidth)
	}
	for _, c := range tok {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0, fmt.Errorf("%s %q: not a token this server issued (want %d lower-case hex digits)", Header, clip(tok), tokenWidth)
		}
	}
	lsn, err := strconv.ParseUint(tok, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q: not a token this server issued: %v", Header, clip(tok), err)
	}
	return lsn, nil
}

// clip keeps a rejected header short in the error that quotes it.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
