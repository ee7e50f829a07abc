package mux_test

import (
	"fmt"
	"io"
	"net"

	"github.com/nrinet/nrinet/mux"
)

// Two ends of one socket, each with the two NRI logical connections.
func Example() {
	left, right := net.Pipe()
	open := func(c net.Conn) (*mux.Mux, net.Conn) {
		m, err := mux.New(c)
		if err != nil {
			panic(err)
		}
		svc, _ := m.Open(mux.PluginServiceConn)
		m.Open(mux.RuntimeServiceConn)
		m.Start()
		return m, svc
	}
	lm, l1 := open(left)
	rm, r1 := open(right)
	defer lm.Close()
	defer rm.Close()

	go l1.Write([]byte("ping"))
	buf := make([]byte, 4)
	io.ReadFull(r1, buf)
	fmt.Println(string(buf))
	// Output: ping
}
