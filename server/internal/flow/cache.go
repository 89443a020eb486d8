package flow

import (
	"container/list"
	"sync"
)

// Cache holds compiled flows, so the few flows a server evaluates again
// and again are compiled once. It keeps at most its size of them,
// dropping the least recently used, and remembers compile errors too.
// It is safe for concurrent use. Make one with NewCache.
type Cache struct {
	size  int
	mu    sync.Mutex
	order *list.List // of *cacheEntry, most recently used first
	items map[cacheKey]*list.Element
}

type cacheKey struct {
	from, expr, to string
}

type cacheEntry struct {
	key  cacheKey
	prog *Program
	err  error
}

// NewCache returns a cache that keeps at most size compiled flows (at
// least one).
func NewCache(size int) *Cache {
	size = max(size, 1)
	return &Cache{size: size, order: list.New(), items: make(map[cacheKey]*list.Element, size)}
}

// Compile returns the cached result of Compile(from, expr, to), compiling
// it on first use.
func (c *Cache) Compile(from, expr, to string) (*Program, error) {
	key := cacheKey{from, expr, to}
	if e, ok := c.lookup(key); ok {
		return e.prog, e.err
	}
	// Compile outside the lock: it takes far longer than a lookup, and
	// other flows should not wait for it.
	prog, err := Compile(from, expr, to)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok { // compiled concurrently: keep the first
		c.order.MoveToFront(el)
		e := el.Value.(*cacheEntry)
		return e.prog, e.err
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, prog: prog, err: err})
	for c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*cacheEntry).key)
	}
	return prog, err
}

func (c *Cache) lookup(key cacheKey) (*cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry), true
}
