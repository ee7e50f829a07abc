package netpol

import (
	"strings"
	"sync"

	"go4.org/netipx"
	networkingv1 "k8s.io/api/networking/v1"
)

// Cache keeps what compiling the policies' ipBlocks produced (the
// address set of a CIDR less its excepts) from one compile to the next,
// so that a program compiled again for a pod that starts does not redo
// the work of an ipBlock with thousands of excepts. An ipBlock's set is
// kept while the compiles that use a Cache meet it: those of one compile
// that are not met again by the next are dropped, so the Cache holds what
// the policies in force need and no more. The zero value is not usable:
// see [NewCache]. A Cache may be used by one compile at a time or by
// several; it is safe for concurrent use.
type Cache struct {
	mu sync.Mutex
	// blocks are the sets met by the last compile; used those met by
	// the current one, which replace blocks when it ends.
	blocks, used map[string]*netipx.IPSet
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{blocks: map[string]*netipx.IPSet{}, used: map[string]*netipx.IPSet{}}
}

// CompileMax is [CompileMax] with the ipBlocks' sets taken from c, and
// left in it for the next compile.
func (c *Cache) CompileMax(policies []*networkingv1.NetworkPolicy, namespaces []Namespace, pods []Pod, max int) (*Program, error) {
	p, err := compileMax(c, policies, namespaces, pods, max)
	c.mu.Lock()
	c.blocks, c.used = c.used, map[string]*netipx.IPSet{}
	c.mu.Unlock()
	return p, err
}

// Len is how many ipBlocks' sets c holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.blocks)
}

// block returns the set of the ipBlock of cidr less excepts: the one the
// cache holds, or build's, which it then keeps. A nil Cache builds every
// time. Errors are not kept.
func (c *Cache) block(cidr string, excepts []string, build func() (*netipx.IPSet, error)) (*netipx.IPSet, error) {
	if c == nil {
		return build()
	}
	var k strings.Builder
	k.WriteString(cidr)
	for _, e := range excepts {
		k.WriteByte(0)
		k.WriteString(e)
	}
	key := k.String()
	c.mu.Lock()
	s, ok := c.used[key]
	if !ok {
		s, ok = c.blocks[key]
	}
	c.mu.Unlock()
	if !ok {
		var err error
		if s, err = build(); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	c.used[key] = s
	c.mu.Unlock()
	return s, nil
}
