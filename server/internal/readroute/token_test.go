package readroute

import (
	"strings"
	"testing"
)

func TestTokenRoundTripAndOrder(t *testing.T) {
	positions := []uint64{0, 1, 0x16b3748, 1 << 40, ^uint64(0)}
	prev := ""
	for _, p := range positions {
		tok := Token(p)
		got, err := ParseToken(tok)
		if err != nil || got != p {
			t.Fatalf("ParseToken(Token(%d)) = %d, %v", p, got, err)
		}
		if prev != "" && !(tok > prev) {
			t.Errorf("Token(%d) = %q does not order after %q", p, tok, prev)
		}
		prev = tok
	}
}

func TestParseTokenRejects(t *testing.T) {
	for _, tok := range []string{"x", "00000000016B3748", "0/16B3748", "000000000016b37480", " 00000000016b374", "-0000000016b3748"} {
		_, err := ParseToken(tok)
		if err == nil || !strings.Contains(err.Error(), Header) {
			t.Errorf("ParseToken(%q) = %v; want an error naming %s", tok, err, Header)
		}
	}
}

// FuzzParseToken: no input panics, and whatever parses prints back as
// itself.
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"", "0000000000000000", "00000000016b3748", "ffffffffffffffff", "zz", "0/16B3748"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lsn, err := ParseToken(s)
		if err == nil && s != "" && Token(lsn) != s {
			t.Fatalf("ParseToken(%q) = %d, which prints as %q", s, lsn, Token(lsn))
		}
	})
}

func TestRecordEnd(t *testing.T) {
	const block, seg = 8192, 16 << 20
	for _, c := range []struct{ insert, want uint64 }{
		{block*3 + 24, block * 3},        // past a page's short header
		{block*3 + 40, block*3 + 40},     // a record may end there
		{seg*2 + 40, seg * 2},            // past a segment's long header
		{seg*2 + 24, seg*2 + 24},         // inside the long header: not an insert position, left alone
		{block*5 + 1000, block*5 + 1000}, // mid-page
		{block * 5, block * 5},           // a page boundary itself
	} {
		if got := recordEnd(c.insert, block, seg); got != c.want {
			t.Errorf("recordEnd(%d) = %d; want %d", c.insert, got, c.want)
		}
	}
}
