package main

import (
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]+`)

// pascal turns "aws.vpc-peering" into "AwsVpcPeering", as the TypeScript
// generator does, so a kind's types have the same names in both
// languages. A name that would start with a digit gets a "T" in front.
func pascal(s string) string {
	var b strings.Builder
	for _, w := range nonAlnum.Split(s, -1) {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	out := b.String()
	switch {
	case out == "":
		return "T"
	case out[0] >= '0' && out[0] <= '9':
		return "T" + out
	}
	return out
}

// initialisms are the words Go spells in capitals inside identifiers.
var initialisms = map[string]bool{
	"ACL": true, "API": true, "ARN": true, "AWS": true, "GCP": true, "CIDR": true, "CPU": true, "CSS": true, "DNS": true,
	"FQDN": true, "GID": true, "GUID": true, "HTML": true, "HTTP": true, "HTTPS": true, "ID": true,
	"IP": true, "JSON": true, "JWT": true, "OS": true, "QPS": true, "RAM": true, "RPC": true,
	"SHA": true, "SLA": true, "SQL": true, "SSH": true, "TCP": true, "TLS": true, "TTL": true,
	"UDP": true, "UI": true, "UID": true, "URI": true, "URL": true, "UUID": true, "VM": true,
	"VPC": true, "XML": true,
}

// fieldName turns a JSON property name into an exported Go identifier:
// "account_id" → "AccountID", "vpcCidr" → "VpcCidr", "3d" → "T3d".
func fieldName(s string) string {
	var b strings.Builder
	for _, w := range splitWords(s) {
		if up := strings.ToUpper(w); initialisms[up] {
			b.WriteString(up)
		} else {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	out := b.String()
	switch {
	case out == "":
		return "Empty"
	case out[0] >= '0' && out[0] <= '9':
		return "T" + out
	}
	return out
}

// splitWords splits at non-alphanumerics and before an upper-case letter
// that follows a lower-case one ("vpcCidr" → "vpc", "Cidr").
func splitWords(s string) []string {
	var words []string
	for _, part := range nonAlnum.Split(s, -1) {
		start := 0
		for i := 1; i < len(part); i++ {
			if unicode.IsUpper(rune(part[i])) && unicode.IsLower(rune(part[i-1])) {
				words = append(words, part[start:i])
				start = i
			}
		}
		if part != "" {
			words = append(words, part[start:])
		}
	}
	return words
}

// names hands out package-level identifiers, each once.
type names map[string]bool

// claim takes name, or name2, name3, … when it is taken.
func (n names) claim(name string) string {
	if !n[name] && token.IsIdentifier(name) {
		n[name] = true
		return name
	}
	for i := 2; ; i++ {
		if c := name + strconv.Itoa(i); !n[c] {
			n[c] = true
			return c
		}
	}
}

// exact takes name or reports that it is taken.
func (n names) exact(name string) bool {
	if n[name] {
		return false
	}
	n[name] = true
	return true
}
