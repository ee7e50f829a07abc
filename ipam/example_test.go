package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nrinet/nrinet/ipam"
)

// openExample opens a throwaway store; examples cannot use t.TempDir.
func openExample(cfg ipam.Config) (*ipam.Allocator, func()) {
	dir, err := os.MkdirTemp("", "ipam-example")
	if err != nil {
		panic(err)
	}
	a, err := ipam.Open(filepath.Join(dir, "ipam.db"), cfg)
	if err != nil {
		panic(err)
	}
	return a, func() { a.Close(); os.RemoveAll(dir) }
}

func ExampleOpen() {
	cfg, err := ipam.ParseConfig([]string{"198.18.0.0/24", "2001:db8::/64"}, nil, []string{"198.18.0.254"})
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "ipam-example")
	defer os.RemoveAll(dir)
	a, err := ipam.Open(filepath.Join(dir, "ipam.db"), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	fmt.Println("subnets: ", a.Subnets())
	fmt.Println("gateways:", a.Gateways())
	// Output:
	// subnets:  [198.18.0.0/24 2001:db8::/64]
	// gateways: [198.18.0.254/24 2001:db8::1/64]
}

func ExampleAllocator_Allocate() {
	a, done := openExample(cfg("198.18.0.0/24", "2001:db8::/64"))
	defer done()
	ctx := context.Background()

	pod1, _ := a.Allocate(ctx, "pod-1")
	fmt.Println("pod-1:", pod1)
	again, _ := a.Allocate(ctx, "pod-1") // a retried ADD
	fmt.Println("pod-1:", again)
	pod2, _ := a.Allocate(ctx, "pod-2")
	fmt.Println("pod-2:", pod2)

	// pod-1's addresses are not reused right away.
	_ = a.Release(ctx, "pod-1")
	pod3, _ := a.Allocate(ctx, "pod-3")
	fmt.Println("pod-3:", pod3)
	// Output:
	// pod-1: [198.18.0.2/24 2001:db8::2/64]
	// pod-1: [198.18.0.2/24 2001:db8::2/64]
	// pod-2: [198.18.0.3/24 2001:db8::3/64]
	// pod-3: [198.18.0.4/24 2001:db8::4/64]
}

func ExampleAllocator_Allocate_exhausted() {
	a, done := openExample(cfg("198.18.0.0/30"))
	defer done()
	ctx := context.Background()

	fmt.Println(a.Allocate(ctx, "pod-1"))
	_, err := a.Allocate(ctx, "pod-2")
	fmt.Println(err, errors.Is(err, ipam.ErrExhausted))
	// Output:
	// [198.18.0.2/30] <nil>
	// ipam: no free address in 198.18.0.0/30 true
}

func ExampleAllocator_Release() {
	a, done := openExample(cfg("198.18.0.0/24"))
	defer done()
	ctx := context.Background()

	_, _ = a.Allocate(ctx, "pod-1")
	fmt.Println(a.Release(ctx, "pod-1"))
	fmt.Println(a.Release(ctx, "pod-1")) // already gone: not an error
	_, ok, _ := a.Lookup("pod-1")
	fmt.Println(ok)
	// Output:
	// <nil>
	// <nil>
	// false
}

func ExampleAllocator_ReleaseExcept() {
	a, done := openExample(cfg("198.18.0.0/24"))
	defer done()
	ctx := context.Background()
	for _, pod := range []string{"pod-a", "pod-b", "pod-c"} {
		_, _ = a.Allocate(ctx, pod)
	}

	// At plugin start, keep only the pods the runtime still knows.
	running := map[string]bool{"pod-b": true}
	released, err := a.ReleaseExcept(ctx, func(owner string) bool { return running[owner] })
	fmt.Println(released, err)
	fmt.Println(a.Owners())
	// Output:
	// [pod-a pod-c] <nil>
	// [pod-b] <nil>
}

func ExampleConfig_Validate() {
	cfg := cfg("198.18.0.0/24", "198.18.0.128/25")
	fmt.Println(cfg.Validate())
	// Output:
	// ipam: invalid config: subnets 198.18.0.0/24 and 198.18.0.128/25 overlap
}

func ExampleParseConfig() {
	cfg, err := ipam.ParseConfig([]string{"198.18.0.0/24"}, []string{"198.18.0.2", "198.18.0.128/25"}, nil)
	fmt.Println(cfg.Subnets, cfg.Exclude, err)

	_, err = ipam.ParseConfig([]string{"198.18.0.0/33"}, nil, nil)
	fmt.Println(err)
	// Output:
	// [198.18.0.0/24] [198.18.0.2/32 198.18.0.128/25] <nil>
	// ipam: invalid config: subnets[0] "198.18.0.0/33": prefix length out of range
}
