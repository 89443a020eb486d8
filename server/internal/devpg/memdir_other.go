//go:build !linux

package devpg

// memDir finds no memory-backed directory outside Linux; InMemory
// clusters then live in os.TempDir().
func memDir() string { return "" }
