// Package ui serves the web UI: static HTML, CSS and ES modules embedded
// in the binary, with no build step, that call the REST API (/api/v1) from
// the browser with the browser's own credentials.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var files embed.FS

// static is the UI's file tree, rooted at its index.html.
var static = mustSub(files, "static")

func mustSub(f embed.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		// fs.Sub fails only on an invalid path, and dir is a constant.
		return f
	}
	return sub
}

// Handler returns the UI's handler. It answers GET and HEAD only. The
// UI's own routes (/, /resources/..., /kinds/..., /cluster) get index.html,
// so they survive a reload; a path naming an embedded file gets that file;
// anything else is 404.
func Handler() http.Handler {
	fileServer := http.FileServerFS(static)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the UI answers GET and HEAD only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if isRoute(name) {
			serveIndex(w, r)
			return
		}
		if !isFile(name) {
			// Not the UI's: a mistyped API path (or /metrics, which lives
			// on its own port) must not answer 200 with a page.
			http.NotFound(w, r)
			return
		}
		// Files change only with the binary; revalidate so an upgrade shows.
		w.Header().Set("Cache-Control", "no-cache")
		fileServer.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy admits only the UI's own scripts and styles and
// calls to its own origin: the UI renders API data, never runs it.
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'"

// routes are the first path segments of the UI's pages (see app.js).
var routes = map[string]bool{"": true, "resources": true, "kinds": true, "cluster": true}

func isRoute(name string) bool {
	first, _, _ := strings.Cut(name, "/")
	return routes[first]
}

func isFile(name string) bool {
	st, err := fs.Stat(static, name)
	return err == nil && !st.IsDir()
}

func serveIndex(w http.ResponseWriter, r *http.Request) {
	b, err := fs.ReadFile(static, "index.html")
	if err != nil {
		http.Error(w, "ui: index.html is missing from the build", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}
